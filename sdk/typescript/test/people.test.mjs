// Offline tests of people in the loop (control, help requests, approvals, the approval policy) against a fake server.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { AlreadyDecidedError, Bureau, BureauError, DeniedError, ExpiredError, HumanInControlError, TimeoutError } from "../dist/index.js";

const D = "/api/v1/desktops/d1";
const R = `${D}/requests/req_1`;
let server, url;
const routes = new Map();
const seen = [];

before(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method, url: req.url, body: body ? JSON.parse(body) : undefined });
      const u = new URL(req.url, "http://x");
      const route = routes.get(`${req.method} ${u.pathname}`);
      const [status, out, headers] = route ? route(seen.at(-1).body) : [404, { error: { code: "not_found", message: "no route" } }];
      if (out instanceof Uint8Array) {
        res.writeHead(status, { "Content-Type": "image/png" });
        res.end(out);
        return;
      }
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(status === 204 ? undefined : JSON.stringify(out));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

const json = (method, path, status, obj, headers) => routes.set(`${method} ${path}`, () => [status, obj, headers]);
/** Answers method path with bodies in turn, the last one again and again. */
const answers = (method, path, ...bodies) => routes.set(`${method} ${path}`, () => [200, bodies.length > 1 ? bodies.shift() : bodies[0]]);
const last = (i = -1) => {
  const s = seen.at(i);
  const u = new URL(s.url, "http://x");
  return { method: s.method, path: u.pathname, query: Object.fromEntries(u.searchParams), body: s.body };
};
const client = () => new Bureau({ url, token: "bureau_test" });
const people = () => {
  const p = client().people;
  p.pace = 0;
  return p;
};
const rejection = (p) => p.then(() => null, (e) => e);

const CONTROL = { holder: "person", person: "Dana", by: "alice/tok_1", since: "2026-01-02T03:04:05Z", until: "2026-01-02T03:14:05Z", idle_timeout_s: 600,
  viewers: [{ session: "ct_1", name: "Dana", view_only: false, since: "2026-01-02T03:00:00Z", holds_input: true }] };
const HELP = { id: "req_1", desktop_id: "d1", owner: "alice", kind: "help", status: "pending", question: "Which account?", choices: ["work", "personal"],
  screenshot: true, asked_by: "alice/tok_2", asked_at: "2026-01-02T03:04:05Z", expires_at: "2026-01-02T04:04:05Z", gated: false };
const ANSWERED = { ...HELP, status: "answered", answer: "work", choice: true, decided_by: "console/ct_1", decided_at: "2026-01-02T03:05:00Z" };
const APPROVAL = { id: "req_2", desktop_id: "d1", owner: "alice", kind: "approval", status: "approved", question: "submit the order form",
  action: { kind: "explicit", summary: "submit the order form", detail: { total: 12 } }, screenshot: false, asked_by: "alice/tok_2",
  asked_at: "2026-01-02T03:04:05Z", expires_at: "2026-01-02T03:14:05Z", gated: false, decided_by: "alice/tok_1", reason: "fine" };

describe("control", () => {
  test("show, take and release", async () => {
    json("GET", `${D}/control`, 200, CONTROL);
    const c = await people().control("d1");
    assert.deepEqual([c.holder, c.person, c.viewers[0].holds_input], ["person", "Dana", true]);
    json("POST", `${D}/control/take`, 200, CONTROL);
    await people().takeControl(client().desktop("d1"), { name: "Dana", idleTimeoutS: 900 });
    assert.deepEqual([last().path, last().body], [`${D}/control/take`, { name: "Dana", idle_timeout_s: 900 }]);
    await people().takeControl("d1");
    assert.deepEqual(last().body, {});
    json("POST", `${D}/control/release`, 200, { holder: "agent", since: "0001-01-01T00:00:00Z" });
    assert.equal((await people().releaseControl("d1")).holder, "agent");
  });
  test("input while a person holds it rejects with HumanInControlError", async () => {
    json("POST", `${D}/computer`, 409, { error: { code: "human_in_control", message: "Dana has taken over", holder: "person", person: "Dana", since: "2026-01-02T03:04:05Z" } }, { "Retry-After": "10" });
    const e = await rejection(client().desktop("d1").computer([{ action: "left_click", coordinate: [1, 2] }]));
    assert.ok(e instanceof HumanInControlError && e instanceof BureauError);
    assert.deepEqual([e.status, e.code, e.holder, e.person, e.since, e.retryAfter], [409, "human_in_control", "person", "Dana", "2026-01-02T03:04:05Z", 10]);
  });
});

