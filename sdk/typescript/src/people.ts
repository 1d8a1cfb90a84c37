import { TimeoutError } from "./errors.js";
import type * as m from "./models.js";
import type { DesktopRef } from "./steps.js";
import type { Transport } from "./transport.js";

/** A request: its id, or a Request. */
export type RequestRef = string | { id: string };

const idOf = (x: DesktopRef | RequestRef) => (typeof x === "string" ? x : x.id);

/** Options of askHelp and requestApproval. */
export interface AskOptions {
  /** Attach a picture of the screen as it is now. */
  screenshot?: boolean;
  /** Wait up to this many seconds for the answer or decision (default 0: answer at once, pending). */
  waitS?: number;
  /** How long the request stays open, in seconds (help: default 3600, 10 to 86400). */
  timeoutS?: number;
  signal?: AbortSignal;
}

/**
 * The longest one long-poll for a decision is asked to wait, in seconds (the API allows 900): under Node's fetch
 * (undici), whose headersTimeout gives up on an answer after 300 s. Longer waits are made of several.
 */
const WAIT_SLICE_S = 240;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/**
 * People in the loop of each desktop an agent drives: who holds its mouse and keyboard (the agent, or a person who
 * took over: the agent's input then rejects with HumanInControlError), questions the agent asks a person (help
 * requests), actions that wait for a person's approval (approval requests, by the desktop's approval policy: a gated
 * call a person denied rejects with DeniedError) and that policy. docs/people.md has the whole story.
 */
export class People {
  /** The least time between two polls, in ms: a server that answers before its time is not asked in a busy loop. */
  pace = 1000;

  constructor(private readonly h: Transport) {}

  /** Who holds the desktop's input now (`holder` "agent" or "person"; `until` it goes back by itself) and who is watching (`viewers`). */
  control(desktop: DesktopRef): Promise<m.ControlView> {
    return this.h.call("getControl", { params: { id: idOf(desktop) } });
  }

  /**
   * Takes the desktop's mouse and keyboard for a person (`name`: who, default the token's owner): the agent's input
   * calls then reject with HumanInControlError until releaseControl, or until `idleTimeoutS` (default 600, 1 to 28800)
   * pass without the person's input. Taking over from another person is allowed. 403 for desktop-scoped and
   * computer-only tokens (an agent's).
   */
  takeControl(desktop: DesktopRef, o: { name?: string; idleTimeoutS?: number } = {}): Promise<m.ControlView> {
    const json: Record<string, unknown> = {};
    if (o.name !== undefined) json.name = o.name;
    if (o.idleTimeoutS !== undefined) json.idle_timeout_s = o.idleTimeoutS;
    return this.h.call("takeControl", { params: { id: idOf(desktop) }, json });
  }

  /** Hands the desktop's input back to the agent (a no-op when it has it). */
  releaseControl(desktop: DesktopRef): Promise<m.ControlView> {
    return this.h.call("releaseControl", { params: { id: idOf(desktop) } });
  }

  /**
   * Asks a person a question (1 to 2000 characters; `choices`: up to 10 distinct answers to pick from). Waits up to
   * `waitS` seconds for the answer: the Request comes back "answered" (`answer`) or still "pending" (waitRequest waits
   * on; getRequest looks again).
   */
  askHelp(desktop: DesktopRef, question: string, o: AskOptions & { choices?: string[] } = {}): Promise<m.Request> {
    const json: Record<string, unknown> = { question };
    if (o.choices !== undefined) json.choices = [...o.choices];
    const began = this.prepare(json, o);
    return this.waitOn(desktop, began, o, this.h.call<m.Request>("askHelp", { params: { id: idOf(desktop) }, json, signal: o.signal }));
  }

  /**
   * Asks a person to approve a step of the agent's own before it takes it (`action`: what, in words; `detail`:
   * anything that helps them decide). Waits up to `waitS` seconds for the decision: the Request comes back "approved",
   * "denied" (`reason`, `decided_by`) or still "pending". Go ahead only on "approved".
   */
  requestApproval(desktop: DesktopRef, action: string, o: AskOptions & { detail?: unknown } = {}): Promise<m.Request> {
    const json: Record<string, unknown> = { action };
    if (o.detail !== undefined) json.detail = o.detail;
    const began = this.prepare(json, o);
    return this.waitOn(desktop, began, o, this.h.call<m.Request>("requestApproval", { params: { id: idOf(desktop) }, json, signal: o.signal }));
  }

  /** Puts the options in a request's body (the server waiting a slice at most) and says when the wait began. */
  private prepare(json: Record<string, unknown>, o: AskOptions): number {
    const first = Math.floor(Math.max(0, Math.min(o.waitS ?? 0, WAIT_SLICE_S)));
    if (o.screenshot) json.screenshot = true;
    if (first) json.wait_s = first;
    if (o.timeoutS !== undefined) json.timeout_s = o.timeoutS;
    return Date.now();
  }

  /** The request made, waited on until it is decided or `waitS` seconds passed since began. */
  private async waitOn(desktop: DesktopRef, began: number, o: AskOptions, made: Promise<m.Request>): Promise<m.Request> {
    const r = await made;
    const left = (o.waitS ?? 0) * 1000 - (Date.now() - began);
    return r.status === "pending" && left >= 1000 ? this.poll(desktop, r.id, left, o.signal) : r;
  }

