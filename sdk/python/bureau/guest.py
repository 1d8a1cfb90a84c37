"""What is inside a desktop, and what hangs off it: files, clipboard,
snapshots, services, background processes, secrets, live URLs, console
links. Reached as attributes of a Desktop (``d.files.read(...)``)."""

from __future__ import annotations

import json
import os
from typing import Any, BinaryIO, Callable, Iterator

from . import models as m
from ._transport import Transport
from .sse import ServerEvent, parse


class _Part:
    def __init__(self, http: Transport, params: dict):
        self._h, self._p = http, params

    def _call(self, op: str, extra: dict | None = None, query: dict | None = None, body: Any = None) -> Any:
        return self._h.call(op, {**self._p, **(extra or {})}, query, json_body=body)


class Files(_Part):
    """Files as the desktop's user (paths relative to its home, or absolute).
    Big files are streamed both ways, never held in memory."""

    def stat(self, path: str, *, user: str | None = None) -> m.FileStat:
        """A directory's listing, or a file's path and size (without its bytes)."""
        with self._h.open("getFile", self._p, {"path": path, "user": user}) as r:
            if (r.headers.get("Content-Type") or "").startswith("application/json"):
                return m.FileStat.from_dict(json.loads(r.read()))
            size = r.headers.get("Content-Length")
            return m.FileStat(path=r.headers.get("X-File-Path") or path, dir=False,
                              size=int(size) if size and size.isdigit() else None)

    def list(self, path: str = ".", *, user: str | None = None) -> list[m.FileEntry]:
        """A directory's entries."""
        st = self.stat(path, user=user)
        if not st.dir:
            raise NotADirectoryError(path)
        return st.entries or []

    def read(self, path: str, *, user: str | None = None, agent: str | None = None) -> bytes:
        """A file's bytes (use download for big ones)."""
        with self._h.open("getFile", self._p, {"path": path, "user": user, "agent": agent}) as r:
            if (r.headers.get("Content-Type") or "").startswith("application/json"):
                raise IsADirectoryError(path)
            return r.read()

    def read_text(self, path: str, *, user: str | None = None, encoding: str = "utf-8") -> str:
        return self.read(path, user=user).decode(encoding)

    def download(self, path: str, to: str | os.PathLike | BinaryIO, *, user: str | None = None) -> int:
        """Streams a file to a local path or an open binary file; returns its size."""
        with self._h.open("getFile", self._p, {"path": path, "user": user}) as r:
            if (r.headers.get("Content-Type") or "").startswith("application/json"):
                raise IsADirectoryError(path)
            if hasattr(to, "write"):
                return _copy(r, to)
            with open(to, "wb") as f:
                return _copy(r, f)

    def write(self, path: str, data: bytes | str, *, user: str | None = None, mode: str | None = None,
              parents: bool = True, agent: str | None = None) -> dict:
        """Writes data (bytes or text) to path; returns {"path", "size"}."""
        if isinstance(data, str):
            data = data.encode()
        return self._put(path, data, user, mode, parents, agent)

    def upload(self, path: str, source: str | os.PathLike | BinaryIO | Iterator[bytes], *, user: str | None = None,
               mode: str | None = None, parents: bool = True) -> dict:
        """Streams a local file (a path, an open binary file or an iterator of
        chunks) to path in the desktop; returns {"path", "size"}."""
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                return self._put(path, f, user, mode, parents, None)
        return self._put(path, source, user, mode, parents, None)

    def _put(self, path: str, body: Any, user: str | None, mode: str | None, parents: bool, agent: str | None) -> dict:
        q = {"path": path, "user": user, "mode": mode, "parents": None if parents else False, "agent": agent}
        return self._h.call("putFile", self._p, q, body=body)

    def delete(self, path: str, *, recursive: bool = False, user: str | None = None) -> None:
        """Deletes a file (a directory only with recursive=True)."""
        self._call("deleteFile", query={"path": path, "recursive": recursive or None, "user": user})


def _copy(r: Any, f: BinaryIO) -> int:
    n = 0
    for chunk in r.iter_chunks():
        f.write(chunk)
        n += len(chunk)
    return n


