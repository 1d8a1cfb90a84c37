"""Offline tests of a backup's files (client.backups.backup_files and co.) against a fake server."""

import json
import unittest

from bureau import Client, Conflict, NotFound
from bureau import models

from .fake import FakeBureau

LISTING = {"backup_id": "b1", "path": "/home/agent", "type": "dir", "size": 4096, "mode": "0755",
           "modified": "2026-11-28T10:00:00Z", "entries": [
               {"name": "latest", "path": "/home/agent/latest", "type": "symlink", "size": 9, "mode": "0777",
                "modified": "2026-11-28T10:00:00Z", "link_target": "notes.txt"},
               {"name": "notes.txt", "path": "/home/agent/notes.txt", "type": "file", "size": 12, "mode": "0644",
                "modified": "2026-11-28T09:59:01Z"}]}


class TestBackupFiles(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "bureau_test")

    def tearDown(self):
        self.fake.close()

    def test_list(self):
        self.fake.json("GET", "/api/v1/backups/b1/files", 200, LISTING)
        fs = self.c.backups.backup_files("b1", "/home/agent")
        self.assertIsInstance(fs, models.BackupFiles)
        self.assertEqual(fs.type, "dir")
        self.assertEqual([e.name for e in fs.entries], ["latest", "notes.txt"])
        self.assertIsInstance(fs.entries[0], models.BackupFile)
        self.assertEqual(fs.entries[0].link_target, "notes.txt")
        self.assertIn("path=%2Fhome%2Fagent", self.fake.seen[-1][1])
        self.c.backups.backup_files("b1")
        self.assertIn("path=%2Fhome", self.fake.seen[-1][1])

    def test_list_not_found(self):
        self.fake.json("GET", "/api/v1/backups/b1/files", 404, {"error": {"code": "not_found", "message": "no /home/x"}})
        with self.assertRaises(NotFound):
            self.c.backups.backup_files("b1", "/home/x")

    def test_content(self):
        self.fake.routes[("GET", "/api/v1/backups/b1/files/content")] = lambda _r, _b: (
            200, {"Content-Type": "application/octet-stream"}, b"hello notes\n")
        self.assertEqual(self.c.backups.backup_file_content("b1", "/home/agent/notes.txt"), b"hello notes\n")
        self.assertIn("path=%2Fhome%2Fagent%2Fnotes.txt", self.fake.seen[-1][1])

    def test_restore(self):
        out = {"backup_id": "b1", "desktop_id": "d1", "path": "/home/agent/src", "to": "/home/agent/old", "files": 3, "bytes": 10240}
        self.fake.json("POST", "/api/v1/backups/b1/files/restore", 200, out)
        r = self.c.backups.restore_backup_files("b1", "/home/agent/src", "dev-1", to="/home/agent/old", overwrite=True)
        self.assertIsInstance(r, models.BackupFilesRestored)
        self.assertEqual((r.files, r.bytes, r.to), (3, 10240, "/home/agent/old"))
        self.assertEqual(json.loads(self.fake.seen[-1][3]),
                         {"path": "/home/agent/src", "desktop": "dev-1", "to": "/home/agent/old", "overwrite": True})
        self.c.backups.restore_backup_files("b1", "/home/agent/src", "dev-1")
        self.assertEqual(json.loads(self.fake.seen[-1][3]), {"path": "/home/agent/src", "desktop": "dev-1"})

    def test_restore_exists(self):
        self.fake.json("POST", "/api/v1/backups/b1/files/restore", 409, {"error": {"code": "exists", "message": "exists"}})
        with self.assertRaises(Conflict):
            self.c.backups.restore_backup_files("b1", "/home/agent/notes.txt", "dev-1")


if __name__ == "__main__":
    unittest.main()
