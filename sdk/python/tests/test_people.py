"""Offline tests of people in the loop: control, help requests, approvals
and the approval policy, the SDK against the fake server."""

import json
import unittest
from urllib.parse import parse_qs, urlsplit

from bureau import (AlreadyDecided, Client, Conflict, Denied, Expired, Forbidden, HumanInControl, Invalid, Timeout)
from bureau import people
from bureau.models import ApprovalPolicy

from .fake import FakeBureau

D = "/api/v1/desktops/d1"
R = D + "/requests/req_1"

CONTROL = {"holder": "person", "person": "Dana", "by": "alice/tok_1", "since": "2026-01-02T03:04:05Z",
           "until": "2026-01-02T03:14:05Z", "idle_timeout_s": 600,
           "viewers": [{"session": "ct_1", "name": "Dana", "view_only": False, "since": "2026-01-02T03:00:00Z",
                        "holds_input": True}]}
HELP = {"id": "req_1", "desktop_id": "d1", "owner": "alice", "kind": "help", "status": "pending",
        "question": "Which account?", "choices": ["work", "personal"], "screenshot": True, "asked_by": "alice/tok_2",
        "asked_at": "2026-01-02T03:04:05Z", "expires_at": "2026-01-02T04:04:05Z", "gated": False}
ANSWERED = {**HELP, "status": "answered", "answer": "work", "choice": True, "decided_by": "console/ct_1",
            "decided_at": "2026-01-02T03:05:00Z"}
APPROVAL = {"id": "req_2", "desktop_id": "d1", "owner": "alice", "kind": "approval", "status": "approved",
            "question": "submit the order form", "action": {"kind": "explicit", "summary": "submit the order form",
                                                            "detail": {"total": 12}},
            "screenshot": False, "asked_by": "alice/tok_2", "asked_at": "2026-01-02T03:04:05Z",
            "expires_at": "2026-01-02T03:14:05Z", "gated": False, "decided_by": "alice/tok_1",
            "decided_at": "2026-01-02T03:04:30Z", "reason": "fine"}


