import { parseNDJSON } from "./sse.js";
import type { Transport } from "./transport.js";

/**
 * The audit log: who made each state-changing call and console session, from where, to what, and how it ended
 * (docs/audit.md). `bureau.audit(filter)` reads a page, `bureau.auditAll(filter)` iterates over every page and
 * `bureau.auditExport(filter)` streams every matching entry (NDJSON). Owners see the entries where they acted or were
 * acted on; admins every entry.
 */

/** One audited call or console session. */
export interface AuditEntry {
  id: string;
  at: string;
  owner: string;
  subject_owner: string;
  token_id: string;
  token_name: string;
  person: string;
  client_ip: string;
  method: string;
  route: string;
  action: string;
  object_type: string;
  object_id: string;
  desktop_id: string;
  status: number;
  error_code: string;
  duration_ms: number;
  detail: string;
}

/** A page of entries, newest first; `next_cursor` ("" on the last page) asks for the next. */
export interface AuditPage {
  entries: AuditEntry[];
  next_cursor: string;
}

/** What to read: `action` is an action or its start (`desktop.`); `since`/`until` Dates or RFC 3339 text. */
export interface AuditFilter {
  owner?: string;
  actor?: string;
  desktop?: string;
  action?: string;
  outcome?: "ok" | "error";
  since?: Date | string;
  until?: Date | string;
}

function query(f: AuditFilter): Record<string, string | undefined> {
  const when = (t?: Date | string) => (t instanceof Date ? t.toISOString().replace(/\.\d{3}Z$/, "Z") : t);
  return { owner: f.owner, actor: f.actor, desktop: f.desktop, action: f.action, outcome: f.outcome, since: when(f.since), until: when(f.until) };
}

/** One page (`limit` entries, default 100, at most 1000), after `cursor` (the `next_cursor` of the page before). */
export async function auditPage(h: Transport, f: AuditFilter & { limit?: number; cursor?: string } = {}): Promise<AuditPage> {
  const out = await h.call<AuditPage>("listAudit", { query: { ...query(f), limit: f.limit, cursor: f.cursor || undefined } });
  return { entries: out.entries, next_cursor: out.next_cursor ?? "" };
}

/** Every matching entry, newest first, fetched a page (`limit`) at a time as the iteration goes. */
export async function* auditAll(h: Transport, f: AuditFilter & { limit?: number } = {}): AsyncGenerator<AuditEntry> {
  let cursor: string | undefined;
  for (;;) {
    const p = await auditPage(h, { ...f, cursor });
    yield* p.entries;
    if (!p.next_cursor) return;
    cursor = p.next_cursor;
  }
}

/** Every matching entry as the server streams it (NDJSON), in one request. */
export async function* auditExport(h: Transport, f: AuditFilter = {}, signal?: AbortSignal): AsyncGenerator<AuditEntry> {
  const r = await h.open("listAudit", { query: { ...query(f), format: "ndjson" }, headers: { Accept: "application/x-ndjson" }, signal });
  yield* parseNDJSON<AuditEntry>(r.body);
}
