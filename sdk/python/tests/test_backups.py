"""Offline tests of backups (client.backups, client.backup_targets) against a fake server."""

import json
import unittest

from bureau import BureauError, Client, Conflict, Desktop, Invalid, NotFound, Timeout
from bureau import models

from .fake import FakeBureau


def backup(state="running", **more):
    b = {"id": "b1", "desktop_id": "d1", "desktop_name": "agent-1", "owner": "alice", "target_id": "t1", "state": state,
         "kind": "full", "consistency": "filesystem", "disk_bytes": 20 << 30, "image": "debian", "vcpus": 2,
         "memory_mib": 4096, "bytes_read": 0, "read_total": 3 << 30, "chunks": 0, "chunks_new": 0, "bytes_new": 0,
         "started_at": "2025-03-04T05:06:07Z"}
    b.update(more)
    return b


SCHEDULE = {"desktop_id": "d1", "target_id": "t1", "every_minutes": 60, "keep_last": 0, "keep_hourly": 24, "keep_daily": 7,
            "keep_weekly": 4, "next_at": "2025-03-04T09:06:07Z", "updated_at": "2025-03-04T05:06:07Z", "updated_by": "alice/tok_1"}

TARGET = {"id": "t1", "name": "offsite", "kind": "s3", "created_at": "2025-03-04T05:06:07Z", "created_by": "root/tok_1",
          "s3": {"endpoint": "nas.lan:9000", "bucket": "bk", "access_key": "AKID", "insecure": True}}


