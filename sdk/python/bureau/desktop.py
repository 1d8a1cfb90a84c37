"""A desktop: its lifecycle, screen, shell, files and everything inside it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterator

from . import models as m
from .errors import BureauError, Timeout
from .guest import Clipboard, Console, Files, Processes, Secrets, Services, Snapshots, URLs
from .sse import ServerEvent, parse

if TYPE_CHECKING:
    from .client import Client

# The longest one GET …?wait=ready is asked to wait (the API allows 900 s;
# a shorter call is less likely to be cut off by a proxy on the way).
READY_SLICE = 300

class Desktop:
    """A handle on one desktop. Its record is ``.data`` (a models.Desktop,
    refreshed by every call that returns it); its fields read through:
    ``d.state``, ``d.name``, ``d.ip`` …"""

    def __init__(self, client: "Client", id: str | None = None, data: m.Desktop | None = None):
        self._c = client
        self._h = client.http
        self.data = data
        self.id = id or (data.id if data else None)
        if not self.id:
            raise ValueError("a desktop needs an id")
        p = {"id": self.id}
        self.files = Files(self._h, p)
        self.snapshots = Snapshots(self._h, p, self._set)
        self.services = Services(self._h, p)
        self.processes = Processes(self._h, p)
        self.secrets = Secrets(self._h, p)
        self.urls = URLs(self._h, p)
        self.clipboard = Clipboard(self._h, p)
        self.console = Console(self._h, p)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("data", "id"):
            raise AttributeError(name)
        if self.data is None:
            self.refresh()
        try:
            return getattr(self.data, name)
        except AttributeError:
            raise AttributeError(f"Desktop has no attribute {name!r}") from None

    def __repr__(self) -> str:
        state = self.data.state if self.data else "?"
        name = self.data.name if self.data else "?"
        return f"<Desktop {self.id} {name!r} {state}>"

    def _set(self, d: Any) -> "Desktop":
        if isinstance(d, dict):
            self.data = m.Desktop.from_dict(d)
        return self

    def _op(self, op: str, query: dict | None = None, body: Any = None) -> "Desktop":
        return self._set(self._h.call(op, {"id": self.id}, query, json_body=body))

    # Lifecycle. Each returns at once with the operation under way; wait
    # with wait_until (a state) or wait_ready (usable: its session is up).

    def refresh(self) -> "Desktop":
        """Reads the desktop's record again."""
        return self._op("getDesktop")

    def start(self) -> "Desktop":
        return self._op("startDesktop")

    def stop(self, force: bool = False, timeout: int | None = None) -> "Desktop":
        """Shuts the guest down (force: pulls the plug); the data disk stays."""
        return self._op("stopDesktop", {"force": force or None, "timeout": timeout})

    def reboot(self) -> "Desktop":
        return self._op("rebootDesktop")

    def pause(self) -> "Desktop":
        """Freezes the VM in RAM (resume takes milliseconds)."""
        return self._op("pauseDesktop")

    def resume(self) -> "Desktop":
        return self._op("resumeDesktop")

    def hibernate(self) -> "Desktop":
        """Saves the VM's RAM to disk and stops it; start or any use wakes it."""
        return self._op("hibernateDesktop")

    def reimage(self, image: str | None = None) -> "Desktop":
        """A fresh OS disk (from image, or the same one); /home is kept."""
        return self._op("reimageDesktop", body={"image": image} if image else {})

    def resize_data_disk(self, size_gib: int) -> "Desktop":
        return self._op("resizeDataDisk", body={"size_gib": size_gib})

    def update(self, *, idle_timeout_seconds: int | None = None, nap_after_seconds: int | None = None,
               sleep_after_seconds: int | None = None, restart_on_crash: bool | None = None,
               network: dict | None = None, keyboard_layout: str | None = None) -> "Desktop":
        """Changes settings (only those given)."""
        body = {k: v for k, v in (("idle_timeout_seconds", idle_timeout_seconds), ("nap_after_seconds", nap_after_seconds),
                                  ("sleep_after_seconds", sleep_after_seconds), ("restart_on_crash", restart_on_crash),
                                  ("network", network), ("keyboard_layout", keyboard_layout)) if v is not None}
        return self._op("updateDesktop", body=body)

    def delete(self, delete_data: bool = False, keep_recordings: bool = False) -> m.DeleteResult:
        """Deletes the desktop; its data disk is kept unless delete_data. Its
        recordings go but the kept ones, or all stay with keep_recordings
        (client.recordings.list_all() reaches them)."""
        r = m.DeleteResult.from_dict(self._h.call("deleteDesktop", {"id": self.id},
                                                  {"delete_data": delete_data or None,
                                                   "keep_recordings": keep_recordings or None}))
        self.data = r.desktop
        return r

    def wait_until(self, *states: str, timeout: float = 600, poll: float = 1.0) -> "Desktop":
        """Waits until the desktop is in one of states ("running", …) and
        returns it. Raises BureauError if it settles in "error" (unless
        asked for), Timeout when timeout seconds pass."""
        want = set(states) or {"running"}
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            st = self.data.state
            if st in want:
                return self
            if st == "error":
                raise BureauError(409, "invalid_state", self.data.last_error or "the desktop failed", state=st)
            if time.monotonic() >= deadline:
                raise Timeout(f"desktop {self.id} is {st} after {timeout:.0f} s, not {'/'.join(sorted(want))}", st)
            time.sleep(poll)

    def wait_ready(self, timeout: float = 600) -> "Desktop":
        """Waits until the desktop is ready (it runs and its session is up:
        exec, files, computer use and the clipboard work) and returns it. The
        server does the waiting (GET …?wait=ready, at most READY_SLICE seconds
        a call); a desktop asleep is woken, one on its way to running waited
        for. Raises Conflict (code invalid_state) when it will not get there
        by itself (stopped, error), Timeout when timeout seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            n = max(0, min(int(left), READY_SLICE))
            asked = time.monotonic()
            # The socket waits longer than the server, which answers when its time is up.
            self._set(self._h.call("getDesktop", {"id": self.id}, {"wait": "ready", "timeout_s": n}, timeout=n + 30))
            if self.data.ready:
                return self
            if time.monotonic() >= deadline - 0.5:
                st, waiting = self.data.state, self.data.waiting_for
                why = f"waiting for {waiting}" if waiting else st
                raise Timeout(f"desktop {self.id} is not ready after {timeout:.0f} s ({why})", st)
            # An answer before its time (a server that does not wait): no busy loop.
            time.sleep(max(0.0, min(1.0 - (time.monotonic() - asked), deadline - time.monotonic())))

    def events(self, limit: int | None = None) -> list[m.Event]:
        """The desktop's history, newest first."""
        return [m.Event.from_dict(e) for e in self._h.call("listDesktopEvents", {"id": self.id}, {"limit": limit})["events"]]

    def stats(self) -> m.Stats:
        """CPU, memory, disk and network figures of the running VM."""
        return m.Stats.from_dict(self._h.call("getDesktopStats", {"id": self.id}))

    # The screen, mouse and keyboard.

    def screenshot(self, format: str = "png", *, width: int | None = None, height: int | None = None,
                   quality: int | None = None, settle: bool = False, passive: bool = False,
                   source: str | None = None) -> bytes:
        """The screen as PNG (or JPEG) bytes, scaled to width/height when given;
        source="display" reads the hypervisor's screen dump instead of the
        live framebuffer."""
        q = {"format": format if format != "png" else None, "width": width, "height": height, "quality": quality,
             "settle": settle or None, "passive": passive or None, "source": source}
        with self._h.open("screenshot", {"id": self.id}, q) as r:
            return r.read()

    def computer(self, *actions: dict, display: tuple[int, int] | None = None, screenshot: bool = False,
                 keyboard: str | None = None, expect: str | None = None, verify_ms: int | None = None,
                 **action: Any) -> m.ComputerResult:
        """Runs computer-use actions, in Anthropic's shape
        (``computer(action="left_click", coordinate=[10, 20])``) or OpenAI's
        (``computer({"type": "click", "x": 10, "y": 20})``), several in order.
        display is the screen size the model sees (coordinates are scaled);
        screenshot=True adds the settled screen after them.

        A click or move may name an accessibility element instead of a
        coordinate: ``element=`` a node (or its id) from ui_tree/ui_find, or a
        query ``{"role", "name", "app", "window"}``; its step's ``element``
        says whether the node changed. Each input action's result says
        whether the screen changed within verify_ms (default 500; 0: no
        check); expect="change" stops at the first that changed nothing
        (NoEffect, its ``index``; CannotVerify when the screen cannot be
        watched)."""
        if actions and action:
            raise ValueError("give actions as dicts or one action as keywords, not both")
        body: dict[str, Any] = _with_element_id(action)
        if len(actions) == 1:
            body.update(_with_element_id(actions[0]))
        elif actions:
            body["actions"] = [_with_element_id(a) for a in actions]
        if display:
            body["display"] = {"width": display[0], "height": display[1]}
        if screenshot:
            body["screenshot"] = True
        if keyboard:
            body["keyboard"] = keyboard
        if expect:
            body["expect"] = expect
        if verify_ms is not None:
            body["verify_ms"] = verify_ms
        return m.ComputerResult.from_dict(self._h.call("computerAction", {"id": self.id}, json_body=body))

    def set_resolution(self, width: int, height: int) -> m.Size:
        return m.Size.from_dict(self._h.call("setResolution", {"id": self.id}, json_body={"width": width, "height": height}))

    # Windows and apps: ids are the list's (a Window works too); geometry
    # is the client area in screen pixels.

    def windows(self, display: tuple[int, int] | None = None) -> m.WindowList:
        """The session's windows, oldest first, and the screen; with display
        (the computer-use display) each shown window has display_bounds."""
        return m.WindowList.from_dict(self._h.call("listWindows", {"id": self.id}, {"display": _wxh(display)}))

    def window_action(self, wid: "str | m.Window", action: str, *, x: int | None = None, y: int | None = None,
                      width: int | None = None, height: int | None = None) -> "m.Window | m.WindowClosed":
        """Does action (focus, move, resize, minimize, maximize, unmaximize,
        close) to a window and returns it as the window manager shows it
        then; close returns a WindowClosed."""
        body = {k: v for k, v in (("action", action), ("x", x), ("y", y), ("width", width), ("height", height))
                if v is not None}
        r = self._h.call("windowAction", {"id": self.id, "wid": _ref(wid)}, json_body=body)
        return m.WindowClosed.from_dict(r) if action == "close" else m.Window.from_dict(r)

    def focus_window(self, wid: "str | m.Window") -> m.Window:
        """Raises a window and gives it the focus (un-minimized)."""
        return self.window_action(wid, "focus")

    def move_window(self, wid: "str | m.Window", x: int, y: int, width: int | None = None,
                    height: int | None = None) -> m.Window:
        return self.window_action(wid, "move", x=x, y=y, width=width, height=height)

    def resize_window(self, wid: "str | m.Window", width: int, height: int) -> m.Window:
        return self.window_action(wid, "resize", width=width, height=height)

    def close_window(self, wid: "str | m.Window") -> m.WindowClosed:
        """Asks a window to close, as its close button does."""
        return self.window_action(wid, "close")

    def launch_app(self, desktop_file: str | None = None, *, command: str | None = None,
                   argv: list[str] | None = None, wait_s: int | None = None) -> m.LaunchAppResult:
        """Starts an app (one of: desktop_file as the menu has it, a shell
        command, an argv) and waits up to wait_s (default 20) for its window."""
        body = {k: v for k, v in (("desktop_file", desktop_file), ("command", command), ("argv", argv),
                                  ("wait_s", wait_s)) if v is not None}
        return m.LaunchAppResult.from_dict(self._h.call("launchApp", {"id": self.id}, json_body=body,
                                                        timeout=(wait_s or 20) + 60))

    # The accessibility tree: elements by role and name. role and states
    # take a string (comma-separated) or a list.

    def ui_tree(self, *, window: str | None = None, app: str | None = None, role: "str | list[str] | None" = None,
                name: str | None = None, states: "str | list[str] | None" = None, visible_only: bool | None = None,
                depth: int | None = None, limit: int | None = None, root: "str | m.UINode | None" = None,
                display: tuple[int, int] | None = None, timeout_ms: int | None = None) -> m.UINodeList:
        """What shows on the screen, parents first: the applications (depth
        0), their windows (1) and what is inside, filtered; role, name and
        states keep the matches and their ancestors."""
        q = _ui_query(window, app, role, name, states, visible_only, depth, limit, root, display, timeout_ms)
        return m.UINodeList.from_dict(self._h.call("getUITree", {"id": self.id}, q))

    def ui_find(self, *, window: str | None = None, app: str | None = None, role: "str | list[str] | None" = None,
                name: str | None = None, states: "str | list[str] | None" = None, visible_only: bool | None = None,
                depth: int | None = None, limit: int | None = None, root: "str | m.UINode | None" = None,
                display: tuple[int, int] | None = None, timeout_ms: int | None = None) -> m.UINodeList:
        """The elements that match, flat (none: an empty list)."""
        q = _ui_query(window, app, role, name, states, visible_only, depth, limit, root, display, timeout_ms)
        return m.UINodeList.from_dict(self._h.call("findUINodes", {"id": self.id}, q))

    def ui_action(self, node: "str | m.UINode", action: str = "click", value: str | None = None, *,
                  display: tuple[int, int] | None = None, timeout_ms: int | None = None) -> m.UIActResult:
        """Does action (click, focus, set_value with value, or one of the
        node's own actions) through the application, not the mouse, and
        returns the node read again: changed, gone. A node no longer there
        raises Gone."""
        body = {k: v for k, v in (("action", action), ("value", value), ("timeout_ms", timeout_ms)) if v is not None}
        return m.UIActResult.from_dict(self._h.call("actOnUINode", {"id": self.id, "node": _ref(node)},
                                                    {"display": _wxh(display)}, json_body=body))

    # The shell.

    def exec(self, cmd: str | list[str], *, user: str | None = None, cwd: str | None = None,
             env: dict[str, str] | None = None, stdin: str | None = None, timeout_s: int | None = None,
             secrets: list[str] | None = None, max_output_bytes: int | None = None,
             agent: str | None = None) -> m.ExecResult:
        """Runs a command (a bash line, or an argv list) and returns its result."""
        body = _exec_body(cmd, user, cwd, env, stdin, timeout_s, secrets, max_output_bytes)
        return m.ExecResult.from_dict(self._h.call("exec", {"id": self.id}, {"agent": agent}, json_body=body))

    def exec_background(self, cmd: str | list[str], *, name: str | None = None, user: str | None = None,
                        cwd: str | None = None, env: dict[str, str] | None = None,
                        secrets: list[str] | None = None) -> m.Process:
        """Starts a command in the background; its output goes to a log (processes.log)."""
        body = _exec_body(cmd, user, cwd, env, None, None, secrets, None)
        body["background"] = True
        if name:
            body["name"] = name
        return m.Process.from_dict(self._h.call("exec", {"id": self.id}, json_body=body))

    def exec_stream(self, cmd: str | list[str], *, user: str | None = None, cwd: str | None = None,
                    env: dict[str, str] | None = None, stdin: str | None = None, timeout_s: int | None = None,
                    secrets: list[str] | None = None) -> Iterator[ServerEvent]:
        """Runs a command and yields its output as it comes: ``stdout`` and
        ``stderr`` events (``.json()["data"]``), then ``exit`` (exit_code …)
        or ``error``."""
        body = _exec_body(cmd, user, cwd, env, stdin, timeout_s, secrets, None)
        with self._h.open("exec", {"id": self.id}, {"stream": True}, json_body=body,
                          headers={"Accept": "text/event-stream"}) as r:
            yield from parse(r)

    def agent_status(self) -> m.AgentStatus:
        """Whether bureau-agent answers in the desktop and is the current build."""
        return m.AgentStatus.from_dict(self._h.call("getAgentStatus", {"id": self.id}))

    def port_url(self, port: int, path: str = "/") -> str:
        """The URL of the API's proxy to a port in the desktop (send the
        token): ``GET d.port_url(8000)`` with any HTTP client."""
        return f"{self._h.url}/api/v1/desktops/{self.id}/ports/{int(port)}/{path.lstrip('/')}"


