"""The SDK against a real bureau and a running desktop.

Runs when BUREAU_URL, BUREAU_TOKEN and BUREAU_DESKTOP are set (the e2e
suite sets them); the desktop is left as it was found.
"""

import base64
import hashlib
import io
import os
import time
import unittest

from bureau import BureauError, Client, Invalid, NotFound
from bureau.adapters import AnthropicComputer, OpenAIComputer

from .spec import assert_no_drift

LIVE = all(os.environ.get(k) for k in ("BUREAU_URL", "BUREAU_TOKEN", "BUREAU_DESKTOP"))
PREFIX = "sdk-python-%d" % os.getpid()


@unittest.skipUnless(LIVE, "set BUREAU_URL, BUREAU_TOKEN and BUREAU_DESKTOP to run against a server")
class TestLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Client()
        cls.d = cls.c.desktop(os.environ["BUREAU_DESKTOP"])
        cls.d.wait_ready(timeout=300)  # running, its session up: exec and files work

    def test_drift_against_the_servers_spec(self):
        assert_no_drift(self, self.c.openapi(), "the served spec")

    def test_desktop_and_lists(self):
        self.assertEqual(self.d.refresh().state, "running")
        self.assertEqual((self.d.ready, self.d.up), (True, "session"))
        self.assertIn(self.d.id, [x.id for x in self.c.desktops.list()])
        self.assertIn(self.c.info()["accelerator"], ("kvm", "tcg"))
        self.assertTrue(self.d.events(limit=5))
        self.assertIsInstance(self.c.events.list(limit=3), list)
        self.assertTrue(self.d.agent_status().up)
        self.assertGreater(self.d.stats().memory_max_kib, 0)

    def test_errors(self):
        with self.assertRaises(NotFound) as cm:
            self.c.desktops.get("no-such-desktop")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        with self.assertRaises(Invalid) as cm:
            self.d.set_resolution(1, 1)
        self.assertEqual(cm.exception.status, 422)
        self.assertTrue(cm.exception.field)
        with self.assertRaises(Invalid) as cm:
            self.d.snapshots.create("bad name!")
        self.assertEqual(cm.exception.field, "name")

    def test_exec_and_stream(self):
        r = self.d.exec("echo out; echo err >&2; exit 3")
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, "out\n", "err\n"))
        r = self.d.exec(["printf", "%s", "a b"])
        self.assertEqual(r.stdout, "a b")
        events = list(self.d.exec_stream("for i in 1 2 3; do echo $i; done; exit 4"))
        out = "".join(e.json()["data"] for e in events if e.event == "stdout")
        self.assertEqual(out, "1\n2\n3\n")
        self.assertEqual(events[-1].event, "exit")
        self.assertEqual(events[-1].json()["exit_code"], 4)

    def test_files_round_trip_streamed(self):
        blob = os.urandom(4 << 20)
        path = PREFIX + "/blob.bin"
        try:
            w = self.d.files.upload(path, io.BytesIO(blob))
            self.assertEqual(w["size"], len(blob))
            got = io.BytesIO()
            self.assertEqual(self.d.files.download(path, got), len(blob))
            self.assertEqual(hashlib.sha256(got.getvalue()).hexdigest(), hashlib.sha256(blob).hexdigest())
            self.d.files.write(PREFIX + "/note.txt", "héllo")
            self.assertEqual(self.d.files.read_text(PREFIX + "/note.txt"), "héllo")
            self.assertEqual(sorted(e.name for e in self.d.files.list(PREFIX)), ["blob.bin", "note.txt"])
            with self.assertRaises(BureauError) as cm:
                self.d.files.read("../../etc/shadow")
            self.assertIn(cm.exception.status, (403, 404, 422))
        finally:
            self.d.files.delete(PREFIX, recursive=True)
        with self.assertRaises(NotFound):
            self.d.files.read(path)

    def test_clipboard(self):
        self.d.clipboard.set_text("from the python sdk")
        self.assertEqual(self.d.clipboard.get_text(), "from the python sdk")

    def test_screen_and_adapters(self):
        png = self.d.screenshot(width=640)
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        anthropic = AnthropicComputer(self.d, display=(1024, 640))
        r = anthropic.run({"type": "tool_use", "id": "t1", "name": "computer",
                           "input": {"action": "mouse_move", "coordinate": [100, 120]}})
        self.assertNotIn("is_error", r)
        self.assertEqual(base64.b64decode(r["content"][0]["source"]["data"])[:4], b"\x89PNG")
        r = anthropic.run({"id": "t2", "input": {"action": "cursor_position"}})
        self.assertEqual(r["content"], [{"type": "text", "text": "X=100,Y=120"}])
        r = anthropic.run({"id": "t3", "input": {"action": "zoom", "region": [0, 0, 512, 320]}})
        self.assertEqual(r["content"][0]["type"], "image")
        r = anthropic.run({"id": "t4", "input": {"action": "teleport"}})
        self.assertTrue(r["is_error"])
        openai = OpenAIComputer(self.d, display=(1024, 640))
        out = openai.run({"type": "computer_call", "call_id": "c1",
                          "actions": [{"type": "move", "x": 300, "y": 200}, {"type": "wait"}]})
        self.assertTrue(out["output"]["image_url"].startswith("data:image/png;base64,iVBOR"))
        r = anthropic.run({"id": "t5", "input": {"action": "cursor_position"}})
        self.assertEqual(r["content"], [{"type": "text", "text": "X=300,Y=200"}])

    def test_data_snapshot(self):
        name = PREFIX + "-snap"
        sn = self.d.snapshots.create(name, scope="data")
        try:
            self.assertEqual((sn.name, sn.scope), (name, "data"))
            self.assertIn(name, [s.name for s in self.d.snapshots.list()])
        finally:
            self.d.snapshots.delete(name)
        self.assertNotIn(name, [s.name for s in self.d.snapshots.list()])

    def test_secrets_tokens_console_urls(self):
        sec = PREFIX.replace("-", "_").upper()
        self.d.secrets.set(sec, "s3cr3t-value")
        try:
            self.assertIn(sec, [s.name for s in self.d.secrets.list()])
            r = self.d.exec('test "$%s" = s3cr3t-value && echo set; echo "$%s"' % (sec, sec), secrets=[sec])
            self.assertEqual(r.exit_code, 0)
            self.assertIn("set", r.stdout)  # the command had it
            self.assertNotIn("s3cr3t-value", r.stdout)  # and its output does not
        finally:
            self.d.secrets.delete(sec)
        tok = self.c.tokens.create(PREFIX, scope="desktop", desktop_id=self.d.id, ttl_seconds=600)
        try:
            other = Client(token=tok.token)
            self.assertEqual(other.desktop(self.d.id).refresh().id, self.d.id)
        finally:
            self.c.tokens.revoke(tok.info.id)
        link = self.d.console.create(view_only=True, ttl_seconds=120)
        self.assertTrue(link.url.startswith(self.c.http.url + "/console/" + self.d.id))
        self.assertIn(link.id, [t.id for t in self.d.console.list()])
        self.d.console.revoke(link.id)
        self.assertIsInstance(self.d.urls.list(), list)

    def test_pause_resume_wait(self):
        self.d.pause()
        self.assertEqual(self.d.wait_until("paused", timeout=120).state, "paused")
        self.d.resume()
        self.assertEqual(self.d.wait_until("running", timeout=120).state, "running")
        self.assertTrue(self.d.wait_ready(timeout=120).ready)
        started = time.monotonic()
        with self.assertRaises(BureauError):
            self.d.wait_until("hibernated", timeout=1, poll=0.2)
        self.assertLess(time.monotonic() - started, 10)


if __name__ == "__main__":
    unittest.main()