class TestBackups(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "bureau_test")

    def tearDown(self):
        self.fake.close()

    def test_create_and_wait(self):
        self.fake.json("POST", "/api/v1/desktops/d1/backups", 202, backup())
        b = self.c.backups.create("d1", target="offsite")
        self.assertIsInstance(b, models.Backup)
        self.assertEqual((b.id, b.state, b.read_total), ("b1", "running", 3 << 30))
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"target": "offsite"})
        self.c.backups.create(self.c.desktop("d1"))  # a Desktop does as well; the only target
        self.assertEqual(self.fake.seen[-1][3], b"")

        answers = [backup(bytes_read=1 << 30), backup("complete", bytes_read=3 << 30, chunks=768, chunks_new=768,
                                                      finished_at="2025-03-04T05:10:19Z")]
        self.fake.routes[("GET", "/api/v1/backups/b1")] = lambda _r, _b: (
            200, {"Content-Type": "application/json"}, json.dumps(answers.pop(0) if len(answers) > 1 else answers[0]).encode())
        done = self.c.backups.wait(b, poll=0.01)
        self.assertEqual((done.state, done.chunks_new, done.finished_at), ("complete", 768, "2025-03-04T05:10:19Z"))

        self.fake.json("GET", "/api/v1/backups/b1", 200, backup("failed", error="read the data disk: input/output error"))
        with self.assertRaises(BureauError) as cm:
            self.c.backups.wait("b1", poll=0.01)
        self.assertEqual((cm.exception.code, cm.exception.message, cm.exception.state),
                         ("backup_failed", "read the data disk: input/output error", "failed"))
        self.fake.json("GET", "/api/v1/backups/b1", 200, backup())
        with self.assertRaises(Timeout):
            self.c.backups.wait("b1", timeout=0.05, poll=0.01)

        self.fake.json("POST", "/api/v1/desktops/d1/backups", 409, {"error": {"code": "conflict", "message": "a backup of desktop agent-1 is running"}})
        with self.assertRaises(Conflict):
            self.c.backups.create("d1")

    def test_lists(self):
        self.fake.json("GET", "/api/v1/backups", 200, {"backups": [backup("complete", id="b2", kind="incremental", parent="b1"), backup("complete")]})
        got = self.c.backups.list(desktop="d1", target="offsite")
        self.assertEqual([(b.id, b.kind, b.parent) for b in got], [("b2", "incremental", "b1"), ("b1", "full", None)])
        self.assertEqual(self.fake.seen[-1][1], "/api/v1/backups?desktop=d1&target=offsite")
        self.c.backups.list()
        self.assertEqual(self.fake.seen[-1][1], "/api/v1/backups")
        self.fake.json("GET", "/api/v1/desktops/d1/backups", 200, {"backups": [backup()]})
        self.assertEqual([b.state for b in self.c.backups.for_desktop("d1")], ["running"])
        self.fake.json("GET", "/api/v1/backups/b1", 200, backup(why_full="the desktop's first backup to target offsite"))
        self.assertEqual(self.c.backups.get("b1").why_full, "the desktop's first backup to target offsite")

    def test_restore_and_verify(self):
        self.fake.json("POST", "/api/v1/backups/b1/restore", 202, {"id": "d2", "name": "back", "owner": "alice", "state": "creating"})
        d = self.c.backups.restore("b1", "back")
        self.assertIsInstance(d, Desktop)
        self.assertEqual((d.id, d.state), ("d2", "creating"))
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"name": "back"})
        self.fake.json("POST", "/api/v1/backups/b1/restore", 202, {"id": "d1", "name": "work", "owner": "alice", "state": "reverting",
                                                                  "operation": "restore_data"})
        d = self.c.backups.restore_onto("b1", "work")
        self.assertEqual((d.id, d.state), ("d1", "reverting"))
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"desktop": "work", "replace_data_disk": True})
        self.fake.json("POST", "/api/v1/backups/b1/verify", 200, {"backup_id": "b1", "chunks": 768, "missing": [],
                                                                 "corrupt": ["chunks/ab/ab12"], "ok": False, "took_ms": 3240})
        check = self.c.backups.verify(models.Backup(id="b1"))
        self.assertIsInstance(check, models.BackupCheck)
        self.assertEqual((check.ok, check.corrupt, check.chunks), (False, ["chunks/ab/ab12"], 768))

    def test_delete_and_schedule(self):
        self.fake.routes[("DELETE", "/api/v1/backups/b1")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.backups.delete(models.Backup(id="b1")))
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", "/api/v1/backups/b1"))
        self.fake.json("DELETE", "/api/v1/backups/b2", 409, {"error": {"code": "conflict", "message": "backup b2 is running"}})
        with self.assertRaises(Conflict):
            self.c.backups.delete("b2")

        path = "/api/v1/desktops/d1/backup-schedule"
        self.fake.json("GET", path, 404, {"error": {"code": "not_found", "message": "desktop d1 has no backup schedule: not found"}})
        with self.assertRaises(NotFound):
            self.c.backups.schedule("d1")
        sched = dict(SCHEDULE, every_minutes=240, keep_hourly=0)
        self.fake.json("PUT", path, 200, sched)
        s = self.c.backups.set_schedule(self.c.desktop("d1"), target="offsite", every_minutes=240, keep_hourly=0)
        self.assertIsInstance(s, models.BackupSchedule)
        self.assertEqual((s.every_minutes, s.keep_hourly, s.keep_daily, s.next_at), (240, 0, 7, "2025-03-04T09:06:07Z"))
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"target": "offsite", "every_minutes": 240, "keep_hourly": 0})
        self.c.backups.set_schedule("d1")  # the defaults
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {})
        self.fake.json("PUT", path, 422, {"error": {"code": "invalid", "field": "every_minutes", "message": "every_minutes: from 1 to 10080 (a week)"}})
        with self.assertRaises(Invalid) as cm:
            self.c.backups.set_schedule("d1", every_minutes=0)
        self.assertEqual(cm.exception.field, "every_minutes")
        self.fake.json("GET", path, 200, sched)
        self.assertEqual(self.c.backups.schedule("d1").updated_by, "alice/tok_1")
        self.fake.routes[("DELETE", path)] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.backups.unschedule("d1"))
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", path))

    def test_targets(self):
        self.fake.json("POST", "/api/v1/backup-targets", 201, TARGET)
        t = self.c.backup_targets.add_s3("offsite", "nas.lan:9000", "bk", "AKID", "hunter2", region="eu", insecure=True)
        self.assertIsInstance(t.s3, models.S3Location)
        self.assertEqual((t.name, t.s3.bucket, t.s3.access_key), ("offsite", "bk", "AKID"))
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"name": "offsite", "kind": "s3", "s3": {
            "endpoint": "nas.lan:9000", "bucket": "bk", "access_key": "AKID", "secret_key": "hunter2", "region": "eu", "insecure": True}})
        self.c.backup_targets.add_dir("local", "/srv/backups")
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"name": "local", "kind": "dir", "dir": "/srv/backups"})
        self.fake.json("GET", "/api/v1/backup-targets", 200, {"targets": [TARGET]})
        self.assertEqual([x.name for x in self.c.backup_targets.list()], ["offsite"])
        self.fake.json("GET", "/api/v1/backup-targets/offsite", 200, TARGET)
        self.assertEqual(self.c.backup_targets.get("offsite").id, "t1")
        self.fake.routes[("DELETE", "/api/v1/backup-targets/t1")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.backup_targets.remove(t))
        self.assertEqual(self.fake.seen[-1][:2], ("DELETE", "/api/v1/backup-targets/t1"))


if __name__ == "__main__":
    unittest.main()