def _ref(v: Any) -> str:
    """An id, or the id of a model (a Window, a UINode)."""
    return v if isinstance(v, str) else v.id


def _wxh(display: tuple[int, int] | None) -> str | None:
    return f"{display[0]}x{display[1]}" if display else None


def _with_element_id(action: dict) -> dict:
    """The action with a UINode as its element sent as the node's id."""
    e = action.get("element")
    return {**action, "element": e.id} if isinstance(e, m.UINode) else dict(action)


def _ui_query(window, app, role, name, states, visible_only, depth, limit, root, display, timeout_ms) -> dict:
    def joined(v):
        return ",".join(v) if isinstance(v, (list, tuple)) else v
    return {"window": window, "app": app, "role": joined(role), "name": name, "states": joined(states),
            "visible_only": visible_only, "depth": depth, "limit": limit,
            "root": _ref(root) if root is not None else None, "display": _wxh(display), "timeout_ms": timeout_ms}


def _exec_body(cmd: str | list[str], user: str | None, cwd: str | None, env: dict | None, stdin: str | None,
               timeout_s: int | None, secrets: list[str] | None, max_output_bytes: int | None) -> dict:
    body: dict[str, Any] = {"argv": list(cmd)} if isinstance(cmd, (list, tuple)) else {"cmd": cmd}
    for k, v in (("user", user), ("cwd", cwd), ("env", env), ("stdin", stdin), ("timeout_s", timeout_s),
                 ("secrets", secrets), ("max_output_bytes", max_output_bytes)):
        if v is not None:
            body[k] = v
    return body