describe("requests", () => {
  test("askHelp waits on the server, then in slices", async () => {
    json("POST", `${D}/help`, 201, ANSWERED);
    const r = await people().askHelp("d1", "Which account?", { choices: ["work", "personal"], screenshot: true, waitS: 120, timeoutS: 600 });
    assert.deepEqual(last().body, { question: "Which account?", choices: ["work", "personal"], screenshot: true, wait_s: 120, timeout_s: 600 });
    assert.deepEqual([r.status, r.answer], ["answered", "work"]);
    json("POST", `${D}/help`, 201, HELP);
    const n = seen.length;
    assert.equal((await people().askHelp("d1", "Anyone?")).status, "pending");
    assert.deepEqual([last().body, seen.length], [{ question: "Anyone?" }, n + 1]);
    // Past a slice: the POST waits 240 s at most, GETs wait on.
    answers("GET", R, HELP, ANSWERED);
    assert.equal((await people().askHelp("d1", "Which account?", { waitS: 600 })).answer, "work");
    assert.deepEqual([last(-3).body.wait_s, last(-2).path, last(-2).query, last().query], [240, R, { wait_s: "240" }, { wait_s: "240" }]);
  });
  test("getRequest and waitRequest", async () => {
    json("GET", R, 200, HELP);
    assert.equal((await people().getRequest("d1", "req_1")).status, "pending");
    assert.deepEqual(last().query, {});
    json("GET", R, 200, ANSWERED);
    await people().getRequest("d1", HELP, { waitS: 30 });
    assert.deepEqual(last().query, { wait_s: "30" });
    json("GET", R, 200, HELP);
    const e = await rejection(people().waitRequest("d1", "req_1", { timeoutMs: 0 }));
    assert.ok(e instanceof TimeoutError && /req_1 is still pending/.test(e.message));
    answers("GET", R, HELP, APPROVAL);
    assert.equal((await people().waitRequest("d1", "req_1", { timeoutMs: 5_000_000 })).status, "approved");
  });
  test("requestApproval", async () => {
    json("POST", `${D}/approvals`, 201, APPROVAL);
    const r = await people().requestApproval("d1", "submit the order form", { detail: { total: 12 }, screenshot: true, waitS: 200 });
    assert.deepEqual(last().body, { action: "submit the order form", detail: { total: 12 }, screenshot: true, wait_s: 200 });
    assert.deepEqual([r.status, r.action.summary, r.reason], ["approved", "submit the order form", "fine"]);
  });
  test("lists", async () => {
    json("GET", "/api/v1/requests", 200, { requests: [HELP, APPROVAL] });
    json("GET", `${D}/requests`, 200, { requests: [HELP] });
    assert.deepEqual((await people().listRequests(null, { status: "pending" })).map((r) => r.kind), ["help", "approval"]);
    assert.deepEqual([last().path, last().query], ["/api/v1/requests", { status: "pending" }]);
    await people().listRequests("d1", { kind: "help" });
    assert.deepEqual([last().path, last().query], [`${D}/requests`, { kind: "help" }]);
  });
  test("answer, approve, deny and the screenshot", async () => {
    json("POST", `${R}/answer`, 200, ANSWERED);
    await people().answer("d1", "req_1", { choice: "work" });
    assert.deepEqual(last().body, { choice: "work" });
    await people().answer("d1", "req_1", "my own words");
    assert.deepEqual(last().body, { answer: "my own words" });
    json("POST", `${D}/requests/req_2/approve`, 200, APPROVAL);
    json("POST", `${D}/requests/req_2/deny`, 200, { ...APPROVAL, status: "denied" });
    await people().approve("d1", APPROVAL, "fine");
    assert.deepEqual(last().body, { reason: "fine" });
    assert.equal((await people().deny("d1", "req_2")).status, "denied");
    assert.deepEqual(last().body, { reason: "" });
    routes.set(`GET ${R}/screenshot`, () => [200, new Uint8Array([0x89, 0x50])]);
    assert.deepEqual([...(await people().requestScreenshot("d1", "req_1"))], [0x89, 0x50]);
  });
  test("errors of deciding and a denied gated call", async () => {
    json("POST", `${R}/answer`, 409, { error: { code: "already_decided", message: "already answered", status: "answered" } });
    let e = await rejection(people().answer("d1", "req_1", "x"));
    assert.ok(e instanceof AlreadyDecidedError && e.requestStatus === "answered");
    json("POST", `${R}/answer`, 409, { error: { code: "expired", message: "expired", status: "expired" } });
    e = await rejection(people().answer("d1", "req_1", "x"));
    assert.ok(e instanceof ExpiredError && e.requestStatus === "expired");
    json("POST", `${R}/answer`, 409, { error: { code: "wrong_kind", message: "an approval" } });
    e = await rejection(people().answer("d1", "req_1", "x"));
    assert.ok(e instanceof BureauError && !(e instanceof AlreadyDecidedError) && e.code === "wrong_kind");
    json("POST", `${D}/exec`, 403, { error: { code: "denied", message: "exec: rm -rf build was denied", reason: "not now", request_id: "req_3", decided_by: "alice/tok_1" } });
    e = await rejection(client().desktop("d1").exec("rm -rf build"));
    assert.ok(e instanceof DeniedError);
    assert.deepEqual([e.status, e.reason, e.requestId, e.decidedBy], [403, "not now", "req_3", "alice/tok_1"]);
  });
});

describe("approval policy", () => {
  test("get, set and delete", async () => {
    const policy = { exec: ["rm\\s+-rf"], file_delete: true, keys: [{ key: "Return", window_title: "Checkout" }], clicks: [{ name: "Pay", x: 900, y: 600, width: 200, height: 60 }], timeout_s: 300 };
    json("GET", `${D}/approval-policy`, 200, {});
    assert.deepEqual(await people().approvalPolicy("d1"), {});
    json("PUT", `${D}/approval-policy`, 200, policy);
    assert.deepEqual(await people().setApprovalPolicy("d1", policy), policy);
    assert.deepEqual([last().method, last().body], ["PUT", policy]);
    json("DELETE", `${D}/approval-policy`, 204, null);
    await people().deleteApprovalPolicy("d1");
    assert.deepEqual([last().method, last().path], ["DELETE", `${D}/approval-policy`]);
    json("PUT", `${D}/approval-policy`, 422, { error: { code: "invalid", message: "bad pattern", field: "exec[0]" } });
    const e = await rejection(people().setApprovalPolicy("d1", { exec: ["("] }));
    assert.deepEqual([e.status, e.field], [422, "exec[0]"]);
  });
});
