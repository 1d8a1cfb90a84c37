/** Every refusal of the API, with its code, message and the field at fault. */
export class BureauError extends Error {
  /** HTTP status (0 for a wait that ran out). */
  readonly status: number;
  /** The API's error code: `not_found`, `invalid`, `invalid_state`, … */
  readonly code: string;
  /** The request field at fault (for `invalid`). */
  readonly field?: string;
  /** The desktop's state, when that was the reason. */
  readonly state?: string;
  /** Seconds to wait before trying again (429, some 503). */
  readonly retryAfter?: number;

  constructor(status: number, code: string, message: string, field?: string, state?: string, retryAfter?: number) {
    super(message);
    this.name = "BureauError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.state = state;
    this.retryAfter = retryAfter;
  }
}

/** A wait helper gave up (the call itself did not fail). */
export class TimeoutError extends BureauError {
  constructor(message: string, state?: string) {
    super(0, "timeout", message, undefined, state);
    this.name = "TimeoutError";
  }
}

/**
 * 409 `not_ready`: the desktop runs but is not ready for the call yet (exec, files, computer use, the clipboard,
 * terminals). `desktop.waitReady()` waits for it.
 */
export class NotReadyError extends BureauError {
  /** How far it has come: `booting` (no agent answers yet) or `agent` (its setup or session is still coming). */
  readonly up?: string;
  /** What it still waits for: `agent`, `user`, `cloud-init` or `session`. */
  readonly waitingFor?: string;

  constructor(message: string, up?: string, waitingFor?: string, retryAfter?: number) {
    super(409, "not_ready", message, undefined, undefined, retryAfter);
    this.name = "NotReadyError";
    this.up = up;
    this.waitingFor = waitingFor;
  }
}

/**
 * 422 `no_effect`: computer use with `expect: "change"` stopped at an input action after which the screen did not
 * change. The actions before it ran, those after it did not.
 */
export class NoEffectError extends BureauError {
  /** The action after which the screen did not change (0 for a single action). */
  readonly index?: number;

  constructor(message: string, index?: number) {
    super(422, "no_effect", message);
    this.name = "NoEffectError";
    this.index = index;
  }
}

/** 409 `cannot_verify`: `expect: "change"` was asked but bureau cannot watch this screen now (no live framebuffer); no action ran. */
export class CannotVerifyError extends BureauError {
  constructor(message: string) {
    super(409, "cannot_verify", message);
    this.name = "CannotVerifyError";
  }
}

/** 410 `gone`: an accessibility node id whose element is no longer there (its window closed, its application ended); read the tree again. */
export class GoneError extends BureauError {
  constructor(message: string) {
    super(410, "gone", message);
    this.name = "GoneError";
  }
}

/**
 * 409 `human_in_control`: a person has taken over the desktop's mouse and keyboard, so the agent's input call was
 * refused (its reads keep working). Try again after `retryAfter` seconds, or ask them (`people.askHelp`).
 */
export class HumanInControlError extends BureauError {
  /** "person". */
  readonly holder?: string;
  /** Who holds it ("Dana"). */
  readonly person?: string;
  /** Since when. */
  readonly since?: string;

  constructor(message: string, holder?: string, person?: string, since?: string, retryAfter?: number) {
    super(409, "human_in_control", message, undefined, undefined, retryAfter);
    this.name = "HumanInControlError";
    this.holder = holder;
    this.person = person;
    this.since = since;
  }
}

/**
 * 403 `denied`: a call the desktop's approval policy gates was denied by a person (`decidedBy`) or by its timeout
 * (`decidedBy` ""), with `reason`; it did not run.
 */
export class DeniedError extends BureauError {
  readonly reason?: string;
  /** The approval request. */
  readonly requestId?: string;
  readonly decidedBy?: string;

  constructor(message: string, reason?: string, requestId?: string, decidedBy?: string) {
    super(403, "denied", message);
    this.name = "DeniedError";
    this.reason = reason;
    this.requestId = requestId;
    this.decidedBy = decidedBy;
  }
}

/** 409 `already_decided`: the request was already answered or decided; `requestStatus` says how. */
export class AlreadyDecidedError extends BureauError {
  readonly requestStatus?: string;

  constructor(message: string, requestStatus?: string) {
    super(409, "already_decided", message);
    this.name = "AlreadyDecidedError";
    this.requestStatus = requestStatus;
  }
}

/**
 * 409 `expired`: the request ran out of time before anyone answered or decided it; `requestStatus` says how it ended
 * (`expired`, or `denied` for a gated approval nobody decided).
 */
export class ExpiredError extends BureauError {
  readonly requestStatus?: string;

  constructor(message: string, requestStatus?: string) {
    super(409, "expired", message);
    this.name = "ExpiredError";
    this.requestStatus = requestStatus;
  }
}

/** The error for an API answer `{"error": {"code", "message", …}}`. */
export function errorFor(status: number, body: unknown, retryAfter?: number): BureauError {
  const e = (body as { error?: Record<string, string> } | null)?.error;
  if (!e || typeof e !== "object") {
    return new BureauError(status, `http_${status}`, typeof body === "string" ? body.slice(0, 500) : `HTTP ${status}`, undefined, undefined, retryAfter);
  }
  if (status === 409 && e.code === "not_ready") return new NotReadyError(e.message ?? "", e.up || undefined, e.waiting_for || undefined, retryAfter);
  if (status === 422 && e.code === "no_effect") {
    const index: unknown = (e as { index?: unknown }).index;
    return new NoEffectError(e.message ?? "", typeof index === "number" ? index : undefined);
  }
  const str = (k: string) => (typeof e[k] === "string" ? e[k] : undefined);
  if (status === 409 && e.code === "human_in_control") return new HumanInControlError(e.message ?? "", str("holder"), str("person"), str("since"), retryAfter);
  if (status === 403 && e.code === "denied") return new DeniedError(e.message ?? "", str("reason"), str("request_id"), str("decided_by"));
  if (status === 409 && e.code === "already_decided") return new AlreadyDecidedError(e.message ?? "", str("status"));
  if (status === 409 && e.code === "expired") return new ExpiredError(e.message ?? "", str("status"));
  if (status === 409 && e.code === "cannot_verify") return new CannotVerifyError(e.message ?? "");
  if (status === 410) return new GoneError(e.message ?? "");
  return new BureauError(status, e.code ?? "", e.message ?? "", e.field || undefined, e.state || undefined, retryAfter);
}

/**
 * A webhook message whose signature does not verify (a header missing, no signature by the secret, a timestamp too
 * old or in the future): do not trust it. Thrown by `verifyWebhook`; not a call's error.
 */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}
