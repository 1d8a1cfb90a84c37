"""Offline tests of windows and apps, the accessibility tree and verified
computer use: the SDK against the fake server."""

import json
import unittest
from urllib.parse import parse_qs, urlsplit

from bureau import CannotVerify, Client, Conflict, Gone, Invalid, NoEffect
from bureau.adapters import AnthropicComputer, OpenAIComputer
from bureau.models import UINode

from .fake import FakeBureau

D = "/api/v1/desktops/d1"
PNG = "iVBORw0KGgo="

WINDOW = {"id": "0x1e00004", "title": "notes.txt - Mousepad", "app": "Mousepad", "instance": "mousepad", "pid": 812,
          "x": 40, "y": 60, "width": 800, "height": 600, "focused": True, "minimized": False, "maximized": False,
          "workspace": 0, "frame": {"left": 1, "right": 1, "top": 28, "bottom": 1},
          "display_bounds": {"x": 32, "y": 48, "width": 640, "height": 480}}
SAVE = {"id": "OjEuMzJ8L29yZy9hMTF5L2F0c3BpL2FjY2Vzc2libGUvMTc", "role": "push button", "name": "Save",
        "states": ["enabled", "focusable", "showing"], "actions": ["click"],
        "bounds": {"x": 620, "y": 512, "width": 84, "height": 34}, "parent": "Oj…12", "children": [],
        "child_count": 0, "app": "mousepad", "depth": 4}


