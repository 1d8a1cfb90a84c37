"""Offline tests of webhooks: verify, and client.webhooks against a fake server."""

import base64
import hashlib
import hmac
import json
import time
import unittest

from bureau import Client, Invalid, WebhookVerificationError
from bureau.webhooks import verify

from .fake import FakeBureau

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def signed(secret, msg_id, ts, body):
    """A signature computed here, per the spec, independently of the SDK."""
    key = base64.b64decode(secret.split("_", 1)[1])
    return "v1," + base64.b64encode(hmac.new(key, b"%s.%d.%s" % (msg_id.encode(), ts, body), hashlib.sha256).digest()).decode()


class TestVerify(unittest.TestCase):
    body = b'{"type":"desktop.stopped","timestamp":"2026-01-02T03:04:05Z","data":{"owner":"alice","message":"stopped"}}'

    def headers(self, ts=None, sig=None, body=None):
        ts = int(time.time()) if ts is None else ts
        return {"Webhook-Id": "msg_1", "Webhook-Timestamp": str(ts),
                "Webhook-Signature": sig or signed(SECRET, "msg_1", ts, body or self.body)}

    def test_spec_vector(self):
        self.assertEqual(signed(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}'),
                         "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        h = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
             "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
        with self.assertRaises(WebhookVerificationError):  # years old
            verify(SECRET, h, b'{"test": 2432232314}')
        self.assertEqual(verify(SECRET, h, b'{"test": 2432232314}', tolerance_s=10 ** 10), {"test": 2432232314})

    def test_accepts_a_signed_message(self):
        msg = verify(SECRET, self.headers(), self.body)
        self.assertEqual(msg["type"], "desktop.stopped")
        # Among several signatures (a rotation), and as text.
        ts = int(time.time())
        both = "v1,AAAA " + signed(SECRET, "msg_1", ts, self.body)
        self.assertEqual(verify(SECRET, self.headers(ts, both), self.body.decode())["data"]["owner"], "alice")

    def test_rejects(self):
        ts = int(time.time())
        other = "whsec_" + base64.b64encode(b"x" * 32).decode()
        for name, headers, body in [
            ("forged", self.headers(sig=signed(other, "msg_1", ts, self.body), ts=ts), self.body),
            ("body changed", self.headers(), self.body.replace(b"stopped", b"started")),
            ("replayed", self.headers(ts=ts - 3600, sig=signed(SECRET, "msg_1", ts - 3600, self.body)), self.body),
            ("future", self.headers(ts=ts + 3600, sig=signed(SECRET, "msg_1", ts + 3600, self.body)), self.body),
            ("id changed", dict(self.headers(), **{"Webhook-Id": "msg_2"}), self.body),
            ("no signature", {"webhook-id": "msg_1", "webhook-timestamp": str(ts)}, self.body),
            ("v2 only", self.headers(sig=signed(SECRET, "msg_1", ts, self.body).replace("v1,", "v2,"), ts=ts), self.body),
        ]:
            with self.subTest(name), self.assertRaises(WebhookVerificationError):
                verify(SECRET, headers, body)


class TestWebhooksClient(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "tok")
        self.hook = {"id": "wh_1", "owner": "alice", "url": "https://h.example/", "description": "", "events": ["help.*"],
                     "all_owners": False, "enabled": True, "created_at": "2026-01-02T03:04:05Z", "created_by": "alice/t",
                     "failures": 0}

    def tearDown(self):
        self.fake.server.shutdown()

    def test_routes(self):
        f = self.fake
        f.json("POST", "/api/v1/webhooks", 201, dict(self.hook, secret="whsec_eA=="))
        made = self.c.webhooks.create("https://h.example/", ["help.*"], all_owners=True)
        self.assertEqual(made["secret"], "whsec_eA==")
        self.assertEqual(json.loads(f.seen[-1][3]), {"url": "https://h.example/", "events": ["help.*"], "description": "",
                                                      "all_owners": True})
        f.json("GET", "/api/v1/webhooks", 200, {"webhooks": [self.hook]})
        self.assertEqual(self.c.webhooks.list(owner="alice")[0]["id"], "wh_1")
        self.assertEqual(f.seen[-1][1], "/api/v1/webhooks?owner=alice")
        f.json("GET", "/api/v1/webhooks/wh_1", 200, self.hook)
        self.assertEqual(self.c.webhooks.get("wh_1")["url"], "https://h.example/")
        f.json("PATCH", "/api/v1/webhooks/wh_1", 200, self.hook)
        self.c.webhooks.update(self.hook, enabled=True)
        self.assertEqual(json.loads(f.seen[-1][3]), {"enabled": True})
        d = {"id": "whd_1", "webhook_id": "wh_1", "message_id": "msg_1", "event_type": "webhook.ping", "status": "pending",
             "attempts": 0, "created_at": "2026-01-02T03:04:05Z"}
        f.json("POST", "/api/v1/webhooks/wh_1/ping", 202, d)
        self.assertEqual(self.c.webhooks.ping("wh_1")["id"], "whd_1")
        f.json("GET", "/api/v1/webhooks/wh_1/deliveries", 200, {"deliveries": [d]})
        self.assertEqual(len(self.c.webhooks.deliveries("wh_1", status="failed", limit=5)), 1)
        self.assertIn("status=failed", f.seen[-1][1])
        f.json("GET", "/api/v1/webhooks/wh_1/deliveries/whd_1", 200, d)
        self.assertEqual(self.c.webhooks.delivery("wh_1", d)["message_id"], "msg_1")
        f.json("POST", "/api/v1/webhooks/wh_1/deliveries/whd_1/redeliver", 202, dict(d, id="whd_2"))
        self.assertEqual(self.c.webhooks.redeliver("wh_1", "whd_1")["id"], "whd_2")
        f.json("POST", "/api/v1/webhooks/wh_1/rotate-secret", 200, dict(self.hook, secret="whsec_eQ=="))
        self.assertEqual(self.c.webhooks.rotate_secret("wh_1")["secret"], "whsec_eQ==")
        f.routes[("DELETE", "/api/v1/webhooks/wh_1")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.c.webhooks.delete("wh_1"))
        f.json("POST", "/api/v1/webhooks", 422, {"error": {"code": "invalid", "message": "no", "field": "url"}})
        with self.assertRaises(Invalid) as e:
            self.c.webhooks.create("http://10.0.0.1/", ["*"])
        self.assertEqual(e.exception.field, "url")


if __name__ == "__main__":
    unittest.main()