class Base(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBureau()
        self.c = Client(self.fake.url, "bureau_test")
        self.p = self.c.people
        old = people._PACE
        people._PACE = 0
        self.addCleanup(setattr, people, "_PACE", old)

    def tearDown(self):
        self.fake.close()

    def sent(self, i=-1):
        method, path, _, body = self.fake.seen[i]
        u = urlsplit(path)
        return method, u.path, {k: v[0] for k, v in parse_qs(u.query).items()}, json.loads(body) if body else None

    def answers(self, method, path, *bodies):
        """Answers method path with bodies in turn, the last one again and again."""
        left = list(bodies)

        def route(_r, _b):
            b = left.pop(0) if len(left) > 1 else left[0]
            return 200, {"Content-Type": "application/json"}, json.dumps(b).encode()
        self.fake.routes[(method, path)] = route


class TestControl(Base):
    def test_show_take_and_release(self):
        self.fake.json("GET", D + "/control", 200, CONTROL)
        c = self.p.control("d1")
        self.assertEqual((c.holder, c.person, c.idle_timeout_s, c.viewers[0]["holds_input"]), ("person", "Dana", 600, True))
        self.fake.json("POST", D + "/control/take", 200, CONTROL)
        self.p.take_control(self.c.desktop("d1"), name="Dana", idle_timeout_s=900)
        self.assertEqual(self.sent()[1:], (D + "/control/take", {}, {"name": "Dana", "idle_timeout_s": 900}))
        self.p.take_control("d1")
        self.assertEqual(self.sent()[3], {})
        self.fake.json("POST", D + "/control/release", 200, {"holder": "agent", "since": "0001-01-01T00:00:00Z"})
        self.assertEqual(self.p.release_control("d1").holder, "agent")
        self.assertEqual(self.sent()[:2], ("POST", D + "/control/release"))

    def test_the_desktop_record_says_who_holds_input(self):
        self.fake.json("GET", D, 200, {"id": "d1", "state": "running", "control": {k: v for k, v in CONTROL.items() if k != "viewers"},
                                       "needs_help": True, "pending_approvals": 2})
        d = self.c.desktops.get("d1")
        self.assertEqual((d.control.holder, d.control.person, d.needs_help, d.pending_approvals), ("person", "Dana", True, 2))

    def test_input_while_a_person_holds_it(self):
        self.fake.json("POST", D + "/computer", 409, {"error": {
            "code": "human_in_control", "message": "Dana has taken over this desktop's mouse and keyboard",
            "holder": "person", "person": "Dana", "since": "2026-01-02T03:04:05Z"}}, {"Retry-After": "10"})
        with self.assertRaises(HumanInControl) as cm:
            self.c.desktop("d1").computer(action="left_click", coordinate=[1, 2])
        e = cm.exception
        self.assertIsInstance(e, Conflict)
        self.assertEqual((e.code, e.holder, e.person, e.since, e.retry_after),
                         ("human_in_control", "person", "Dana", "2026-01-02T03:04:05Z", 10.0))


class TestRequests(Base):
    def test_ask_help_waits_on_the_server(self):
        self.fake.json("POST", D + "/help", 201, ANSWERED)
        r = self.p.ask_help("d1", "Which account?", choices=["work", "personal"], screenshot=True, wait_s=120, timeout_s=600)
        self.assertEqual(self.sent()[3], {"question": "Which account?", "choices": ["work", "personal"], "screenshot": True,
                                          "wait_s": 120, "timeout_s": 600})
        self.assertEqual((r.status, r.answer, r.choice, r.pending), ("answered", "work", True, False))
        self.fake.json("POST", D + "/help", 201, HELP)
        r = self.p.ask_help("d1", "Anyone?")
        self.assertEqual(self.sent()[3], {"question": "Anyone?"})
        self.assertTrue(r.pending)
        self.assertEqual(len(self.fake.seen), 2)  # no wait asked: no poll

    def test_a_long_wait_goes_on_in_slices(self):
        self.patch_slice(2)
        self.fake.json("POST", D + "/help", 201, HELP)
        self.answers("GET", R, HELP, ANSWERED)
        r = self.p.ask_help("d1", "Which account?", wait_s=100)
        self.assertEqual(r.answer, "work")
        self.assertEqual(self.sent(0)[3]["wait_s"], 2)
        self.assertEqual([self.sent(i)[1:3] for i in (1, 2)], [(R, {"wait_s": "2"})] * 2)

    def patch_slice(self, n):
        old = people.WAIT_SLICE
        people.WAIT_SLICE = n
        self.addCleanup(setattr, people, "WAIT_SLICE", old)

    def test_get_and_wait_request(self):
        self.fake.json("GET", R, 200, HELP)
        self.assertTrue(self.p.get_request("d1", "req_1").pending)
        self.assertEqual(self.sent()[2], {})
        self.fake.json("GET", R, 200, ANSWERED)
        self.assertEqual(self.p.get_request("d1", "req_1", wait_s=30).answer, "work")
        self.assertEqual(self.sent()[2], {"wait_s": "30"})
        self.fake.json("GET", R, 200, HELP)
        with self.assertRaises(Timeout) as cm:
            self.p.wait_request("d1", "req_1", timeout=0)
        self.assertIn("req_1 is still pending", cm.exception.message)
        self.answers("GET", R, HELP, HELP, ANSWERED)
        self.fake.seen.clear()
        r = self.p.wait_request(self.c.desktop("d1"), self.p.get_request("d1", "req_1"), timeout=5000)
        self.assertEqual((r.status, r.answer), ("answered", "work"))
        self.assertEqual([s[1] for s in self.fake.seen], [R, R + "?wait_s=300", R + "?wait_s=300"])

    def test_request_approval(self):
        self.fake.json("POST", D + "/approvals", 201, APPROVAL)
        r = self.p.request_approval("d1", "submit the order form", detail={"total": 12}, screenshot=True, wait_s=300)
        self.assertEqual(self.sent()[3], {"action": "submit the order form", "detail": {"total": 12}, "screenshot": True, "wait_s": 300})
        self.assertTrue(r.approved)
        self.assertEqual((r.action["summary"], r.reason, r.decided_by), ("submit the order form", "fine", "alice/tok_1"))

    def test_lists(self):
        self.fake.json("GET", "/api/v1/requests", 200, {"requests": [HELP, APPROVAL]})
        self.fake.json("GET", D + "/requests", 200, {"requests": [HELP]})
        rs = self.p.list_requests(status="pending")
        self.assertEqual([r.kind for r in rs], ["help", "approval"])
        self.assertEqual(self.sent()[1:3], ("/api/v1/requests", {"status": "pending"}))
        self.p.list_requests("d1", kind="help")
        self.assertEqual(self.sent()[1:3], (D + "/requests", {"kind": "help"}))

    def test_answer_approve_deny_and_the_screenshot(self):
        self.fake.json("POST", R + "/answer", 200, ANSWERED)
        self.p.answer("d1", "req_1", choice="work")
        self.assertEqual(self.sent()[3], {"choice": "work"})
        self.p.answer("d1", "req_1", "my own words")
        self.assertEqual(self.sent()[3], {"answer": "my own words"})
        with self.assertRaises(ValueError):
            self.p.answer("d1", "req_1")
        self.fake.json("POST", D + "/requests/req_2/approve", 200, APPROVAL)
        self.fake.json("POST", D + "/requests/req_2/deny", 200, {**APPROVAL, "status": "denied"})
        self.p.approve("d1", "req_2", reason="fine")
        self.assertEqual(self.sent()[3], {"reason": "fine"})
        self.assertEqual(self.p.deny("d1", "req_2").status, "denied")
        self.assertEqual(self.sent()[3], {"reason": ""})
        self.fake.routes[("GET", R + "/screenshot")] = lambda _r, _b: (200, {"Content-Type": "image/png"}, b"\x89PNG")
        self.assertEqual(self.p.request_screenshot("d1", "req_1"), b"\x89PNG")

    def test_errors_of_deciding(self):
        for code, cls, extra in [("already_decided", AlreadyDecided, {"status": "answered"}), ("expired", Expired, {"status": "expired"}),
                                 ("wrong_kind", Conflict, {})]:
            self.fake.json("POST", R + "/answer", 409, {"error": {"code": code, "message": code, **extra}})
            with self.assertRaises(cls) as cm:
                self.p.answer("d1", "req_1", "x")
            self.assertEqual(cm.exception.code, code)
            if extra:
                self.assertEqual(cm.exception.request_status, extra["status"])
        self.assertEqual(cm.exception.__class__, Conflict)
        self.fake.json("POST", R + "/answer", 409, {"error": {"code": "already_decided", "message": "m", "status": "answered"}})
        with self.assertRaises(AlreadyDecided) as cm:
            self.p.answer("d1", "req_1", "x")
        self.assertEqual((cm.exception.status, cm.exception.request_status), (409, "answered"))
        self.fake.json("POST", R + "/answer", 422, {"error": {"code": "invalid", "message": "not a choice", "field": "choice"}})
        with self.assertRaises(Invalid) as cm:
            self.p.answer("d1", "req_1", choice="nope")
        self.assertEqual(cm.exception.field, "choice")

    def test_a_denied_gated_call(self):
        self.fake.json("POST", D + "/exec", 403, {"error": {
            "code": "denied", "message": "exec: rm -rf /home/agent/build was denied by alice/tok_1: not now (approval req_3)",
            "reason": "not now", "request_id": "req_3", "decided_by": "alice/tok_1"}})
        with self.assertRaises(Denied) as cm:
            self.c.desktop("d1").exec("rm -rf /home/agent/build")
        e = cm.exception
        self.assertIsInstance(e, Forbidden)
        self.assertEqual((e.reason, e.request_id, e.decided_by), ("not now", "req_3", "alice/tok_1"))


class TestPolicy(Base):
    POLICY = {"exec": ["rm\\s+-rf"], "file_delete": True, "keys": [{"key": "Return", "window_title": "Checkout"}],
              "clicks": [{"name": "Pay", "x": 900, "y": 600, "width": 200, "height": 60}], "timeout_s": 300}

    def test_get_set_and_delete(self):
        self.fake.json("GET", D + "/approval-policy", 200, {})
        self.assertIsNone(self.p.approval_policy("d1").exec)
        self.fake.json("PUT", D + "/approval-policy", 200, self.POLICY)
        p = self.p.set_approval_policy("d1", self.POLICY)
        self.assertEqual(self.sent()[3], self.POLICY)
        self.assertEqual((p.exec, p.file_delete, p.timeout_s), (["rm\\s+-rf"], True, 300))
        self.p.set_approval_policy("d1", ApprovalPolicy(urls=["^https://bank\\."]))
        self.assertEqual(self.sent()[3], {"urls": ["^https://bank\\."]})
        self.fake.routes[("DELETE", D + "/approval-policy")] = lambda _r, _b: (204, {}, b"")
        self.assertIsNone(self.p.delete_approval_policy("d1"))
        self.assertEqual(self.sent()[:2], ("DELETE", D + "/approval-policy"))
        self.fake.json("PUT", D + "/approval-policy", 422, {"error": {"code": "invalid", "message": "bad pattern", "field": "exec[0]"}})
        with self.assertRaises(Invalid) as cm:
            self.p.set_approval_policy("d1", {"exec": ["("]})
        self.assertEqual(cm.exception.field, "exec[0]")


if __name__ == "__main__":
    unittest.main()
