"""Errors: every failed call raises a BureauError carrying the API's answer."""

from __future__ import annotations


class BureauError(Exception):
    """A call bureau refused or could not do.

    ``status`` is the HTTP status, ``code`` the API's error code (``not_found``,
    ``invalid``, ``invalid_state`` …), ``message`` its sentence for people,
    ``field`` the request field at fault (for ``invalid``) and ``state`` the
    desktop's state when that was the reason.
    """

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None):
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.state = state
        self.retry_after = retry_after


class BadRequest(BureauError):
    """400: the request could not be read (bad JSON, unknown field)."""


class Unauthorized(BureauError):
    """401: no token, or one that is wrong, expired or revoked."""


class Forbidden(BureauError):
    """403: the token may not do this (scope, another owner, quota)."""


class NotFound(BureauError):
    """404: no such desktop (or not yours), file, snapshot, …"""


class Conflict(BureauError):
    """409: not now: the desktop's state forbids it, it is busy, a name is taken."""


class NotReady(Conflict):
    """409 ``not_ready``: the desktop runs but is not ready for the call yet
    (exec, files, computer use, the clipboard, terminals). ``up`` says how far
    it has come (``booting``, ``agent``), ``waiting_for`` what it still waits
    for (``agent``, ``user``, ``cloud-init``, ``session``); ``Desktop.wait_ready()``
    waits for it."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None,
                 up: str | None = None, waiting_for: str | None = None):
        super().__init__(status, code, message, field, state, retry_after)
        self.up = up
        self.waiting_for = waiting_for


class Invalid(BureauError):
    """422: a field's value is wrong; ``field`` names it."""


class NoEffect(Invalid):
    """422 ``no_effect``: computer use with ``expect="change"`` stopped at an
    input action after which the screen did not change; ``index`` names it
    (0 for a single action). The actions before it ran, those after it not."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None, index: int | None = None):
        super().__init__(status, code, message, field, state, retry_after)
        self.index = index


class CannotVerify(Conflict):
    """409 ``cannot_verify``: ``expect="change"`` was asked but bureau cannot
    watch this screen now (no live framebuffer); no action ran."""


class Gone(BureauError):
    """410 ``gone``: an accessibility node id whose element is no longer there
    (its window closed, its application ended); read the tree again."""


class HumanInControl(Conflict):
    """409 ``human_in_control``: a person has taken over the desktop's mouse
    and keyboard, so the agent's input call was refused (its reads keep
    working). ``person`` holds it ``since`` then; try again after
    ``retry_after`` seconds, or ask them (People.ask_help)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None,
                 holder: str | None = None, person: str | None = None, since: str | None = None):
        super().__init__(status, code, message, field, state, retry_after)
        self.holder = holder
        self.person = person
        self.since = since


class Denied(Forbidden):
    """403 ``denied``: a call the desktop's approval policy gates was denied
    by a person (``decided_by``) or by its timeout (``decided_by`` ""), with
    ``reason``; it did not run. ``request_id`` is the approval request."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None,
                 reason: str | None = None, request_id: str | None = None, decided_by: str | None = None):
        super().__init__(status, code, message, field, state, retry_after)
        self.reason = reason
        self.request_id = request_id
        self.decided_by = decided_by


class AlreadyDecided(Conflict):
    """409 ``already_decided``: the request was already answered or decided;
    ``request_status`` says how."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None, request_status: str | None = None):
        super().__init__(status, code, message, field, state, retry_after)
        self.request_status = request_status


class Expired(Conflict):
    """409 ``expired``: the request ran out of time before anyone answered
    or decided it; ``request_status`` says how it ended (``expired``, or
    ``denied`` for a gated approval nobody decided)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 state: str | None = None, retry_after: float | None = None, request_status: str | None = None):
        super().__init__(status, code, message, field, state, retry_after)
        self.request_status = request_status


class RateLimited(BureauError):
    """429: too many requests; ``retry_after`` says when to try again."""


class ServerError(BureauError):
    """5xx: bureau or the desktop failed; ``retry_after`` is set when it says."""


class Timeout(BureauError):
    """A wait helper gave up (the call itself did not fail)."""

    def __init__(self, message: str, state: str | None = None):
        super().__init__(0, "timeout", message, state=state)


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
              410: Gone, 422: Invalid, 429: RateLimited}


def error_for(status: int, body: dict | None, retry_after: float | None = None) -> BureauError:
    """The exception for an error answer (``{"error": {"code", "message", …}}``)."""
    e = (body or {}).get("error") if isinstance(body, dict) else None
    if not isinstance(e, dict):
        e = {"code": "http_%d" % status, "message": "HTTP %d" % status}
    if status == 409 and e.get("code") == "not_ready":
        return NotReady(status, "not_ready", e.get("message", ""), e.get("field"), e.get("state"), retry_after,
                        e.get("up"), e.get("waiting_for"))
    if status == 422 and e.get("code") == "no_effect":
        return NoEffect(status, "no_effect", e.get("message", ""), e.get("field"), e.get("state"), retry_after,
                        e.get("index"))
    if status == 409 and e.get("code") == "human_in_control":
        return HumanInControl(status, "human_in_control", e.get("message", ""), e.get("field"), e.get("state"),
                              retry_after, e.get("holder"), e.get("person"), e.get("since"))
    if status == 403 and e.get("code") == "denied":
        return Denied(status, "denied", e.get("message", ""), e.get("field"), e.get("state"), retry_after,
                      e.get("reason"), e.get("request_id"), e.get("decided_by"))
    if status == 409 and e.get("code") == "already_decided":
        return AlreadyDecided(status, "already_decided", e.get("message", ""), e.get("field"), e.get("state"),
                              retry_after, e.get("status"))
    if status == 409 and e.get("code") == "expired":
        return Expired(status, "expired", e.get("message", ""), e.get("field"), e.get("state"), retry_after,
                       e.get("status"))
    if status == 409 and e.get("code") == "cannot_verify":
        return CannotVerify(status, "cannot_verify", e.get("message", ""), e.get("field"), e.get("state"), retry_after)
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else BureauError)
    return cls(status, e.get("code", ""), e.get("message", ""), e.get("field"), e.get("state"), retry_after)


class WebhookVerificationError(Exception):
    """A webhook message whose signature does not verify (missing headers, no
    signature by the secret, a timestamp too old or in the future): do not
    trust it. Raised by ``bureau.webhooks.verify``; not a call's error."""
