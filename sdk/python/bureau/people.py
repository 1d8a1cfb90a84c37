"""People in the loop of a desktop an agent drives: who holds its mouse and
keyboard (the agent, or a person who took over), questions the agent asks a
person (help requests) and actions that wait for a person's approval
(approval gates, by a per-desktop policy). Reached as ``client.people``;
requests are ``models.Request``. docs/people.md has the whole story.

While a person holds control, the agent's input calls raise
``HumanInControl`` (its reads keep working); a gated call a person denied
(or nobody approved in time) raises ``Denied``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from . import models as m
from ._transport import Transport
from .errors import Timeout
from .steps import _params

if TYPE_CHECKING:
    from .desktop import Desktop

# The longest one long-poll for a decision is asked to wait, in seconds
# (the API allows 900; a shorter call is less likely to be cut off by a
# proxy on the way). Longer waits are made of several.
WAIT_SLICE = 300

# The least time between two polls: a server that answers before its time
# (one that does not wait) is not asked in a busy loop.
_PACE = 1.0


def _rid(rid: "str | m.Request") -> str:
    return rid if isinstance(rid, str) else rid.id


class People:
    """Control, help requests, approvals and the approval policy of each
    desktop (desktop: its id, or a Desktop; request_id: a request's id, or
    the Request)."""

    def __init__(self, http: Transport):
        self._h = http

    # Control: who holds the desktop's mouse and keyboard.

    def control(self, desktop: "str | Desktop") -> m.ControlView:
        """Who holds the desktop's input now (``holder`` "agent" or
        "person"; ``person``, ``since``, ``until`` when it goes back to the
        agent by itself) and who is watching (``viewers``)."""
        return m.ControlView.from_dict(self._h.call("getControl", _params(desktop)))

    def take_control(self, desktop: "str | Desktop", name: str | None = None,
                     idle_timeout_s: int | None = None) -> m.ControlView:
        """Takes the desktop's mouse and keyboard for a person (name: who,
        default the token's owner): the agent's input calls then raise
        HumanInControl until release_control, or until idle_timeout_s
        (default 600, 1 to 28800) pass without the person's input. Taking
        over from another person is allowed. Forbidden for desktop-scoped
        and computer-only tokens (an agent's)."""
        body = {k: v for k, v in (("name", name), ("idle_timeout_s", idle_timeout_s)) if v is not None}
        return m.ControlView.from_dict(self._h.call("takeControl", _params(desktop), json_body=body))

    def release_control(self, desktop: "str | Desktop") -> m.ControlView:
        """Hands the desktop's input back to the agent (a no-op when it has
        it)."""
        return m.ControlView.from_dict(self._h.call("releaseControl", _params(desktop)))

    # Help requests and approvals: an agent asks, a person answers.

    def ask_help(self, desktop: "str | Desktop", question: str, choices: list[str] | None = None,
                 screenshot: bool = False, wait_s: float = 0, timeout_s: int | None = None) -> m.Request:
        """Asks a person a question (1 to 2000 characters; choices: up to 10
        distinct answers to pick from; screenshot: attach the screen as it is
        now). The request stays open timeout_s (default 3600, 10 to 86400).
        Waits up to wait_s seconds for the answer: the Request comes back
        ``answered`` (``answer``) or still ``pending`` (wait_request waits
        on; get_request looks again)."""
        body: dict[str, Any] = {"question": question}
        if choices is not None:
            body["choices"] = list(choices)
        if screenshot:
            body["screenshot"] = True
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        return self._ask(desktop, body, wait_s, lambda t: self._h.call("askHelp", _params(desktop), json_body=body, timeout=t))

    def request_approval(self, desktop: "str | Desktop", action: str, detail: dict | None = None,
                         screenshot: bool = False, wait_s: float = 0, timeout_s: int | None = None) -> m.Request:
        """Asks a person to approve a step of the agent's own before it takes
        it (action: what, in words; detail: anything that helps them
        decide). Waits up to wait_s seconds for the decision: the Request
        comes back ``approved``, ``denied`` (``reason``, ``decided_by``) or
        still ``pending``. Go ahead only when ``r.approved``."""
        body: dict[str, Any] = {"action": action}
        if detail is not None:
            body["detail"] = detail
        if screenshot:
            body["screenshot"] = True
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        return self._ask(desktop, body, wait_s,
                         lambda t: self._h.call("requestApproval", _params(desktop), json_body=body, timeout=t))

    def _ask(self, desktop: "str | Desktop", body: dict, wait_s: float, post: Callable[[float | None], Any]) -> m.Request:
        """Makes a request (post, given its socket timeout), the server
        waiting for the decision up to WAIT_SLICE, then waits on until
        wait_s seconds passed."""
        began = time.monotonic()
        first = int(max(0, min(wait_s, WAIT_SLICE)))
        if first:
            body["wait_s"] = first
        r = m.Request.from_dict(post(first + 30 if first else None))
        left = wait_s - (time.monotonic() - began)
        if r.pending and left >= 1:
            r = self._poll(desktop, r.id, left)
        return r

    def get_request(self, desktop: "str | Desktop", request_id: "str | m.Request", wait_s: float = 0) -> m.Request:
        """A request as it is now, or, with wait_s, once it is decided or
        wait_s seconds passed (then still pending)."""
        return self._poll(desktop, _rid(request_id), wait_s)

    def wait_request(self, desktop: "str | Desktop", request_id: "str | m.Request", timeout: float = 3600) -> m.Request:
        """Waits until a request is no longer pending (answered, approved,
        denied or expired) and returns it; the server does the waiting, at
        most WAIT_SLICE seconds a call. Raises Timeout when timeout seconds
        pass first (the request stays open)."""
        rid = _rid(request_id)
        r = self._poll(desktop, rid, timeout)
        if r.pending:
            raise Timeout(f"request {rid} is still pending after {timeout:.0f} s (it stays open until {r.expires_at})")
        return r

    def _poll(self, desktop: "str | Desktop", rid: str, seconds: float) -> m.Request:
        """GET the request, long-polling in slices until it is decided or
        seconds passed."""
        deadline = time.monotonic() + max(0.0, seconds)
        while True:
            n = int(max(0, min(round(deadline - time.monotonic()), WAIT_SLICE)))
            asked = time.monotonic()
            r = m.Request.from_dict(self._h.call("getRequest", _params(desktop, rid=rid),
                                                 {"wait_s": n or None}, timeout=n + 30 if n else None))
            if not r.pending or time.monotonic() >= deadline - 0.5:
                return r
            time.sleep(max(0.0, min(_PACE - (time.monotonic() - asked), deadline - time.monotonic())))

    def list_requests(self, desktop: "str | Desktop | None" = None, status: str | None = None,
                      kind: str | None = None) -> list[m.Request]:
        """Requests, newest first (at most 200): the desktop's, or with no
        desktop those of all your desktops (every owner's for an admin).
        status ("pending", "answered", "approved", "denied", "expired") and
        kind ("help", "approval") narrow it."""
        q = {"status": status, "kind": kind}
        if desktop is None:
            out = self._h.call("listRequests", query=q)
        else:
            out = self._h.call("listDesktopRequests", _params(desktop), q)
        return [m.Request.from_dict(r) for r in (out or {}).get("requests") or []]

    def answer(self, desktop: "str | Desktop", request_id: "str | m.Request", answer: str | None = None,
               choice: str | None = None) -> m.Request:
        """Answers a help request: with text, or one of its choices (else
        Invalid, field choice). AlreadyDecided when it was answered, Expired
        when it ran out; Forbidden for the token that asked it."""
        if (answer is None) == (choice is None):
            raise ValueError("give answer or choice, one of them")
        body = {"answer": answer} if answer is not None else {"choice": choice}
        return m.Request.from_dict(self._h.call("answerRequest", _params(desktop, rid=_rid(request_id)), json_body=body))

    def approve(self, desktop: "str | Desktop", request_id: "str | m.Request", reason: str = "") -> m.Request:
        """Approves an approval request: a gated call waiting for it runs."""
        return m.Request.from_dict(self._h.call("approveRequest", _params(desktop, rid=_rid(request_id)),
                                                json_body={"reason": reason}))

    def deny(self, desktop: "str | Desktop", request_id: "str | m.Request", reason: str = "") -> m.Request:
        """Denies an approval request: a gated call waiting for it does not
        run (its caller gets Denied with reason)."""
        return m.Request.from_dict(self._h.call("denyRequest", _params(desktop, rid=_rid(request_id)),
                                                json_body={"reason": reason}))

    def request_screenshot(self, desktop: "str | Desktop", request_id: "str | m.Request") -> bytes:
        """The screen as it was when the request was made (PNG); NotFound
        when it came without one."""
        with self._h.open("getRequestScreenshot", _params(desktop, rid=_rid(request_id)),
                          headers={"Accept": "image/png"}) as r:
            return r.read()

    # The approval policy: which of the agent's calls wait for a person.

    def approval_policy(self, desktop: "str | Desktop") -> m.ApprovalPolicy:
        """The desktop's approval policy (all empty when none is set)."""
        return m.ApprovalPolicy.from_dict(self._h.call("getApprovalPolicy", _params(desktop)) or {})

    def set_approval_policy(self, desktop: "str | Desktop", policy: "dict | m.ApprovalPolicy") -> m.ApprovalPolicy:
        """Sets the desktop's approval policy whole: ``exec`` and ``urls``
        (RE2 patterns), ``file_delete``, ``keys`` ([{key, window_title}]),
        ``clicks`` ([{name, x, y, width, height, window_title}]) and
        ``timeout_s`` (default 300, 5 to 3600: how long a gated call waits
        before it is denied). Invalid names the rule at fault (``exec[1]``)."""
        if isinstance(policy, m.ApprovalPolicy):
            policy = {k: v for k, v in policy.to_dict().items() if v is not None}
        return m.ApprovalPolicy.from_dict(self._h.call("setApprovalPolicy", _params(desktop), json_body=policy))

    def delete_approval_policy(self, desktop: "str | Desktop") -> None:
        """Removes the desktop's approval policy: nothing waits for approval."""
        self._h.call("deleteApprovalPolicy", _params(desktop))
