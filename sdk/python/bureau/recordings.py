"""Recordings of a desktop's screen: WebM video made from the hypervisor's
side (boot, login screen, any window manager), only the frames that changed
encoded, each at the time it was seen (second t of the video is
``started_at`` + t, so a step of the step log is found in it by its time).
Reached as ``client.recordings``; recordings are ``models.Recording``.

A recording marked kept (``keep``) stays when its desktop is deleted, and
the server's size budget never removes it: the ``*_by_id`` methods and
``list_all`` reach it then, until its owner deletes it."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any, BinaryIO

from . import models as m
from ._transport import Transport
from .errors import NotFound
from .guest import _copy
from .steps import _params

if TYPE_CHECKING:
    from .desktop import Desktop


def _rid(rid: "str | m.Recording") -> str:
    return rid if isinstance(rid, str) else rid.id


class Recordings:
    """Each desktop's recordings (desktop: its id, or a Desktop; rid: a
    recording's id, or the Recording)."""

    def __init__(self, http: Transport):
        self._h = http

    def start(self, desktop: "str | Desktop", fps: int | None = None, max_seconds: int | None = None) -> m.Recording:
        """Starts recording the screen (waking the desktop if it napped or
        hibernated) until stopped, max_seconds (default and most: the
        server's BUREAU_RECORDING_MAX_SECONDS), or the desktop stops running.
        fps (1 to 10, default 2) is how often the screen is looked at.
        Conflict when one is already under way; ServerError (503) when the
        host has no ffmpeg."""
        body = {k: v for k, v in (("fps", fps), ("max_seconds", max_seconds)) if v is not None}
        return m.Recording.from_dict(self._h.call("startRecording", _params(desktop), json_body=body or None))

    def stop(self, desktop: "str | Desktop", rid: "str | m.Recording | None" = None) -> m.Recording:
        """Stops a recording (by default the one under way) and returns it once
        its file is complete; one already ended is returned as it is. NotFound
        when none is under way."""
        if rid is None:
            under_way = [r for r in self.list(desktop) if r.state == "recording"]
            if not under_way:
                raise NotFound(404, "not_found", "no recording of this desktop is under way")
            rid = under_way[-1]
        return m.Recording.from_dict(self._h.call("stopRecording", _params(desktop, rid=_rid(rid))))

    def list(self, desktop: "str | Desktop") -> list[m.Recording]:
        """The desktop's recordings, oldest first (the one under way included)."""
        recs = self._h.call("listRecordings", _params(desktop))["recordings"] or []
        return [m.Recording.from_dict(r) for r in recs]

    def get(self, desktop: "str | Desktop", rid: "str | m.Recording") -> m.Recording:
        """A recording."""
        return m.Recording.from_dict(self._h.call("getRecording", _params(desktop, rid=_rid(rid))))

    def video(self, desktop: "str | Desktop", rid: "str | m.Recording") -> bytes:
        """A finished recording's video (WebM) in memory (use download for long
        ones). Conflict while it is still recording."""
        with self._h.open("getRecordingVideo", _params(desktop, rid=_rid(rid)),
                          headers={"Accept": "video/webm"}) as r:
            return r.read()

    def download(self, desktop: "str | Desktop", rid: "str | m.Recording",
                 to: str | os.PathLike | BinaryIO) -> int:
        """Streams a finished recording's video (WebM) to a local path or an
        open binary file; returns its size. A path is written beside itself
        and renamed once complete, so a download that fails leaves nothing
        half-written. Conflict while it is still recording."""
        return self._save("getRecordingVideo", _params(desktop, rid=_rid(rid)), to)

    def delete(self, desktop: "str | Desktop", rid: "str | m.Recording") -> None:
        """Deletes a recording (stopping it first if under way) and its video."""
        self._h.call("deleteRecording", _params(desktop, rid=_rid(rid)))

    def keep(self, desktop: "str | Desktop", rid: "str | m.Recording", kept: bool = True) -> m.Recording:
        """Marks a recording kept (it stays when the desktop is deleted, and
        the size budget never removes it), or not with kept=False."""
        return m.Recording.from_dict(self._h.call("keepRecording", _params(desktop, rid=_rid(rid)),
                                                  json_body={"kept": kept}))

    def unkeep(self, desktop: "str | Desktop", rid: "str | m.Recording") -> m.Recording:
        """Lets a recording go with its desktop again."""
        return self.keep(desktop, rid, kept=False)

    def list_all(self) -> list[m.Recording]:
        """Every recording of the caller's (an admin's: everyone's), oldest
        first: live desktops' and the kept ones of deleted desktops
        (desktop_deleted)."""
        recs = self._h.call("listOwnedRecordings")["recordings"] or []
        return [m.Recording.from_dict(r) for r in recs]

    def get_by_id(self, rid: "str | m.Recording") -> m.Recording:
        """A recording by its id alone (its desktop may be deleted)."""
        return m.Recording.from_dict(self._h.call("getOwnedRecording", {"rid": _rid(rid)}))

    def video_by_id(self, rid: "str | m.Recording") -> bytes:
        """video, by the recording's id alone (its desktop may be deleted)."""
        with self._h.open("getOwnedRecordingVideo", {"rid": _rid(rid)}, headers={"Accept": "video/webm"}) as r:
            return r.read()

    def download_by_id(self, rid: "str | m.Recording", to: str | os.PathLike | BinaryIO) -> int:
        """download, by the recording's id alone (its desktop may be deleted)."""
        return self._save("getOwnedRecordingVideo", {"rid": _rid(rid)}, to)

    def delete_by_id(self, rid: "str | m.Recording") -> None:
        """Deletes a recording, kept or not, by its id alone (its desktop may
        be deleted)."""
        self._h.call("deleteOwnedRecording", {"rid": _rid(rid)})

    def _save(self, op: str, params: dict, to: str | os.PathLike | BinaryIO) -> int:
        with self._h.open(op, params, headers={"Accept": "video/webm"}) as r:
            if hasattr(to, "write"):
                return _whole(r, _copy(r, to))
            path = os.fspath(to)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix="." + os.path.basename(path) + ".",
                                       suffix=".part")
            try:
                with os.fdopen(fd, "wb") as f:
                    n = _whole(r, _copy(r, f))
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            return n


def _whole(r: Any, n: int) -> int:
    """n, the bytes read of r, when they are all its Content-Length said (a
    body cut off ends like a whole one in http.client's reads)."""
    size = r.headers.get("Content-Length")
    if size and size.isdigit() and int(size) != n:
        raise ConnectionError(f"the video was cut off after {n} of its {size} bytes")
    return n
