"""Offline tests of client.audit against a fake server."""

import json
import unittest
from datetime import datetime, timezone

from bureau import Client, Invalid
from bureau.audit import AuditPage

from .fake import FakeBureau


def entry(i):
    return {"id": "au_%d" % i, "at": "2026-01-02T03:04:05Z", "owner": "alice", "subject_owner": "alice", "token_id": "tok_1",
            "token_name": "ci", "person": "", "client_ip": "198.51.100.9", "method": "POST",
            "route": "POST /api/v1/desktops/:id/stop", "action": "desktop.stop", "object_type": "desktop", "object_id": "d1",
            "desktop_id": "d1", "status": 202, "error_code": "", "duration_ms": 3, "detail": ""}


class TestAudit(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "tok")

    def tearDown(self):
        self.fake.close()

    def test_page_filters_and_pages(self):
        f = self.fake

        def page(r, _b):
            second = "cursor=c1" in r.path
            body = {"entries": [entry(1)] if second else [entry(3), entry(2)], "next_cursor": "" if second else "c1"}
            return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()
        f.routes[("GET", "/api/v1/audit")] = page
        p = self.c.audit(desktop="d1", action="desktop.", outcome="ok", limit=2,
                         since=datetime(2026, 1, 1, tzinfo=timezone.utc))
        self.assertIsInstance(p, AuditPage)
        self.assertEqual([e["id"] for e in p.entries], ["au_3", "au_2"])
        self.assertEqual(p.next_cursor, "c1")
        self.assertEqual(f.seen[-1][1], "/api/v1/audit?desktop=d1&action=desktop.&outcome=ok&since=2026-01-01T00%3A00%3A00Z&limit=2")
        self.assertEqual([e["id"] for e in self.c.audit.all(limit=2, actor="tok_1")], ["au_3", "au_2", "au_1"])
        self.assertIn("cursor=c1", f.seen[-1][1])
        self.assertIn("actor=tok_1", f.seen[-1][1])

    def test_export_streams_ndjson(self):
        lines = (json.dumps(entry(2)) + "\n" + json.dumps(entry(1)) + "\n").encode()
        self.fake.routes[("GET", "/api/v1/audit")] = lambda _r, _b: (200, {"Content-Type": "application/x-ndjson"}, lines)
        self.assertEqual([e["id"] for e in self.c.audit.export(outcome="error")], ["au_2", "au_1"])
        path, headers = self.fake.seen[-1][1], self.fake.seen[-1][2]
        self.assertIn("format=ndjson", path)
        self.assertEqual(headers.get("Accept"), "application/x-ndjson")

    def test_invalid_filter(self):
        self.fake.json("GET", "/api/v1/audit", 422, {"error": {"code": "invalid", "message": "no", "field": "since"}})
        with self.assertRaises(Invalid) as e:
            self.c.audit(since="yesterday")
        self.assertEqual(e.exception.field, "since")


if __name__ == "__main__":
    unittest.main()
