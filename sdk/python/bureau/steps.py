"""The step log of a desktop: every computer-use action, exec, file change
and clipboard write made in it, with who made it, what was asked, what came
of it and thumbnails of the screen before and after. Reached as
``client.steps``; steps are ``models.Step``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from . import models as m
from ._transport import Transport
from .errors import error_for
from .sse import parse

if TYPE_CHECKING:
    from .desktop import Desktop

# The lists of an export that go on from page to page.
_EXPORT_LISTS = ("steps", "messages", "input")


def _params(desktop: "str | Desktop", **more: Any) -> dict:
    return {"id": desktop if isinstance(desktop, str) else desktop.id, **more}


class Steps:
    """Each desktop's step log (desktop: its id, or a Desktop)."""

    def __init__(self, http: Transport):
        self._h = http

    def list(self, desktop: "str | Desktop", after: int = 0, limit: int = 100,
             newest: bool = False, before: int = 0) -> list[m.Step]:
        """The steps numbered above after (and below before, when set), oldest
        first: the oldest limit of them (1 to 1000), or with newest=True the
        newest (what was done last)."""
        q: dict[str, Any] = {"after": after, "limit": limit}
        if newest:
            q["newest"] = True
        if before:
            q["before"] = before
        steps = self._h.call("listSteps", _params(desktop), q)["steps"] or []
        return [m.Step.from_dict(s) for s in steps]

    def follow(self, desktop: "str | Desktop", after: int = 0, timeout: float | None = None) -> Iterator[m.Step]:
        """Yields the steps numbered above after, then each new one as it is
        recorded, until you stop iterating (or close the generator). Raises
        Unauthorized when the token stops being valid, ServerError when the
        server ends the stream on an error."""
        with self._h.open("listSteps", _params(desktop), {"after": after, "follow": True},
                          headers={"Accept": "text/event-stream"}, timeout=timeout) as r:
            for ev in parse(r):
                if ev.event == "step":
                    yield m.Step.from_dict(ev.json())
                elif ev.event in ("unauthorized", "error"):
                    body = ev.json() if ev.data.startswith("{") else {"message": ev.data}
                    body.setdefault("code", ev.event)
                    raise error_for(401 if ev.event == "unauthorized" else 500, {"error": body})

    def get(self, desktop: "str | Desktop", seq: int) -> m.Step:
        """Step seq."""
        return m.Step.from_dict(self._h.call("getStep", _params(desktop, seq=seq)))

    def thumbnail(self, desktop: "str | Desktop", seq: int, which: str = "after") -> bytes:
        """The screen just "before" or "after" step seq: a 320-pixel-wide JPEG
        (NotFound when the desktop was not running then)."""
        if which not in ("before", "after"):
            raise ValueError(f"thumbnail {which!r}: want 'before' or 'after'")
        with self._h.open("getStepThumbnail", _params(desktop, seq=seq, which=which)) as r:
            return r.read()

    def export(self, desktop: "str | Desktop", format: str = "bureau", images: bool = True, after: int = 0) -> dict:
        """The step log for replay and evaluation, every page of it: format
        "bureau" (``steps``), "anthropic" (``tools`` and ``messages`` in
        Anthropic's Messages format) or "openai" (``tools`` and Responses API
        ``input`` items); images=False leaves the screens out."""
        doc: dict[str, Any] | None = None
        lists: dict[str, list] = {}
        while True:
            page = self._h.call("exportSteps", _params(desktop),
                                {"format": format, "images": None if images else False, "after": after})
            if doc is None:
                doc = page  # format, desktop_id and tools: the same on every page
            for k in _EXPORT_LISTS:
                if k in page:
                    lists.setdefault(k, []).extend(page[k] or [])
            nxt = page.get("next_after")
            if not isinstance(nxt, int) or nxt <= after:
                break
            after = nxt
        doc.pop("next_after", None)
        doc.update(lists)
        return doc

    def revert(self, desktop: "str | Desktop", seq: int) -> dict:
        """Puts the desktop back as it was before step seq: reverts it to the
        step's checkpoint, or else the newest snapshot taken before the step
        began (under way when this returns; wait_until("running")). Returns
        ``{"desktop", "snapshot", "holds_through_step"}`` (and ``"note"``
        when the step's own checkpoint is gone): the steps after that
        snapshot are undone. Conflict when no snapshot was taken before the
        step. A Desktop passed in gets the new record."""
        r = self._h.call("revertToStep", _params(desktop, seq=seq))
        if not isinstance(desktop, str):
            desktop._set(r.get("desktop"))
        return r

    def checkpoints(self, desktop: "str | Desktop") -> m.CheckpointPolicy:
        """The desktop's automatic checkpoint policy (off unless set)."""
        return m.CheckpointPolicy.from_dict(self._h.call("getCheckpointPolicy", _params(desktop)))

    def set_checkpoints(self, desktop: "str | Desktop", every_steps: int = 0, before: "list[str] | tuple" = (),
                        memory: bool = False, keep: int = 5) -> m.CheckpointPolicy:
        """Sets the desktop's automatic checkpoint policy whole (the defaults
        turn it off): a snapshot just before the next step and then every
        every_steps-th, and before every step of a kind in before ("computer",
        "exec", "file_write", "file_delete", "clipboard"), with the RAM when
        memory; the newest keep (1 to 50) automatic checkpoints are kept, older
        ones deleted (never other snapshots). Each is recorded in its step's
        ``checkpoint``, so revert(desktop, seq) goes back to exactly before the
        step. Invalid for an unknown kind or a keep out of range."""
        body = {"every_steps": every_steps, "before": list(before), "memory": memory, "keep": keep}
        return m.CheckpointPolicy.from_dict(self._h.call("setCheckpointPolicy", _params(desktop), json_body=body))