class Base(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.d = Client(self.fake.url, "bureau_test").desktop("d1")

    def tearDown(self):
        self.fake.close()

    def sent(self):
        method, path, _, body = self.fake.seen[-1]
        u = urlsplit(path)
        return method, u.path, {k: v[0] for k, v in parse_qs(u.query).items()}, json.loads(body) if body else None


class TestWindows(Base):
    def test_list_with_a_display(self):
        self.fake.json("GET", D + "/windows", 200, {"windows": [WINDOW], "screen": {"width": 1600, "height": 1000, "workspace": 0}})
        ws = self.d.windows(display=(1280, 800))
        self.assertEqual(self.sent()[2], {"display": "1280x800"})
        w = ws.windows[0]
        self.assertEqual((w.id, w.app, w.title, w.focused, w.display_bounds["width"]), ("0x1e00004", "Mousepad", "notes.txt - Mousepad", True, 640))
        self.assertEqual(ws.screen["workspace"], 0)
        self.d.windows()
        self.assertEqual(self.sent()[2], {})

    def test_actions_send_the_geometry_given(self):
        self.fake.json("POST", D + "/windows/0x1e00004", 200, WINDOW)
        w = self.d.focus_window("0x1e00004")
        self.assertEqual((w.id, self.sent()[3]), ("0x1e00004", {"action": "focus"}))
        self.d.move_window(w, 10, 20)  # a Window stands for its id
        self.assertEqual(self.sent()[1:], ("/api/v1/desktops/d1/windows/0x1e00004", {}, {"action": "move", "x": 10, "y": 20}))
        self.d.resize_window(w, 640, 480)
        self.assertEqual(self.sent()[3], {"action": "resize", "width": 640, "height": 480})
        self.d.window_action(w, "maximize")
        self.assertEqual(self.sent()[3], {"action": "maximize"})

    def test_close_says_whether_it_closed(self):
        self.fake.json("POST", D + "/windows/0x1e00004", 200, {"closed": False, "window": WINDOW})
        c = self.d.close_window("0x1e00004")
        self.assertFalse(c.closed)
        self.assertEqual(c.window.title, "notes.txt - Mousepad")
        self.fake.json("POST", D + "/windows/0x1e00004", 200, {"closed": True})
        self.assertTrue(self.d.close_window("0x1e00004").closed)

    def test_launch(self):
        proc = {"id": "p-1", "pid": 812, "command": ["gtk-launch", "org.xfce.mousepad"], "running": True,
                "started_at": "2025-01-02T03:04:05Z", "log_bytes": 0}
        self.fake.json("POST", D + "/apps", 200, {"process": proc, "window": WINDOW, "timed_out": False})
        r = self.d.launch_app("mousepad", wait_s=30)
        self.assertEqual(self.sent()[3], {"desktop_file": "mousepad", "wait_s": 30})
        self.assertEqual((r.process.pid, r.window.id, r.timed_out), (812, "0x1e00004", False))
        self.fake.json("POST", D + "/apps", 200, {"process": proc, "window": None, "timed_out": True})
        r = self.d.launch_app(argv=["xterm", "-e", "top"])
        self.assertEqual(self.sent()[3], {"argv": ["xterm", "-e", "top"]})
        self.assertIsNone(r.window)
        self.d.launch_app(command="mousepad /tmp/a.txt", wait_s=0)
        self.assertEqual(self.sent()[3], {"command": "mousepad /tmp/a.txt", "wait_s": 0})


class TestUI(Base):
    def test_tree_and_find_send_their_filters(self):
        listing = {"nodes": [SAVE], "truncated": False, "screen": {"width": 1600, "height": 1000}}
        self.fake.json("GET", D + "/ui", 200, listing)
        self.fake.json("GET", D + "/ui/find", 200, listing)
        t = self.d.ui_tree(window="Mousepad", depth=3, limit=50, display=(1280, 800))
        self.assertEqual(self.sent()[1:3], (D + "/ui", {"window": "Mousepad", "depth": "3", "limit": "50", "display": "1280x800"}))
        self.assertEqual((t.nodes[0].role, t.nodes[0].name, t.truncated), ("push button", "Save", False))
        f = self.d.ui_find(role=["button", "check box"], name="save", states=["enabled", "!checked"], visible_only=False,
                           root=t.nodes[0], timeout_ms=2000)
        self.assertEqual(self.sent()[1:3], (D + "/ui/find", {"role": "button,check box", "name": "save", "states": "enabled,!checked",
                                                             "visible_only": "false", "root": SAVE["id"], "timeout_ms": "2000"}))
        self.assertEqual(f.nodes[0].id, SAVE["id"])

    def test_action_and_a_stale_id(self):
        path = D + "/ui/" + SAVE["id"]
        self.fake.json("POST", path, 200, {"node": SAVE, "changed": True, "gone": False, "performed": "click",
                                            "screen": {"width": 1600, "height": 1000}})
        r = self.d.ui_action(SAVE["id"], "click")
        self.assertEqual(self.sent()[3], {"action": "click"})
        self.assertEqual((r.changed, r.gone, r.performed, r.node.name), (True, False, "click", "Save"))
        self.d.ui_action(r.node, "set_value", "notes.txt", display=(1280, 800))
        self.assertEqual(self.sent()[2:], ({"display": "1280x800"}, {"action": "set_value", "value": "notes.txt"}))
        self.fake.json("POST", path, 410, {"error": {"code": "gone", "message": "the element is no longer there"}})
        with self.assertRaises(Gone) as cm:
            self.d.ui_action(SAVE["id"], "click")
        self.assertEqual((cm.exception.status, cm.exception.code), (410, "gone"))


class TestVerifiedComputerUse(Base):
    def test_expect_verify_ms_and_elements(self):
        self.fake.json("POST", D + "/computer", 200, {"results": [{"action": "left_click", "duration_ms": 30, "screen_changed": True,
                                                                   "changed_after_ms": 40, "element": {"id": SAVE["id"], "role": "push button",
                                                                                                       "name": "Save", "changed": True}}],
                                                     "display": {"width": 1600, "height": 1000}, "screen": {"width": 1600, "height": 1000}})
        r = self.d.computer(action="left_click", element=UINode.from_dict(SAVE), expect="change", verify_ms=800)
        self.assertEqual(self.sent()[3], {"action": "left_click", "element": SAVE["id"], "expect": "change", "verify_ms": 800})
        step = r.results[0]
        self.assertEqual((step.screen_changed, step.changed_after_ms, step.element["changed"]), (True, 40, True))
        self.d.computer({"action": "left_click", "element": {"role": "button", "name": "Save"}},
                        {"type": "move", "element": UINode.from_dict(SAVE)}, verify_ms=0)
        self.assertEqual(self.sent()[3], {"actions": [{"action": "left_click", "element": {"role": "button", "name": "Save"}},
                                                      {"type": "move", "element": SAVE["id"]}], "verify_ms": 0})

    def test_no_effect_and_cannot_verify(self):
        self.fake.json("POST", D + "/computer", 422, {"error": {"code": "no_effect", "index": 1,
                                                                "message": "actions[1] key: the screen did not change within 500 ms"}})
        with self.assertRaises(NoEffect) as cm:
            self.d.computer({"action": "left_click", "coordinate": [1, 2]}, {"action": "key", "text": "F12"}, expect="change")
        self.assertIsInstance(cm.exception, Invalid)
        self.assertEqual(cm.exception.index, 1)
        self.fake.json("POST", D + "/computer", 409, {"error": {"code": "cannot_verify", "message": "no live framebuffer"}})
        with self.assertRaises(CannotVerify) as cm:
            self.d.computer(action="key", text="a", expect="change")
        self.assertIsInstance(cm.exception, Conflict)


class TestAdaptersVerify(Base):
    def setUp(self):
        super().setUp()
        self.changed = False

        def computer(_r, body):
            req = json.loads(body)
            acts = req.get("actions") or [req]
            res = {"results": [{"action": a.get("action") or a.get("type"), "duration_ms": 1, "screen_changed": self.changed}
                               for a in acts],
                   "screenshot": {"media_type": "image/png", "data": PNG, "width": 1, "height": 1},
                   "display": req.get("display"), "screen": {"width": 1920, "height": 1200}}
            return 200, {"Content-Type": "application/json"}, json.dumps(res).encode()
        self.fake.routes[("POST", D + "/computer")] = computer

    def test_anthropic_says_when_the_screen_did_not_change(self):
        tool = AnthropicComputer(self.d, display=(1024, 640), expect="change", verify_ms=700)
        r = tool.run({"id": "t1", "input": {"action": "left_click", "coordinate": [5, 6]}})
        self.assertEqual((self.sent()[3]["expect"], self.sent()[3]["verify_ms"]), ("change", 700))
        self.assertEqual(r["content"][1:], [{"type": "text", "text": "the screen did not change after left_click"}])
        r = tool.run({"id": "t2", "input": {"action": "mouse_move", "coordinate": [5, 6]}})
        self.assertEqual(len(r["content"]), 1)  # a move that changes nothing is no news
        self.changed = True
        r = tool.run({"id": "t3", "input": {"action": "left_click", "coordinate": [5, 6]}})
        self.assertEqual([c["type"] for c in r["content"]], ["image"])
        AnthropicComputer(self.d).run({"id": "t4", "input": {"action": "key", "text": "a"}})
        self.assertNotIn("expect", self.sent()[3])
        self.assertNotIn("verify_ms", self.sent()[3])

    def test_openai_keeps_the_result(self):
        tool = OpenAIComputer(self.d, verify_ms=300)
        tool.run({"call_id": "c1", "actions": [{"type": "click", "x": 1, "y": 2, "button": "left"}, {"type": "move", "x": 3, "y": 4}]})
        self.assertEqual(self.sent()[3]["verify_ms"], 300)
        self.assertEqual(tool.unchanged(), ["click"])
        self.assertFalse(tool.last_result.results[0].screen_changed)


if __name__ == "__main__":
    unittest.main()
