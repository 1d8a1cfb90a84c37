"""Offline tests of recordings (client.recordings) against a fake server."""

import io
import json
import os
import tempfile
import unittest

from bureau import Client, Conflict, Invalid, NotFound
from bureau import models

from .fake import FakeBureau

R = "/api/v1/desktops/d1/recordings"
VIDEO = b"\x1aE\xdf\xa3 webm " + b"v" * (200 << 10)


def rec(rid, state="done", seconds=10, size=1000):
    r = {"id": rid, "desktop_id": "d1", "state": state, "actor": "alice/tok_1", "fps": 2, "max_seconds": 3600,
         "width": 1280, "height": 800, "frames": seconds * 2, "size_bytes": size, "started_at": "2025-03-04T05:06:07Z",
         "duration_ms": seconds * 1000}
    if state != "recording":
        r.update(ended_at="2025-03-04T05:06:17Z", ended_why="stopped by alice/tok_1", video_url=R + "/" + rid + "/video")
    return r


class TestRecordings(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "bureau_test")

    def tearDown(self):
        self.fake.close()

    def test_start(self):
        self.fake.json("POST", R, 201, rec("rec_000000000000000a", "recording", 0, 0))
        r = self.c.recordings.start("d1", fps=5, max_seconds=60)
        self.assertIsInstance(r, models.Recording)
        self.assertEqual((r.id, r.state, r.width, r.ended_at), ("rec_000000000000000a", "recording", 1280, None))
        self.assertEqual(self.fake.seen[-1][:2], ("POST", R))
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"fps": 5, "max_seconds": 60})
        self.assertEqual(self.fake.seen[-1][2]["Authorization"], "Bearer bureau_test")
        self.c.recordings.start(self.c.desktop("d1"))  # a Desktop does as well as its id; the server's defaults
        self.assertEqual(self.fake.seen[-1][3], b"")
        self.fake.json("POST", R, 422, {"error": {"code": "invalid", "message": "must be 1 to 10 frames a second", "field": "fps"}})
        with self.assertRaises(Invalid) as cm:
            self.c.recordings.start("d1", fps=30)
        self.assertEqual(cm.exception.field, "fps")
        self.fake.json("POST", R, 409, {"error": {"code": "conflict", "message": "a recording of this desktop is under way"}})
        with self.assertRaises(Conflict):
            self.c.recordings.start("d1")

    def test_list_get_delete(self):
        self.fake.json("GET", R, 200, {"recordings": [rec("rec_000000000000000a"), rec("rec_000000000000000b", "recording", 3, 0)]})
        got = self.c.recordings.list("d1")
        self.assertEqual([(r.id, r.state, r.duration_ms) for r in got],
                         [("rec_000000000000000a", "done", 10000), ("rec_000000000000000b", "recording", 3000)])
        self.assertEqual(got[0].video_url, R + "/rec_000000000000000a/video")
        self.fake.json("GET", R, 200, {"recordings": []})
        self.assertEqual(self.c.recordings.list("d1"), [])

        self.fake.json("GET", R + "/rec_000000000000000a", 200, rec("rec_000000000000000a"))
        self.assertEqual(self.c.recordings.get("d1", "rec_000000000000000a").size_bytes, 1000)
        with self.assertRaises(NotFound):
            self.c.recordings.get("d1", "rec_000000000000000f")

        self.fake.routes[("DELETE", R + "/rec_000000000000000a")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.recordings.delete("d1", got[0]))  # a Recording does as well as its id
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", R + "/rec_000000000000000a"))

    def test_stop(self):
        self.fake.json("GET", R, 200, {"recordings": [rec("rec_000000000000000a"), rec("rec_000000000000000b", "recording", 3, 0)]})
        self.fake.json("POST", R + "/rec_000000000000000b/stop", 200, rec("rec_000000000000000b", "done", 4, 2048))
        r = self.c.recordings.stop("d1")  # the one under way
        self.assertEqual((r.id, r.state, r.size_bytes), ("rec_000000000000000b", "done", 2048))
        self.assertEqual([s[:2] for s in self.fake.seen[-2:]], [("GET", R), ("POST", R + "/rec_000000000000000b/stop")])

        self.fake.json("POST", R + "/rec_000000000000000a/stop", 200, rec("rec_000000000000000a"))
        n = len(self.fake.seen)
        self.assertEqual(self.c.recordings.stop("d1", "rec_000000000000000a").state, "done")
        self.assertEqual([s[:2] for s in self.fake.seen[n:]], [("POST", R + "/rec_000000000000000a/stop")])

        self.fake.json("GET", R, 200, {"recordings": [rec("rec_000000000000000a")]})
        n = len(self.fake.seen)
        with self.assertRaises(NotFound) as cm:
            self.c.recordings.stop("d1")
        self.assertIn("under way", cm.exception.message)
        self.assertEqual([s[0] for s in self.fake.seen[n:]], ["GET"])

    def test_video_and_download(self):
        self.fake.routes[("GET", R + "/rec_000000000000000a/video")] = lambda _r, _b: (200, {"Content-Type": "video/webm"}, VIDEO)
        self.assertEqual(self.c.recordings.video("d1", "rec_000000000000000a"), VIDEO)
        self.assertEqual(self.fake.seen[-1][2]["Accept"], "video/webm")

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rec.webm")
            self.assertEqual(self.c.recordings.download("d1", "rec_000000000000000a", path), len(VIDEO))
            with open(path, "rb") as f:
                self.assertEqual(f.read(), VIDEO)
            buf = io.BytesIO()
            self.assertEqual(self.c.recordings.download("d1", "rec_000000000000000a", buf), len(VIDEO))
            self.assertEqual(buf.getvalue(), VIDEO)

            # Refused, or cut off half way: the file is as it was, and no part is left.
            self.fake.json("GET", R + "/rec_000000000000000b/video", 409, {"error": {"code": "conflict", "message": "the recording is not finished"}})
            with self.assertRaises(Conflict):
                self.c.recordings.download("d1", "rec_000000000000000b", os.path.join(d, "other.webm"))
            with self.assertRaises(Conflict):
                self.c.recordings.video("d1", "rec_000000000000000b")

            self.fake.server.handle_error = lambda *a: None  # the cut below is no error of the fake's

            def cut(handler, _b):
                handler.send_response(200)
                handler.send_header("Content-Type", "video/webm")
                handler.send_header("Content-Length", str(len(VIDEO)))
                handler.end_headers()
                handler.wfile.write(VIDEO[:1000])
                handler.wfile.flush()
                handler.close_connection = True
                raise ConnectionAbortedError  # ends the connection before the fake answers anything more
            self.fake.routes[("GET", R + "/rec_000000000000000c/video")] = cut
            with self.assertRaises(ConnectionError) as cm:
                self.c.recordings.download("d1", "rec_000000000000000c", path)
            self.assertIn("cut off after 1000 of", str(cm.exception))
            with open(path, "rb") as f:
                self.assertEqual(f.read(), VIDEO)
            self.assertEqual(os.listdir(d), ["rec.webm"])

    def test_keep_and_the_owners_routes(self):
        def patch(_handler, body):
            out = rec("rec_000000000000000a")
            out["kept"] = json.loads(body)["kept"]
            return 200, {"Content-Type": "application/json"}, json.dumps(out).encode()
        self.fake.routes[("PATCH", R + "/rec_000000000000000a")] = patch
        self.assertTrue(self.c.recordings.keep("d1", "rec_000000000000000a").kept)
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"kept": True})
        self.assertFalse(self.c.recordings.unkeep("d1", "rec_000000000000000a").kept)
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"kept": False})

        O = "/api/v1/recordings"
        gone = dict(rec("rec_000000000000000b"), kept=True, owner="alice", desktop_name="old", desktop_deleted=True,
                    video_url=O + "/rec_000000000000000b/video")
        self.fake.json("GET", O, 200, {"recordings": [gone], "size_bytes": 1000, "kept_size_bytes": 1000})
        got = self.c.recordings.list_all()
        self.assertEqual([(r.id, r.kept, r.desktop_deleted, r.desktop_name) for r in got],
                         [("rec_000000000000000b", True, True, "old")])
        self.fake.json("GET", O + "/rec_000000000000000b", 200, gone)
        self.assertTrue(self.c.recordings.get_by_id(got[0]).desktop_deleted)
        with self.assertRaises(NotFound):
            self.c.recordings.get_by_id("rec_000000000000000f")
        self.fake.routes[("GET", O + "/rec_000000000000000b/video")] = lambda _r, _b: (200, {"Content-Type": "video/webm"}, VIDEO)
        self.assertEqual(self.c.recordings.video_by_id("rec_000000000000000b"), VIDEO)
        buf = io.BytesIO()
        self.assertEqual(self.c.recordings.download_by_id("rec_000000000000000b", buf), len(VIDEO))
        self.assertEqual(buf.getvalue(), VIDEO)
        self.fake.routes[("DELETE", O + "/rec_000000000000000b")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.recordings.delete_by_id("rec_000000000000000b"))
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", O + "/rec_000000000000000b"))

    def test_delete_the_desktop_keeping_recordings(self):
        self.fake.json("GET", "/api/v1/desktops/d1", 200, {"id": "d1", "name": "one", "state": "running"})
        self.fake.json("DELETE", "/api/v1/desktops/d1", 200, {"desktop": {"id": "d1", "state": "deleted"}, "data_deleted": False})
        d = self.c.desktop("d1")
        d.delete(keep_recordings=True)
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", "/api/v1/desktops/d1?keep_recordings=true"))
        d.delete()
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", "/api/v1/desktops/d1"))


if __name__ == "__main__":
    unittest.main()
