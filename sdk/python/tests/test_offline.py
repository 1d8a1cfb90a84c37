"""Offline tests: the SDK against a fake server (no bureau, no desktop)."""

import ast
import base64
import io
import json
import os
import re
import unittest

from bureau import (BureauError, Client, Conflict, Forbidden, Invalid, NotFound, NotReady, RateLimited, ServerError, Timeout,
                    Unauthorized)
from bureau.adapters import AnthropicComputer, OpenAIComputer
from bureau.operations import EXCLUDED, OPERATIONS
from bureau.sse import parse

from .fake import FakeBureau

D = "/api/v1/desktops/d1"
PNG = base64.b64encode(b"\x89PNG fake").decode()


class Base(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "bureau_test")

    def tearDown(self):
        self.fake.close()


class TestErrors(Base):
    def test_error_answers_become_exceptions(self):
        for status, code, cls in [(401, "unauthorized", Unauthorized), (404, "not_found", NotFound),
                                  (409, "invalid_state", Conflict), (422, "invalid", Invalid),
                                  (429, "rate_limited", RateLimited), (503, "unavailable", ServerError)]:
            self.fake.json("GET", D, status, {"error": {"code": code, "message": "m " + code, "field": "f",
                                                        "state": "paused"}}, {"Retry-After": "7"})
            with self.assertRaises(cls) as cm:
                self.c.desktops.get("d1")
            e = cm.exception
            self.assertIsInstance(e, BureauError)
            self.assertEqual((e.status, e.code, e.message, e.field, e.state, e.retry_after),
                             (status, code, "m " + code, "f", "paused", 7.0))

    def test_a_non_json_error_keeps_its_text(self):
        self.fake.routes[("GET", D)] = lambda _r, _b: (502, {"Content-Type": "text/plain"}, b"upstream down")
        with self.assertRaises(ServerError) as cm:
            self.c.desktops.get("d1")
        self.assertEqual(cm.exception.status, 502)
        self.assertIn("upstream down", cm.exception.message)

    def test_token_and_path_escaping(self):
        self.fake.json("GET", "/api/v1/desktops/a%2Fb", 200, {"id": "a/b", "state": "running"})
        d = self.c.desktops.get("a/b")
        self.assertEqual(d.state, "running")
        _, path, headers, _ = self.fake.seen[-1]
        self.assertEqual(path, "/api/v1/desktops/a%2Fb")
        self.assertEqual(headers["Authorization"], "Bearer bureau_test")

    def test_unknown_fields_are_kept(self):
        self.fake.json("GET", D, 200, {"id": "d1", "state": "running", "new_field": 1})
        d = self.c.desktops.get("d1")
        self.assertEqual(d.data.extra, {"new_field": 1})


class TestStreams(unittest.TestCase):
    def test_sse_parse(self):
        raw = b": hello\n\nevent: stdout\ndata: {\"data\":\"a\"}\n\n: keepalive\n\ndata: line1\ndata: line2\nid: 9\n\n"
        evs = list(parse(io.BytesIO(raw)))
        self.assertEqual([(e.event, e.data, e.id) for e in evs],
                         [("stdout", '{"data":"a"}', None), ("message", "line1\nline2", "9")])
        self.assertEqual(evs[0].json(), {"data": "a"})


class TestFiles(Base):
    def test_upload_streams_and_download_writes(self):
        got = {}

        def put(_r, body):
            got["body"] = body
            return 201, {"Content-Type": "application/json"}, json.dumps({"path": "/home/agent/x", "size": len(body)}).encode()
        self.fake.routes[("PUT", D + "/files")] = put
        chunks = (bytes([i]) * 1000 for i in range(50))  # an iterator: sent chunked
        r = self.c.desktop("d1").files.upload("x", chunks)
        self.assertEqual(r["size"], 50000)
        self.assertEqual(got["body"], b"".join(bytes([i]) * 1000 for i in range(50)))
        method, path, headers, _ = self.fake.seen[-1]
        self.assertEqual(headers.get("Transfer-Encoding"), "chunked")
        self.assertIn("path=x", path)
        # A seekable file goes with its length.
        r = self.c.desktop("d1").files.upload("x", io.BytesIO(b"abc"))
        self.assertEqual(self.fake.seen[-1][2].get("Content-Length"), "3")

        self.fake.routes[("GET", D + "/files")] = lambda _r, _b: (200, {"Content-Type": "application/octet-stream"}, b"z" * 200000)
        out = io.BytesIO()
        self.assertEqual(self.c.desktop("d1").files.download("x", out), 200000)
        self.assertEqual(out.getvalue(), b"z" * 200000)