  /** A request as it is now, or, with `waitS`, once it is decided or `waitS` seconds passed (then still pending). */
  getRequest(desktop: DesktopRef, rid: RequestRef, o: { waitS?: number; signal?: AbortSignal } = {}): Promise<m.Request> {
    return this.poll(desktop, idOf(rid), (o.waitS ?? 0) * 1000, o.signal);
  }

  /**
   * Waits until a request is no longer pending (answered, approved, denied or expired) and resolves with it; the
   * server does the waiting, at most 240 s a call. Rejects with TimeoutError when `timeoutMs` (default 3 600 000)
   * passes first (the request stays open).
   */
  async waitRequest(desktop: DesktopRef, rid: RequestRef, o: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<m.Request> {
    const timeoutMs = o.timeoutMs ?? 3_600_000;
    const r = await this.poll(desktop, idOf(rid), timeoutMs, o.signal);
    if (r.status === "pending") throw new TimeoutError(`request ${r.id} is still pending after ${Math.round(timeoutMs / 1000)} s (it stays open until ${r.expires_at})`);
    return r;
  }

  /** GETs the request, long-polling in slices until it is decided or ms passed. */
  private async poll(desktop: DesktopRef, rid: string, ms: number, signal?: AbortSignal): Promise<m.Request> {
    const deadline = Date.now() + Math.max(0, ms);
    for (;;) {
      signal?.throwIfAborted();
      const n = Math.max(0, Math.min(Math.round((deadline - Date.now()) / 1000), WAIT_SLICE_S));
      const asked = Date.now();
      const r = await this.h.call<m.Request>("getRequest", { params: { id: idOf(desktop), rid }, query: { wait_s: n || undefined }, signal });
      if (r.status !== "pending" || Date.now() >= deadline - 500) return r;
      await sleep(Math.min(this.pace - (Date.now() - asked), deadline - Date.now()));
    }
  }

  /**
   * Requests, newest first (at most 200): the desktop's, or with no desktop those of all your desktops (every owner's
   * for an admin); `status` and `kind` narrow it.
   */
  async listRequests(desktop?: DesktopRef | null, o: { status?: m.Request["status"]; kind?: m.Request["kind"] } = {}): Promise<m.Request[]> {
    const query = { status: o.status, kind: o.kind };
    const r = desktop
      ? await this.h.call<{ requests: m.Request[] }>("listDesktopRequests", { params: { id: idOf(desktop) }, query })
      : await this.h.call<{ requests: m.Request[] }>("listRequests", { query });
    return r?.requests ?? [];
  }

  /**
   * Answers a help request with text, or `{ choice }` one of its choices (else 422, field choice). AlreadyDecidedError
   * when it was answered, ExpiredError when it ran out; 403 for the token that asked it.
   */
  answer(desktop: DesktopRef, rid: RequestRef, answer: string | { choice: string }): Promise<m.Request> {
    const json = typeof answer === "string" ? { answer } : { choice: answer.choice };
    return this.h.call("answerRequest", { params: { id: idOf(desktop), rid: idOf(rid) }, json });
  }

  /** Approves an approval request: a gated call waiting for it runs. */
  approve(desktop: DesktopRef, rid: RequestRef, reason = ""): Promise<m.Request> {
    return this.h.call("approveRequest", { params: { id: idOf(desktop), rid: idOf(rid) }, json: { reason } });
  }

  /** Denies an approval request: a gated call waiting for it does not run (its caller gets DeniedError with the reason). */
  deny(desktop: DesktopRef, rid: RequestRef, reason = ""): Promise<m.Request> {
    return this.h.call("denyRequest", { params: { id: idOf(desktop), rid: idOf(rid) }, json: { reason } });
  }

  /** The screen as it was when the request was made (PNG); 404 when it came without one. */
  async requestScreenshot(desktop: DesktopRef, rid: RequestRef): Promise<Uint8Array> {
    const r = await this.h.open("getRequestScreenshot", { params: { id: idOf(desktop), rid: idOf(rid) }, headers: { Accept: "image/png" } });
    return new Uint8Array(await r.arrayBuffer());
  }

  /** The desktop's approval policy (`{}` when none is set). */
  async approvalPolicy(desktop: DesktopRef): Promise<m.ApprovalPolicy> {
    return (await this.h.call<m.ApprovalPolicy>("getApprovalPolicy", { params: { id: idOf(desktop) } })) ?? {};
  }

  /**
   * Sets the desktop's approval policy whole: `exec` and `urls` (RE2 patterns), `file_delete`, `keys`, `clicks` and
   * `timeout_s` (default 300, 5 to 3600: how long a gated call waits before it is denied). 422 names the rule at fault
   * (`exec[1]`).
   */
  setApprovalPolicy(desktop: DesktopRef, policy: m.ApprovalPolicy): Promise<m.ApprovalPolicy> {
    return this.h.call("setApprovalPolicy", { params: { id: idOf(desktop) }, json: policy });
  }

  /** Removes the desktop's approval policy: nothing waits for approval. */
  async deleteApprovalPolicy(desktop: DesktopRef): Promise<void> {
    await this.h.call("deleteApprovalPolicy", { params: { id: idOf(desktop) } });
  }
}