class Clipboard(_Part):
    """The desktop's clipboard (its X selection), text and images."""

    def get(self) -> m.Clipboard:
        """Its text and the types it holds."""
        return m.Clipboard.from_dict(self._call("getClipboard"))

    def get_text(self) -> str:
        return self.get().text or ""

    def get_bytes(self, type: str = "image/png") -> bytes:
        """Its content of one type (NotFound when it holds none)."""
        with self._h.open("getClipboard", self._p, {"type": type}) as r:
            return r.read()

    def set_text(self, text: str) -> None:
        self._call("setClipboard", body={"text": text})

    def set_image(self, data: bytes, type: str = "image/png") -> None:
        with self._h.open("setClipboard", self._p, body=data, headers={"Content-Type": type}):
            pass


class Snapshots(_Part):
    """Snapshots of the desktop's disks (and RAM)."""

    def __init__(self, http: Transport, params: dict, on_desktop: Callable[[Any], Any]):
        super().__init__(http, params)
        self._on_desktop = on_desktop

    def list(self) -> list[m.Snapshot]:
        return [m.Snapshot.from_dict(s) for s in self._call("listSnapshots")["snapshots"]]

    def create(self, name: str, *, scope: str | None = None, memory: bool | None = None,
               description: str | None = None) -> m.Snapshot:
        """scope "all" (default), "data" (only /home) or "os"; memory=True keeps RAM too."""
        body = {k: v for k, v in (("name", name), ("scope", scope), ("memory", memory), ("description", description))
                if v is not None}
        return m.Snapshot.from_dict(self._call("createSnapshot", body=body))

    def revert(self, name: str) -> Any:
        """Puts the desktop back to the snapshot (under way when this returns)."""
        return self._on_desktop(self._call("revertSnapshot", {"name": name}))

    def delete(self, name: str) -> None:
        self._call("deleteSnapshot", {"name": name})


class Services(_Part):
    """Services: commands bureau-agent keeps running (and restarts), with logs."""

    def list(self) -> list[m.Service]:
        return [m.Service.from_dict(s) for s in self._call("listServices")["services"]]

    def create(self, name: str, cmd: str | list[str], *, port: int | None = None, cwd: str | None = None,
               env: dict[str, str] | None = None, secrets: list[str] | None = None, restart: str | None = None,
               user: str | None = None) -> m.Service:
        return m.Service.from_dict(self._call("createService", body=_service(name, cmd, port, cwd, env, secrets, restart, user)))

    def replace(self, name: str, cmd: str | list[str], *, port: int | None = None, cwd: str | None = None,
                env: dict[str, str] | None = None, secrets: list[str] | None = None, restart: str | None = None,
                user: str | None = None) -> m.Service:
        body = _service(name, cmd, port, cwd, env, secrets, restart, user)
        return m.Service.from_dict(self._call("replaceService", {"name": name}, body=body))

    def get(self, name: str) -> m.Service:
        return m.Service.from_dict(self._call("getService", {"name": name}))

    def start(self, name: str) -> m.Service:
        return m.Service.from_dict(self._call("startService", {"name": name}))

    def stop(self, name: str) -> m.Service:
        return m.Service.from_dict(self._call("stopService", {"name": name}))

    def restart(self, name: str) -> m.Service:
        return m.Service.from_dict(self._call("restartService", {"name": name}))

    def delete(self, name: str) -> None:
        self._call("deleteService", {"name": name})

    def logs(self, name: str, *, tail: int | None = None) -> str:
        """The service's log (its last tail bytes)."""
        with self._h.open("getServiceLogs", {**self._p, "name": name}, {"tail": tail},
                          headers={"Accept": "text/plain"}) as r:
            return r.read().decode("utf-8", "replace")

    def follow(self, name: str, *, tail: int | None = None) -> Iterator[ServerEvent]:
        """Yields the log as it is written (server-sent events) until you stop."""
        with self._h.open("getServiceLogs", {**self._p, "name": name}, {"tail": tail, "follow": True},
                          headers={"Accept": "text/event-stream"}) as r:
            yield from parse(r)


