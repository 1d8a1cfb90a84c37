"""Offline tests of the step log (client.steps) against a fake server."""

import json
import unittest
from urllib.parse import parse_qs, urlsplit

from bureau import Client, Conflict, Invalid, NotFound, ServerError, Unauthorized, models

from .fake import FakeBureau

D = "/api/v1/desktops/d1"


def step(seq, kind="exec", input=None):
    return {"desktop_id": "d1", "seq": seq, "at": "2025-03-04T05:06:07Z", "duration_ms": 12, "actor": "alice/tok_1",
            "kind": kind, "input": input or {"cmd": "ls"}, "result": None, "status": 200,
            "thumbnail_before": True, "thumbnail_after": True}


def sse(*events):
    out = ": bureau step log of d1\n\n"
    for name, data in events:
        out += "event: %s\ndata: %s\n\n" % (name, json.dumps(data))
        out += ": keepalive\n\n"
    return out.encode()


class TestSteps(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "bureau_test")

    def tearDown(self):
        self.fake.close()

    def query(self):
        return {k: v[0] for k, v in parse_qs(urlsplit(self.fake.seen[-1][1]).query).items()}

    def test_list_and_get(self):
        self.fake.json("GET", D + "/steps", 200, {"steps": [step(4), step(5, "clipboard", {"chars": 3})]})
        got = self.c.steps.list("d1", after=3, limit=2)
        self.assertEqual([(s.seq, s.kind, s.input) for s in got], [(4, "exec", {"cmd": "ls"}), (5, "clipboard", {"chars": 3})])
        self.assertEqual(self.query(), {"after": "3", "limit": "2"})
        self.assertEqual(self.fake.seen[-1][2]["Authorization"], "Bearer bureau_test")
        self.c.steps.list(self.c.desktop("d1"))  # a Desktop does as well as its id
        self.assertEqual(self.query(), {"after": "0", "limit": "100"})

        self.fake.json("GET", D + "/steps/5", 200, step(5))
        self.assertEqual(self.c.steps.get("d1", 5).seq, 5)
        with self.assertRaises(NotFound):
            self.c.steps.get("d1", 6)
        self.fake.json("GET", D + "/steps", 422, {"error": {"code": "invalid", "message": "limit: must be 1 to 1000", "field": "limit"}})
        with self.assertRaises(Invalid) as cm:
            self.c.steps.list("d1", limit=5000)
        self.assertEqual(cm.exception.field, "limit")

    def test_follow(self):
        body = sse(("step", step(1)), ("step", step(2)), ("unauthorized", {"code": "unauthorized", "message": "token revoked"}))
        self.fake.routes[("GET", D + "/steps")] = lambda _r, _b: (200, {"Content-Type": "text/event-stream"}, body)
        got = []
        with self.assertRaises(Unauthorized) as cm:
            for s in self.c.steps.follow("d1", after=0):
                got.append(s.seq)
        self.assertEqual(got, [1, 2])
        self.assertEqual(cm.exception.message, "token revoked")
        self.assertEqual(self.query(), {"after": "0", "follow": "true"})
        self.assertEqual(self.fake.seen[-1][2]["Accept"], "text/event-stream")

        body2 = sse(("step", step(8)), ("error", {"message": "database is locked"}))
        self.fake.routes[("GET", D + "/steps")] = lambda _r, _b: (200, {"Content-Type": "text/event-stream"}, body2)
        it = self.c.steps.follow("d1", after=7)
        self.assertEqual(next(it).seq, 8)
        with self.assertRaises(ServerError) as cm:
            next(it)
        self.assertEqual(cm.exception.message, "database is locked")
        # Stopping early hangs up.
        it = self.c.steps.follow("d1")
        next(it)
        it.close()

    def test_thumbnail(self):
        self.fake.routes[("GET", D + "/steps/7/thumbnails/before")] = lambda _r, _b: (200, {"Content-Type": "image/jpeg"}, b"\xff\xd8jpeg")
        self.assertEqual(self.c.steps.thumbnail("d1", 7, "before"), b"\xff\xd8jpeg")
        with self.assertRaises(NotFound):
            self.c.steps.thumbnail("d1", 7)  # no "after" here
        self.assertEqual(self.fake.seen[-1][1], D + "/steps/7/thumbnails/after")
        n = len(self.fake.seen)
        with self.assertRaises(ValueError):
            self.c.steps.thumbnail("d1", 7, "during")
        self.assertEqual(len(self.fake.seen), n)

    def test_export_follows_next_after(self):
        pages = {
            "0": {"format": "openai", "desktop_id": "d1", "tools": [{"type": "computer_use_preview"}], "next_after": 2,
                  "input": [{"call": 1}, {"out": 1}, {"call": 2}, {"out": 2}]},
            "2": {"format": "openai", "desktop_id": "d1", "tools": [{"type": "computer_use_preview"}], "next_after": 3,
                  "input": [{"call": 3}, {"out": 3}]},
            "3": {"format": "openai", "desktop_id": "d1", "tools": [{"type": "computer_use_preview"}], "input": None},
        }
        queries = []

        def export(r, _b):
            q = {k: v[0] for k, v in parse_qs(urlsplit(r.path).query).items()}
            queries.append(q)
            return 200, {"Content-Type": "application/json"}, json.dumps(pages[q["after"]]).encode()
        self.fake.routes[("GET", D + "/steps/export")] = export
        doc = self.c.steps.export("d1", format="openai", images=False)
        self.assertEqual(doc, {"format": "openai", "desktop_id": "d1", "tools": [{"type": "computer_use_preview"}],
                               "input": [{"call": 1}, {"out": 1}, {"call": 2}, {"out": 2}, {"call": 3}, {"out": 3}]})
        self.assertEqual(queries, [{"format": "openai", "images": "false", "after": a} for a in ("0", "2", "3")])

        self.fake.json("GET", D + "/steps/export", 200, {"format": "bureau", "desktop_id": "d1", "steps": [step(1)]})
        doc = self.c.steps.export("d1")
        self.assertEqual([s["seq"] for s in doc["steps"]], [1])
        self.assertEqual(self.query(), {"format": "bureau", "after": "0"})  # images are in by default

    def test_revert(self):
        answer = {"desktop": {"id": "d1", "name": "agent-1", "state": "reverting"},
                  "snapshot": {"name": "clean", "created_at": "2025-03-04T05:00:00Z"}, "holds_through_step": 40}
        self.fake.json("POST", D + "/steps/42/revert", 202, answer)
        d = self.c.desktop("d1")
        r = self.c.steps.revert(d, 42)
        self.assertEqual((r["snapshot"]["name"], r["holds_through_step"]), ("clean", 40))
        self.assertEqual(d.state, "reverting")
        self.assertEqual(self.fake.seen[-1][:2], ("POST", D + "/steps/42/revert"))
        self.fake.json("POST", D + "/steps/1/revert", 409, {"error": {"code": "conflict", "message": "no snapshot of this desktop was taken before step 1 began"}})
        with self.assertRaises(Conflict):
            self.c.steps.revert("d1", 1)

    def test_checkpoint_policy(self):
        self.fake.json("GET", D + "/checkpoints", 200, {"every_steps": 0, "before": [], "memory": False, "keep": 5})
        p = self.c.steps.checkpoints(self.c.desktop("d1"))
        self.assertEqual((p.every_steps, p.before, p.memory, p.keep), (0, [], False, 5))
        self.fake.routes[("PUT", D + "/checkpoints")] = lambda _r, b: (200, {"Content-Type": "application/json"}, b)
        p = self.c.steps.set_checkpoints("d1", every_steps=10, before=("exec", "file_delete"), keep=3)
        self.assertEqual((p.every_steps, p.before, p.keep), (10, ["exec", "file_delete"], 3))
        method, _, _, body = self.fake.seen[-1]
        self.assertEqual((method, json.loads(body)), ("PUT", {"every_steps": 10, "before": ["exec", "file_delete"], "memory": False, "keep": 3}))
        self.fake.json("PUT", D + "/checkpoints", 422, {"error": {"code": "invalid", "message": 'before: unknown step kind "rm"', "field": "before"}})
        with self.assertRaises(Invalid) as cm:
            self.c.steps.set_checkpoints("d1", before=["rm"])
        self.assertEqual(cm.exception.field, "before")
        # A step says why its automatic checkpoint was not taken.
        self.assertEqual(models.Step.from_dict({**step(3), "checkpoint_error": "quota exceeded"}).checkpoint_error, "quota exceeded")


if __name__ == "__main__":
    unittest.main()
