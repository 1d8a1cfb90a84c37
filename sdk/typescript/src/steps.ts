import { Desktop } from "./desktop.js";
import { errorFor } from "./errors.js";
import type * as m from "./models.js";
import { eventJSON, parseSSE } from "./sse.js";
import type { Transport } from "./transport.js";

/** A desktop: its id, or a Desktop handle. */
export type DesktopRef = string | { id: string };

const idOf = (d: DesktopRef) => (typeof d === "string" ? d : d.id);

/** The lists of an export that go on from page to page. */
const EXPORT_LISTS = ["steps", "messages", "input"] as const;

/**
 * Each desktop's step log: every computer-use action, exec, file change and
 * clipboard write made in it, with who made it, what was asked, what came of
 * it and thumbnails of the screen before and after.
 */
export class Steps {
  constructor(private readonly h: Transport) {}

  /**
   * The steps numbered above `after` (default 0) and below `before` (when set), oldest first: the oldest
   * `limit` of them (default 100, up to 1000), or with `newest: true` the newest (what was done last).
   */
  async list(desktop: DesktopRef, o: { after?: number; before?: number; limit?: number; newest?: boolean; signal?: AbortSignal } = {}): Promise<m.Step[]> {
    const query: Record<string, string | number | boolean> = { after: o.after ?? 0, limit: o.limit ?? 100 };
    if (o.newest) query.newest = true;
    if (o.before) query.before = o.before;
    const r = await this.h.call<{ steps: m.Step[] }>("listSteps", { params: { id: idOf(desktop) }, query, signal: o.signal });
    return r.steps ?? [];
  }

  /**
   * The steps numbered above `after`, then each new one as it is recorded, until you break or abort the signal.
   * Rejects with a 401 BureauError when the token stops being valid, a 500 one when the server ends the stream on an error.
   */
  async *follow(desktop: DesktopRef, o: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<m.Step> {
    const r = await this.h.open("listSteps", { params: { id: idOf(desktop) }, query: { after: o.after ?? 0, follow: true }, headers: { Accept: "text/event-stream" }, signal: o.signal });
    if (!r.body) return;
    for await (const ev of parseSSE(r.body)) {
      if (ev.event === "step") yield eventJSON<m.Step>(ev);
      else if (ev.event === "unauthorized" || ev.event === "error") {
        let body: Record<string, string>;
        try {
          body = eventJSON(ev);
        } catch {
          body = { message: ev.data };
        }
        throw errorFor(ev.event === "unauthorized" ? 401 : 500, { error: { code: ev.event, ...body } });
      }
    }
  }

  /** Step `seq`. */
  get(desktop: DesktopRef, seq: number): Promise<m.Step> {
    return this.h.call("getStep", { params: { id: idOf(desktop), seq } });
  }

  /** The screen just before or after step `seq`: a 320-pixel-wide JPEG (404 when the desktop was not running then). */
  async thumbnail(desktop: DesktopRef, seq: number, which: "before" | "after" = "after"): Promise<Uint8Array> {
    if (which !== "before" && which !== "after") throw new Error(`thumbnail ${JSON.stringify(which)}: want "before" or "after"`);
    const r = await this.h.open("getStepThumbnail", { params: { id: idOf(desktop), seq, which } });
    return new Uint8Array(await r.arrayBuffer());
  }

  /**
   * The step log for replay and evaluation, every page of it: format "bureau" (`steps`), "anthropic" (`tools` and
   * `messages` in Anthropic's Messages format) or "openai" (`tools` and Responses API `input` items); `images: false`
   * leaves the screens out.
   */
  async export(desktop: DesktopRef, o: { format?: "bureau" | "anthropic" | "openai"; images?: boolean; after?: number; signal?: AbortSignal } = {}): Promise<m.StepExport> {
    let after = o.after ?? 0;
    let doc: m.StepExport | undefined;
    const lists: Record<string, Record<string, unknown>[]> = {};
    for (;;) {
      const page = await this.h.call<m.StepExport>("exportSteps", {
        params: { id: idOf(desktop) },
        query: { format: o.format ?? "bureau", images: o.images === false ? false : undefined, after },
        signal: o.signal,
      });
      doc ??= page; // format, desktop_id and tools: the same on every page
      for (const k of EXPORT_LISTS) if (k in page) (lists[k] ??= []).push(...((page[k] ?? []) as Record<string, unknown>[]));
      const next = page.next_after;
      if (typeof next !== "number" || next <= after) break;
      after = next;
    }
    const { next_after: _, ...rest } = doc;
    return { ...rest, ...lists } as m.StepExport;
  }

  /**
   * Puts the desktop back as it was before step `seq`: reverts it to the step's checkpoint, or else the newest snapshot
   * taken before the step began (under way when this returns; waitUntil("running")); `note` says so when the step's own
   * checkpoint is gone. `holds_through_step` is the last step that snapshot holds: the steps after it are undone. 409
   * when no snapshot was taken before the step. A Desktop passed in gets the new record.
   */
  async revert(desktop: DesktopRef, seq: number): Promise<m.StepRevert> {
    const r = await this.h.call<m.StepRevert>("revertToStep", { params: { id: idOf(desktop), seq } });
    if (desktop instanceof Desktop) desktop.data = r.desktop;
    return r;
  }

  /** The desktop's automatic checkpoint policy (off unless set). */
  async checkpoints(desktop: DesktopRef): Promise<m.CheckpointPolicy> {
    return this.h.call<m.CheckpointPolicy>("getCheckpointPolicy", { params: { id: idOf(desktop) } });
  }

  /**
   * Sets the desktop's automatic checkpoint policy whole (what is left out takes its default: `{}` turns it off): a
   * snapshot just before the next step and then every `every_steps`-th, and before every step of a kind in `before`,
   * with the RAM when `memory`; the newest `keep` (1 to 50, default 5) automatic checkpoints are kept, older ones
   * deleted (never other snapshots). Each is recorded in its step's `checkpoint`, so `revert(desktop, seq)` goes back
   * to exactly before the step. 422 for an unknown kind or a keep out of range.
   */
  async setCheckpoints(desktop: DesktopRef, p: Partial<m.CheckpointPolicy>): Promise<m.CheckpointPolicy> {
    return this.h.call<m.CheckpointPolicy>("setCheckpointPolicy", { params: { id: idOf(desktop) }, json: p });
  }
}