def _service(name: str, cmd: str | list[str], port: int | None, cwd: str | None, env: dict | None,
             secrets: list[str] | None, restart: str | None, user: str | None) -> dict:
    body: dict[str, Any] = {"name": name}
    body.update({"argv": list(cmd)} if isinstance(cmd, (list, tuple)) else {"cmd": cmd})
    for k, v in (("port", port), ("cwd", cwd), ("env", env), ("secrets", secrets), ("restart", restart), ("user", user)):
        if v is not None:
            body[k] = v
    return body


class Processes(_Part):
    """Background processes started with exec_background."""

    def list(self) -> list[m.Process]:
        return [m.Process.from_dict(p) for p in self._call("listProcesses")["processes"]]

    def get(self, pid: str | int) -> m.Process:
        return m.Process.from_dict(self._call("getProcess", {"pid": pid}))

    def signal(self, pid: str | int, signal: str | None = None) -> m.Process:
        """Sends signal (default TERM) to the process's group."""
        return m.Process.from_dict(self._call("signalProcess", {"pid": pid}, {"signal": signal}))

    def log(self, pid: str | int, *, tail: int | None = None) -> bytes:
        with self._h.open("getProcessLog", {**self._p, "pid": pid}, {"tail": tail}) as r:
            return r.read()

    def follow(self, pid: str | int, *, tail: int | None = None) -> Iterator[bytes]:
        """Yields the log as it is written, until the process ends."""
        with self._h.open("getProcessLog", {**self._p, "pid": pid}, {"tail": tail, "follow": True}) as r:
            yield from r.iter_chunks(4096)


class Secrets(_Part):
    """Secrets of this desktop only (they win over your own of the same name)."""

    def list(self) -> list[m.Secret]:
        return [m.Secret.from_dict(s) for s in self._call("listDesktopSecrets")["secrets"]]

    def set(self, name: str, value: str) -> m.Secret:
        return m.Secret.from_dict(self._call("putDesktopSecret", {"name": name}, body={"value": value}))

    def delete(self, name: str) -> None:
        self._call("deleteDesktopSecret", {"name": name})


class URLs(_Part):
    """Live URLs of the desktop's ports, and share links for them."""

    def list(self) -> list[m.LiveURL]:
        return [m.LiveURL.from_dict(u) for u in self._call("listURLs")["urls"]]

    def set_public(self, port: int, public: bool) -> m.LiveURL:
        """Makes a port's URL open to anyone (public) or to you only."""
        return m.LiveURL.from_dict(self._call("setURL", {"port": port}, body={"public": public}))

    def open_link(self, port: int) -> m.URLLogin:
        """A one-time link (a minute) that signs a browser in to the port's private URL."""
        return m.URLLogin.from_dict(self._call("openURL", {"port": port}))

    def shares(self) -> list[m.Share]:
        return [m.Share.from_dict(s) for s in self._call("listShares")["shares"]]

    def share(self, port: int, *, ttl_s: int | None = None, read_only: bool | None = None) -> m.ShareCreated:
        """A link to the port's URL for someone without an account (its URL is shown only now)."""
        body = {k: v for k, v in (("port", port), ("ttl_s", ttl_s), ("read_only", read_only)) if v is not None}
        return m.ShareCreated.from_dict(self._call("createShare", body=body))

    def revoke_share(self, share_id: str) -> None:
        self._call("revokeShare", {"share": share_id})


class Console(_Part):
    """Console links: the desktop in a browser, for a person."""

    def create(self, *, view_only: bool = False, ttl_seconds: int | None = None, name: str | None = None) -> m.ConsoleLink:
        """A console link; ``.url`` is absolute (its token is shown only now).
        name (1 to 64 characters) says who it is for ("Dana"): shown to the
        others watching, in the history, and as who took control there."""
        body = {k: v for k, v in (("view_only", view_only or None), ("ttl_seconds", ttl_seconds), ("name", name))
                if v is not None}
        link = m.ConsoleLink.from_dict(self._call("createConsole", body=body))
        if link.url and link.url.startswith("/"):
            link.url = self._h.url + link.url
        return link

    def list(self) -> list[m.ConsoleToken]:
        return [m.ConsoleToken.from_dict(t) for t in self._call("listConsoles")["sessions"]]

    def revoke(self, token_id: str) -> None:
        self._call("revokeConsole", {"token_id": token_id})