class TestAdapters(Base):
    def setUp(self):
        super().setUp()
        self.sent = []

        def computer(_r, body):
            req = json.loads(body)
            self.sent.append(req)
            a = req.get("action") or (req.get("actions") or [{}])[0].get("type") or req.get("type")
            res = {"results": [{"action": a, "duration_ms": 1}], "display": req.get("display"),
                   "screen": {"width": 1920, "height": 1200}}
            if a in ("screenshot", "zoom"):
                res["results"][0]["image"] = {"media_type": "image/png", "data": PNG, "width": 1, "height": 1}
            if a == "cursor_position":
                res["results"][0]["cursor"] = {"x": 3, "y": 4}
            if req.get("screenshot"):
                res["screenshot"] = {"media_type": "image/png", "data": PNG, "width": 1, "height": 1}
            if a == "bogus":
                return 422, {"Content-Type": "application/json"}, json.dumps(
                    {"error": {"code": "invalid", "message": "action: unknown action", "field": "action"}}).encode()
            return 200, {"Content-Type": "application/json"}, json.dumps(res).encode()
        self.fake.routes[("POST", D + "/computer")] = computer

    def test_anthropic(self):
        tool = AnthropicComputer(self.c.desktop("d1"), display=(1024, 640))
        self.assertEqual(tool.definition(), {"type": "computer_20251124", "name": "computer", "display_width_px": 1024,
                                             "display_height_px": 640, "enable_zoom": True})
        r = tool.run({"type": "tool_use", "id": "t1", "name": "computer",
                      "input": {"action": "left_click", "coordinate": [5, 6], "text": "shift"}})
        self.assertEqual(self.sent[-1], {"action": "left_click", "coordinate": [5, 6], "text": "shift",
                                         "display": {"width": 1024, "height": 640}, "screenshot": True})
        self.assertEqual(r, {"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]})
        r = tool.run({"id": "t2", "input": {"action": "zoom", "region": [0, 0, 10, 10]}})
        self.assertNotIn("screenshot", self.sent[-1])  # the zoomed image is the answer
        self.assertEqual(r["content"][0]["source"]["data"], PNG)
        r = tool.run({"id": "t3", "input": {"action": "cursor_position"}})
        self.assertEqual(r["content"], [{"type": "text", "text": "X=3,Y=4"}])
        r = tool.run({"id": "t4", "input": {"action": "bogus"}})
        self.assertEqual(r, {"type": "tool_result", "tool_use_id": "t4", "is_error": True,
                             "content": [{"type": "text", "text": "action: unknown action"}]})
        self.assertEqual(AnthropicComputer(None, version="computer_20250124").definition()["type"], "computer_20250124")

    def test_openai(self):
        tool = OpenAIComputer(self.c.desktop("d1"), display=(1024, 640))
        out = tool.run({"type": "computer_call", "call_id": "c1", "actions": [
            {"type": "click", "x": 1, "y": 2, "button": "left", "keys": ["SHIFT"]}, {"type": "scroll", "x": 1, "y": 1, "scroll_y": 300}],
            "pending_safety_checks": [{"id": "s1", "code": "malicious_instructions", "message": "?"}]})
        self.assertEqual(self.sent[-1]["actions"], [{"type": "click", "x": 1, "y": 2, "button": "left", "keys": ["SHIFT"]},
                                                    {"type": "scroll", "x": 1, "y": 1, "scroll_y": 300, "scroll_x": 0}])
        self.assertTrue(self.sent[-1]["screenshot"])
        self.assertEqual(out, {"type": "computer_call_output", "call_id": "c1",
                               "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + PNG},
                               "acknowledged_safety_checks": [{"id": "s1", "code": "malicious_instructions", "message": "?"}]})
        tool.run({"type": "computer_call", "call_id": "c2", "action": {"type": "keypress", "keys": ["CTRL", "C"]}})
        self.assertEqual(self.sent[-1]["type"], "keypress")
        with self.assertRaises(BureauError):
            tool.run({"type": "computer_call", "call_id": "c3"})


class TestHosts(Base):
    HOST = {"name": "node-2", "uri": "qemu+ssh://bureau@node-2/system", "labels": {"zone": "eu"}, "state": "up",
            "hostname": "node-2.lan", "libvirt_version": "10.0.0", "accelerator": "kvm", "cpus": 16,
            "memory_mib": 64000, "free_memory_mib": 60000, "disk_mib": 953869, "free_disk_mib": 402113,
            "desktops": 3, "committed_memory_mib": 12288, "last_seen_at": "2025-01-02T03:04:05Z",
            "created_at": "2025-01-02T03:04:05Z"}

    def test_list_get_add_remove(self):
        local = {"name": "local", "uri": "qemu:///system", "labels": {}, "state": "connecting", "hostname": "",
                 "libvirt_version": "", "accelerator": "", "cpus": 0, "memory_mib": 0, "free_memory_mib": 0,
                 "created_at": "2025-01-01T00:00:00Z"}
        self.fake.json("GET", "/api/v1/hosts", 200, {"hosts": [local, self.HOST]})
        hs = self.c.hosts.list()
        self.assertEqual([(h.name, h.state, h.last_seen_at) for h in hs],
                         [("local", "connecting", None), ("node-2", "up", "2025-01-02T03:04:05Z")])
        self.assertEqual((hs[1].labels, hs[1].cpus, hs[1].memory_mib, hs[1].accelerator), ({"zone": "eu"}, 16, 64000, "kvm"))
        self.assertEqual((hs[1].disk_mib, hs[1].free_disk_mib, hs[1].desktops, hs[1].committed_memory_mib),
                         (953869, 402113, 3, 12288))
        self.assertEqual(hs[1].extra, {})

        self.fake.json("GET", "/api/v1/hosts/node-2", 200, dict(self.HOST, last_error="", new_field=1))
        h = self.c.hosts.get("node-2")
        self.assertEqual((h.name, h.hostname, h.extra), ("node-2", "node-2.lan", {"new_field": 1}))

        got = []

        def add(_r, body):
            got.append(json.loads(body))
            return 201, {"Content-Type": "application/json"}, json.dumps(self.HOST).encode()
        self.fake.routes[("POST", "/api/v1/hosts")] = add
        h = self.c.hosts.add("node-2", "qemu+ssh://bureau@node-2/system", labels={"zone": "eu"})
        self.assertEqual((h.name, h.state), ("node-2", "up"))
        self.c.hosts.add("node-3", "qemu+tls://node-3/system")
        self.c.hosts.add("node-4", "qemu+tcp://node-4:16509/system", ssh_address="root@node-4:2222",
                         ssh_host_key="ssh-ed25519 AAAA", bridge="bureau1", subnet="10.121.0.0/16")
        self.assertEqual(got, [{"name": "node-2", "uri": "qemu+ssh://bureau@node-2/system", "labels": {"zone": "eu"}},
                               {"name": "node-3", "uri": "qemu+tls://node-3/system"},
                               {"name": "node-4", "uri": "qemu+tcp://node-4:16509/system", "ssh_address": "root@node-4:2222",
                                "ssh_host_key": "ssh-ed25519 AAAA", "bridge": "bureau1", "subnet": "10.121.0.0/16"}])
        self.assertEqual(self.fake.seen[-1][2]["Content-Type"], "application/json")
        self.fake.json("GET", "/api/v1/hosts", 200, {"hosts": [local], "ssh_public_key": "ssh-ed25519 BBBB bureau"})
        self.assertEqual(self.c.hosts.ssh_public_key(), "ssh-ed25519 BBBB bureau")

        self.fake.routes[("DELETE", "/api/v1/hosts/node-2")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.hosts.remove("node-2"))
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", "/api/v1/hosts/node-2"))

    def test_refusals(self):
        self.fake.json("POST", "/api/v1/hosts", 422, {"error": {
            "code": "host_unreachable", "field": "uri",
            "message": "host unreachable: qemu+ssh://h/system: dial tcp: connection refused"}})
        with self.assertRaises(Invalid) as cm:
            self.c.hosts.add("h", "qemu+ssh://h/system")
        self.assertEqual((cm.exception.code, cm.exception.field), ("host_unreachable", "uri"))
        self.assertIn("connection refused", cm.exception.message)
        self.fake.json("DELETE", "/api/v1/hosts/local", 409, {"error": {"code": "in_use", "message": "host in use"}})
        with self.assertRaises(Conflict) as cm:
            self.c.hosts.remove("local")
        self.assertEqual(cm.exception.code, "in_use")
        with self.assertRaises(NotFound):
            self.c.hosts.get("nope")
        self.fake.json("GET", "/api/v1/hosts", 403, {"error": {"code": "forbidden", "message": "this needs an admin token"}})
        with self.assertRaises(Forbidden):
            self.c.hosts.list()


class TestMigration(Base):
    def test_migrate_and_cancel(self):
        got = []

        def migrate(_r, body):
            got.append(json.loads(body))
            return 202, {"Content-Type": "application/json"}, json.dumps(
                {"id": "d1", "state": "migrating", "host": "local", "operation_step": "to two: disks"}).encode()
        self.fake.routes[("POST", D + "/migrate")] = migrate
        d = self.c.desktops.migrate("d1", "two")
        self.assertEqual((d.id, d.state, d.operation_step), ("d1", "migrating", "to two: disks"))
        self.assertEqual(got, [{"host": "two"}])

        self.fake.json("DELETE", D + "/migrate", 202, {"cancelling": True})
        self.assertIsNone(self.c.desktops.cancel_migration("d1"))
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", D + "/migrate"))

    def test_refusals(self):
        self.fake.json("DELETE", D + "/migrate", 409, {"error": {"code": "conflict", "message": "the desktop is not migrating"}})
        with self.assertRaises(Conflict) as cm:
            self.c.desktops.cancel_migration("d1")
        self.assertEqual(cm.exception.message, "the desktop is not migrating")
        self.fake.json("POST", D + "/migrate", 422, {"error": {"code": "invalid", "field": "host",
                                                                "message": "desktop d1 already runs on host two"}})
        with self.assertRaises(Invalid) as cm:
            self.c.desktops.migrate("d1", "two")
        self.assertEqual(cm.exception.field, "host")


class TestOperationsTable(unittest.TestCase):
    def test_every_entry_is_called_and_every_call_is_an_entry(self):
        root = os.path.join(os.path.dirname(__file__), "..", "bureau")
        used = set()
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".py") and f != "operations.py":
                    with open(os.path.join(dirpath, f)) as src:
                        tree = ast.parse(src.read())
                    for node in ast.walk(tree):
                        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("call", "open", "_call", "_op"):
                            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                                used.add(node.args[0].value)
        self.assertEqual(used - set(OPERATIONS), set(), "calls of operations not in the table")
        self.assertEqual(set(OPERATIONS) - used, set(), "operations in the table no method calls")
        self.assertFalse(set(OPERATIONS) & set(EXCLUDED))
        for op, (method, path) in OPERATIONS.items():
            self.assertIn(method, ("GET", "POST", "PUT", "PATCH", "DELETE"), op)
            self.assertTrue(re.fullmatch(r"(/[a-z0-9._{}-]+)+", path), (op, path))


if __name__ == "__main__":
    unittest.main()


class TestPlacement(Base):
    def test_create_sends_placement_labels(self):
        got = []

        def create(_r, body):
            got.append(json.loads(body))
            return 202, {"Content-Type": "application/json"}, json.dumps({"id": "d1", "state": "creating", "host": "gpu-1"}).encode()
        self.fake.routes[("POST", "/api/v1/desktops")] = create
        d = self.c.desktops.create("work", placement_labels={"gpu": "a100", "zone": "eu"})
        self.assertEqual((d.id, d.data.host), ("d1", "gpu-1"))
        self.c.desktops.create("plain")
        self.assertEqual(got, [{"name": "work", "placement": {"labels": {"gpu": "a100", "zone": "eu"}}}, {"name": "plain"}])

    def test_no_host_fits(self):
        self.fake.json("POST", "/api/v1/desktops", 507, {"error": {
            "code": "insufficient_capacity", "message": "no host can take it (local: labels: no gpu; gpu-1: unreachable: connection refused)"}})
        with self.assertRaises(ServerError) as cm:
            self.c.desktops.create("work", placement_labels={"gpu": "a100"})
        self.assertEqual((cm.exception.status, cm.exception.code), (507, "insufficient_capacity"))
        self.assertIn("gpu-1: unreachable", cm.exception.message)


class TestReadiness(Base):
    BOOTING = {"id": "d1", "name": "work", "state": "running", "ready": False, "up": "agent", "waiting_for": "session"}
    READY = {"id": "d1", "name": "work", "state": "running", "ready": True, "ready_at": "2026-01-02T03:04:05Z",
             "up": "session"}

    def answers(self, *bodies):
        """GET D answers bodies in turn (the last one again and again)."""
        left = list(bodies)

        def get(_r, _b):
            body = left.pop(0) if len(left) > 1 else left[0]
            return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()
        self.fake.routes[("GET", D)] = get

    def test_a_call_before_ready_raises_not_ready(self):
        self.fake.json("POST", D + "/exec", 409, {"error": {
            "code": "not_ready", "message": "cannot exec desktop work yet", "up": "booting", "waiting_for": "agent"}},
            {"Retry-After": "5"})
        with self.assertRaises(NotReady) as cm:
            self.c.desktop("d1").exec("true")
        e = cm.exception
        self.assertIsInstance(e, Conflict)
        self.assertEqual((e.status, e.code, e.up, e.waiting_for, e.retry_after), (409, "not_ready", "booting", "agent", 5.0))
        # Another 409 stays a plain Conflict.
        self.fake.json("POST", D + "/exec", 409, {"error": {"code": "invalid_state", "message": "stopped", "state": "stopped"}})
        with self.assertRaises(Conflict) as cm:
            self.c.desktop("d1").exec("true")
        self.assertNotIsInstance(cm.exception, NotReady)

    def test_wait_ready_asks_the_server_to_wait_until_ready(self):
        self.answers(self.BOOTING, self.READY)
        d = self.c.desktop("d1").wait_ready(timeout=1000)
        self.assertEqual((d.ready, d.ready_at, d.up, d.waiting_for), (True, "2026-01-02T03:04:05Z", "session", None))
        self.assertEqual([s[1] for s in self.fake.seen], [D + "?wait=ready&timeout_s=300"] * 2)

    def test_wait_ready_runs_out(self):
        self.answers(self.BOOTING)
        with self.assertRaises(Timeout) as cm:
            self.c.desktop("d1").wait_ready(timeout=0)
        self.assertEqual((cm.exception.code, cm.exception.state), ("timeout", "running"))
        self.assertIn("waiting for session", cm.exception.message)
        self.assertEqual([s[1] for s in self.fake.seen], [D + "?wait=ready&timeout_s=0"])

    def test_wait_ready_of_a_stopped_desktop_is_a_conflict(self):
        self.fake.json("GET", D, 409, {"error": {"code": "invalid_state", "message": "cannot wait for a stopped desktop",
                                                 "state": "stopped"}})
        with self.assertRaises(Conflict) as cm:
            self.c.desktop("d1").wait_ready()
        self.assertEqual((cm.exception.code, cm.exception.state), ("invalid_state", "stopped"))

    def test_create_can_wait_until_ready(self):
        self.fake.json("POST", "/api/v1/desktops", 202, {"id": "d1", "name": "work", "state": "creating", "ready": False})
        self.answers(self.READY)
        d = self.c.desktops.create("work", wait_ready=True, ready_timeout=60)
        self.assertTrue(d.ready)
        self.assertEqual([s[0] for s in self.fake.seen], ["POST", "GET"])
        self.assertRegex(self.fake.seen[1][1], "^" + re.escape(D) + r"\?wait=ready&timeout_s=(59|60)$")  # less the create's time
        self.fake.seen.clear()
        self.assertFalse(self.c.desktops.create("work").ready)
        self.assertEqual(len(self.fake.seen), 1)
