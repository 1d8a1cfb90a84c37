"""The audit log: who made each state-changing call and console session,
from where, to what, and how it ended (docs/audit.md). ``client.audit(...)``
reads a page; ``client.audit.all(...)`` iterates over every page;
``client.audit.export(...)`` streams every matching entry (NDJSON).

Entries are the API's JSON objects, as dicts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator

from ._transport import Transport


@dataclass
class AuditPage:
    """A page of entries, newest first; ``next_cursor`` ("" on the last page)
    asks for the next."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    next_cursor: str = ""


def _filters(owner: str | None, actor: str | None, desktop: str | None, action: str | None, outcome: str | None,
             since: datetime | str | None, until: datetime | str | None) -> dict[str, Any]:
    def when(t: datetime | str | None) -> str | None:
        return t.isoformat().replace("+00:00", "Z") if isinstance(t, datetime) else t
    return {"owner": owner, "actor": actor, "desktop": desktop, "action": action, "outcome": outcome,
            "since": when(since), "until": when(until)}


class Audit:
    """Reads the audit log: owners see the entries where they acted or were
    acted on, admins every entry."""

    def __init__(self, http: Transport):
        self._h = http

    def __call__(self, *, owner: str | None = None, actor: str | None = None, desktop: str | None = None,
                 action: str | None = None, outcome: str | None = None, since: datetime | str | None = None,
                 until: datetime | str | None = None, limit: int | None = None, cursor: str | None = None) -> AuditPage:
        """One page (``limit`` entries, default 100, at most 1000). ``action``
        is an action or its start (``desktop.``); ``outcome`` ``ok`` or
        ``error``; ``since``/``until`` datetimes (with a zone) or RFC 3339 text;
        ``cursor`` the ``next_cursor`` of the page before."""
        q = _filters(owner, actor, desktop, action, outcome, since, until)
        q.update(limit=limit, cursor=cursor or None)
        out = self._h.call("listAudit", query=q)
        return AuditPage(entries=out["entries"], next_cursor=out.get("next_cursor") or "")

    def all(self, *, limit: int | None = None, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every matching entry, newest first, fetched a page (``limit``) at a
        time as the iteration goes."""
        cursor = None
        while True:
            page = self(limit=limit, cursor=cursor, **filters)
            yield from page.entries
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def export(self, *, owner: str | None = None, actor: str | None = None, desktop: str | None = None,
               action: str | None = None, outcome: str | None = None, since: datetime | str | None = None,
               until: datetime | str | None = None, timeout: float | None = None) -> Iterator[dict[str, Any]]:
        """Every matching entry as the server streams it (NDJSON), in one
        request."""
        q = _filters(owner, actor, desktop, action, outcome, since, until)
        q["format"] = "ndjson"
        with self._h.open("listAudit", query=q, headers={"Accept": "application/x-ndjson"}, timeout=timeout) as r:
            while line := r.readline():
                if line.strip():
                    yield json.loads(line)
