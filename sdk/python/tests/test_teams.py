"""Offline tests of client.teams against a fake server."""

import json
import unittest

from bureau import Client, Conflict

from .fake import FakeBureau


class TestTeams(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "tok")

    def tearDown(self):
        self.fake.close()

    def test_create_list_members_delete(self):
        f = self.fake
        f.json("POST", "/api/v1/teams", 201, {"name": "ops", "role": "admin", "members": []})
        self.assertEqual(self.c.teams.create("ops")["role"], "admin")
        self.assertEqual(json.loads(f.seen[-1][3]), {"name": "ops"})
        f.json("GET", "/api/v1/teams", 200, {"teams": [{"name": "ops", "role": "admin", "members": 2}]})
        self.assertEqual([t["name"] for t in self.c.teams.list()], ["ops"])
        f.json("PUT", "/api/v1/teams/ops/members/bob%40example.com", 200, {"member": "bob@example.com", "role": "viewer"})
        self.assertEqual(self.c.teams.set_member("ops", "bob@example.com", "viewer")["role"], "viewer")
        self.assertEqual(json.loads(f.seen[-1][3]), {"role": "viewer"})
        f.json("DELETE", "/api/v1/teams/ops/members/bob%40example.com", 204, None)
        self.c.teams.remove_member("ops", "bob@example.com")
        f.json("DELETE", "/api/v1/teams/ops", 409, {"error": {"code": "busy", "message": "team ops owns desktops"}})
        with self.assertRaises(Conflict) as e:
            self.c.teams.delete("ops")
        self.assertIn("owns desktops", str(e.exception))


if __name__ == "__main__":
    unittest.main()
