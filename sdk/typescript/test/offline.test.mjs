// Offline tests: the SDK against a fake server (no bureau, no desktop).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { AnthropicComputer, Bureau, BureauError, EXCLUDED, NotReadyError, OPERATIONS, OpenAIComputer, parseSSE, TimeoutError } from "../dist/index.js";

const D = "/api/v1/desktops/d1";
const PNG = Buffer.from("\x89PNG fake").toString("base64");
let server, url;
const routes = new Map();
const seen = [];

before(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const route = routes.get(`${req.method} ${req.url.split("?")[0]}`);
      const [status, headers, out] = route ? route(req, body) : [404, { "Content-Type": "application/json" }, JSON.stringify({ error: { code: "not_found", message: "no route" } })];
      res.writeHead(status, headers);
      res.end(out);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

const json = (method, path, status, obj, headers = {}) =>
  routes.set(`${method} ${path}`, () => [status, { "Content-Type": "application/json", ...headers }, JSON.stringify(obj)]);

describe("errors", () => {
  test("an error answer rejects with the API's code, message, field, state and Retry-After", async () => {
    const b = new Bureau({ url, token: "bureau_test" });
    for (const [status, code] of [[401, "unauthorized"], [404, "not_found"], [409, "invalid_state"], [422, "invalid"], [429, "rate_limited"], [503, "unavailable"]]) {
      json("GET", D, status, { error: { code, message: `m ${code}`, field: "f", state: "paused" } }, { "Retry-After": "7" });
      const e = await b.desktops.get("d1").then(() => null, (e) => e);
      assert.ok(e instanceof BureauError);
      assert.deepEqual([e.status, e.code, e.message, e.field, e.state, e.retryAfter], [status, code, `m ${code}`, "f", "paused", 7]);
    }
    assert.equal(seen.at(-1).headers.authorization, "Bearer bureau_test");
  });
  test("a non-JSON error keeps its text; ids are escaped", async () => {
    routes.set(`GET ${D}`, () => [502, { "Content-Type": "text/plain" }, "upstream down"]);
    const e = await new Bureau({ url }).desktops.get("d1").then(() => null, (e) => e);
    assert.equal(e.status, 502);
    assert.match(e.message, /upstream down/);
    json("GET", "/api/v1/desktops/a%2Fb", 200, { id: "a/b", state: "running" });
    assert.equal((await new Bureau({ url }).desktops.get("a/b")).state, "running");
  });
});

describe("streams", () => {
  test("server-sent events are parsed as they come; comments are skipped", async () => {
    const raw = ': hello\n\nevent: stdout\ndata: {"data":"a"}\n\n: keepalive\n\ndata: line1\r\ndata: line2\nid: 9\n\n';
    const body = new ReadableStream({ start(c) { for (const ch of raw.match(/.{1,7}/gs)) c.enqueue(new TextEncoder().encode(ch)); c.close(); } });
    const evs = [];
    for await (const e of parseSSE(body)) evs.push(e);
    assert.deepEqual(evs, [{ event: "stdout", data: '{"data":"a"}', id: undefined }, { event: "message", data: "line1\nline2", id: "9" }]);
  });
});

describe("files", () => {
  test("uploads stream from a ReadableStream; downloads stream", async () => {
    routes.set(`PUT ${D}/files`, (_r, body) => [201, { "Content-Type": "application/json" }, JSON.stringify({ path: "/home/agent/x", size: body.length })]);
    const chunks = Array.from({ length: 50 }, (_, i) => new Uint8Array(1000).fill(i));
    const stream = new ReadableStream({ pull(c) { const n = chunks.shift(); n ? c.enqueue(n) : c.close(); } });
    const d = new Bureau({ url }).desktop("d1");
    assert.equal((await d.files.write("x", stream)).size, 50000);
    assert.equal(seen.at(-1).headers["transfer-encoding"], "chunked");
    assert.match(seen.at(-1).url, /path=x/);
    routes.set(`GET ${D}/files`, () => [200, { "Content-Type": "application/octet-stream" }, Buffer.alloc(200000, "z")]);
    let n = 0;
    for await (const c of await d.files.download("x")) n += c.length;
    assert.equal(n, 200000);
  });
});

describe("adapters", () => {
  const sent = [];
  before(() => {
    routes.set(`POST ${D}/computer`, (_r, body) => {
      const req = JSON.parse(body);
      sent.push(req);
      const a = req.action ?? req.type ?? req.actions?.[0]?.type;
      if (a === "bogus") return [422, { "Content-Type": "application/json" }, JSON.stringify({ error: { code: "invalid", message: "action: unknown action", field: "action" } })];
      const res = { results: [{ action: a, duration_ms: 1 }], display: req.display, screen: { width: 1920, height: 1200 } };
      if (a === "screenshot" || a === "zoom") res.results[0].image = { media_type: "image/png", data: PNG, width: 1, height: 1 };
      if (a === "cursor_position") res.results[0].cursor = { x: 3, y: 4 };
      if (req.screenshot) res.screenshot = { media_type: "image/png", data: PNG, width: 1, height: 1 };
      return [200, { "Content-Type": "application/json" }, JSON.stringify(res)];
    });
  });
  test("Anthropic: tool_use in, tool_result out", async () => {
    const tool = new AnthropicComputer(new Bureau({ url }).desktop("d1"), [1024, 640]);
    assert.deepEqual(tool.definition(), { type: "computer_20251124", name: "computer", display_width_px: 1024, display_height_px: 640, enable_zoom: true });
    let r = await tool.run({ type: "tool_use", id: "t1", name: "computer", input: { action: "left_click", coordinate: [5, 6], text: "shift" } });
    assert.deepEqual(sent.at(-1), { action: "left_click", coordinate: [5, 6], text: "shift", display: { width: 1024, height: 640 }, screenshot: true });
    assert.deepEqual(r, { type: "tool_result", tool_use_id: "t1", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }] });
    r = await tool.run({ id: "t2", input: { action: "zoom", region: [0, 0, 10, 10] } });
    assert.equal(sent.at(-1).screenshot, undefined);
    assert.equal(r.content[0].source.data, PNG);
    assert.deepEqual((await tool.run({ id: "t3", input: { action: "cursor_position" } })).content, [{ type: "text", text: "X=3,Y=4" }]);
    assert.deepEqual(await tool.run({ id: "t4", input: { action: "bogus" } }), { type: "tool_result", tool_use_id: "t4", is_error: true, content: [{ type: "text", text: "action: unknown action" }] });
    assert.equal(new AnthropicComputer(null, [1, 1], "computer_20250124").definition().enable_zoom, undefined);
  });
  test("OpenAI: computer_call in, computer_call_output out", async () => {
    const tool = new OpenAIComputer(new Bureau({ url }).desktop("d1"), [1024, 640]);
    const out = await tool.run({ type: "computer_call", call_id: "c1", actions: [{ type: "click", x: 1, y: 2, button: "left", keys: ["SHIFT"] }, { type: "scroll", x: 1, y: 1, scroll_y: 300 }], pending_safety_checks: [{ id: "s1" }] });
    assert.deepEqual(sent.at(-1).actions, [{ type: "click", x: 1, y: 2, button: "left", keys: ["SHIFT"] }, { type: "scroll", x: 1, y: 1, scroll_y: 300, scroll_x: 0 }]);
    assert.deepEqual(out, { type: "computer_call_output", call_id: "c1", output: { type: "computer_screenshot", image_url: `data:image/png;base64,${PNG}` }, acknowledged_safety_checks: [{ id: "s1" }] });
    await tool.run({ call_id: "c2", action: { type: "keypress", keys: ["CTRL", "C"] } });
    assert.equal(sent.at(-1).type, "keypress");
    await assert.rejects(tool.run({ call_id: "c3" }), BureauError);
  });
});

describe("hosts", () => {
  const host = { name: "node-2", uri: "qemu+ssh://bureau@node-2/system", labels: { zone: "eu" }, state: "up", hostname: "node-2.lan", libvirt_version: "10.0.0",
    accelerator: "kvm", cpus: 16, memory_mib: 64000, free_memory_mib: 60000, disk_mib: 953869, free_disk_mib: 402113,
    desktops: 3, committed_memory_mib: 12288, last_seen_at: "2025-01-02T03:04:05Z", created_at: "2025-01-02T03:04:05Z" };
  test("list, get, add, remove", async () => {
    const b = new Bureau({ url, token: "bureau_admin" });
    const local = { name: "local", uri: "qemu:///system", labels: {}, state: "connecting", hostname: "", libvirt_version: "", accelerator: "", cpus: 0, memory_mib: 0, free_memory_mib: 0,
      disk_mib: 0, free_disk_mib: 0, desktops: 0, committed_memory_mib: 0, created_at: "2025-01-01T00:00:00Z" };
    json("GET", "/api/v1/hosts", 200, { hosts: [local, host] });
    assert.deepEqual(await b.hosts.list(), [local, host]);
    json("GET", "/api/v1/hosts/node-2", 200, host);
    assert.deepEqual(await b.hosts.get("node-2"), host);
    const got = [];
    routes.set("POST /api/v1/hosts", (req, body) => {
      got.push([req.headers["content-type"], JSON.parse(body)]);
      return [201, { "Content-Type": "application/json" }, JSON.stringify(host)];
    });
    assert.deepEqual(await b.hosts.add("node-2", "qemu+ssh://bureau@node-2/system", { zone: "eu" }), host);
    await b.hosts.add("node-3", "qemu+tls://node-3/system");
    await b.hosts.add("node-4", "qemu+tcp://node-4:16509/system", undefined,
      { ssh_address: "root@node-4:2222", ssh_host_key: "ssh-ed25519 AAAA", bridge: "bureau1", subnet: "10.121.0.0/16" });
    assert.deepEqual(got, [["application/json", { name: "node-2", uri: "qemu+ssh://bureau@node-2/system", labels: { zone: "eu" } }],
      ["application/json", { name: "node-3", uri: "qemu+tls://node-3/system" }],
      ["application/json", { name: "node-4", uri: "qemu+tcp://node-4:16509/system", ssh_address: "root@node-4:2222",
        ssh_host_key: "ssh-ed25519 AAAA", bridge: "bureau1", subnet: "10.121.0.0/16" }]]);
    json("GET", "/api/v1/hosts", 200, { hosts: [local], ssh_public_key: "ssh-ed25519 BBBB bureau" });
    assert.equal(await b.hosts.sshPublicKey(), "ssh-ed25519 BBBB bureau");
    routes.set("DELETE /api/v1/hosts/node-2", () => [204, {}, ""]);
    assert.equal(await b.hosts.remove("node-2"), undefined);
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", "/api/v1/hosts/node-2"]);
  });
  test("refusals carry the API's code and field", async () => {
    const b = new Bureau({ url, token: "bureau_admin" });
    json("POST", "/api/v1/hosts", 422, { error: { code: "host_unreachable", field: "uri", message: "host unreachable: qemu+ssh://h/system: dial tcp: connection refused" } });
    const e = await b.hosts.add("h", "qemu+ssh://h/system").then(() => null, (e) => e);
    assert.ok(e instanceof BureauError);
    assert.deepEqual([e.status, e.code, e.field], [422, "host_unreachable", "uri"]);
    assert.match(e.message, /connection refused/);
    json("DELETE", "/api/v1/hosts/local", 409, { error: { code: "in_use", message: "host in use" } });
    const inUse = await b.hosts.remove("local").then(() => null, (e) => e);
    assert.deepEqual([inUse.status, inUse.code], [409, "in_use"]);
    json("GET", "/api/v1/hosts", 403, { error: { code: "forbidden", message: "this needs an admin token" } });
    const denied = await b.hosts.list().then(() => null, (e) => e);
    assert.deepEqual([denied.status, denied.code], [403, "forbidden"]);
  });
});

describe("operations table", () => {
  test("every entry is called from the source and every call is an entry", () => {
    const src = readdirSync(new URL("../src", import.meta.url)).filter((f) => f.endsWith(".ts") && f !== "operations.ts")
      .map((f) => readFileSync(new URL(`../src/${f}`, import.meta.url), "utf8")).join("\n");
    const used = new Set([...src.matchAll(/(?:call|open|op)(?:<[^>]*>)?\(\s*"([A-Za-z]+)"/g)].map((m) => m[1]));
    assert.deepEqual([...used].filter((o) => !(o in OPERATIONS)), [], "calls of operations not in the table");
    assert.deepEqual(Object.keys(OPERATIONS).filter((o) => !used.has(o)), [], "operations in the table no method calls");
    assert.deepEqual(Object.keys(OPERATIONS).filter((o) => o in EXCLUDED), []);
  });
});

describe("placement", () => {
  test("create sends placement labels, and a 507 capacity names the hosts refused", async () => {
    const b = new Bureau({ url, token: "bureau_test" });
    const got = [];
    routes.set("POST /api/v1/desktops", (req, body) => {
      got.push(JSON.parse(body));
      return [202, { "Content-Type": "application/json" }, JSON.stringify({ id: "d1", state: "creating", host: "gpu-1" })];
    });
    const d = await b.desktops.create({ name: "work", placement: { labels: { gpu: "a100", zone: "eu" } } });
    assert.equal(d.id, "d1");
    await b.desktops.create({ name: "plain" });
    assert.deepEqual(got, [{ name: "work", placement: { labels: { gpu: "a100", zone: "eu" } } }, { name: "plain" }]);

    json("POST", "/api/v1/desktops", 507, { error: { code: "insufficient_capacity", message: "no host can take it (local: labels: no gpu; gpu-1: unreachable: connection refused)" } });
    const e = await b.desktops.create({ name: "work", placement: { labels: { gpu: "a100" } } }).then(() => null, (e) => e);
    assert.ok(e instanceof BureauError);
    assert.deepEqual([e.status, e.code], [507, "insufficient_capacity"]);
    assert.match(e.message, /gpu-1: unreachable/);
  });
});

describe("migration", () => {
  test("migrate posts the host and returns the desktop; cancelMigration deletes; refusals carry the code", async () => {
    const b = new Bureau({ url, token: "bureau_admin" });
    const got = [];
    routes.set(`POST ${D}/migrate`, (req, body) => {
      got.push(JSON.parse(body));
      return [202, { "Content-Type": "application/json" }, JSON.stringify({ id: "d1", state: "migrating", host: "local", operation_step: "to two: disks" })];
    });
    const d = await b.desktops.migrate("d1", "two");
    assert.deepEqual([d.id, d.state, d.data.operation_step], ["d1", "migrating", "to two: disks"]);
    assert.deepEqual(got, [{ host: "two" }]);
    assert.equal(seen.at(-1).headers["content-type"], "application/json");

    json("DELETE", `${D}/migrate`, 202, { cancelling: true });
    assert.equal(await b.desktops.cancelMigration("d1"), undefined);
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", `${D}/migrate`]);
    json("DELETE", `${D}/migrate`, 409, { error: { code: "conflict", message: "the desktop is not migrating" } });
    const e = await b.desktops.cancelMigration("d1").then(() => null, (e) => e);
    assert.deepEqual([e.status, e.code, e.message], [409, "conflict", "the desktop is not migrating"]);
    json("POST", `${D}/migrate`, 422, { error: { code: "invalid", field: "host", message: "desktop d1 already runs on host two" } });
    const inv = await b.desktops.migrate("d1", "two").then(() => null, (e) => e);
    assert.deepEqual([inv.status, inv.code, inv.field], [422, "invalid", "host"]);
  });
});

describe("readiness", () => {
  const booting = { id: "d1", name: "work", state: "running", ready: false, up: "agent", waiting_for: "session" };
  const ready = { id: "d1", name: "work", state: "running", ready: true, ready_at: "2026-01-02T03:04:05Z", up: "session" };
  // GET D answers bodies in turn (the last one again and again); returns the URLs it was asked.
  const answers = (...bodies) => {
    const asked = [];
    routes.set(`GET ${D}`, (req) => {
      asked.push(req.url);
      return [200, { "Content-Type": "application/json" }, JSON.stringify(bodies.length > 1 ? bodies.shift() : bodies[0])];
    });
    return asked;
  };

  test("a call before ready rejects with NotReadyError: up, waiting for, Retry-After", async () => {
    const d = new Bureau({ url }).desktop("d1");
    json("POST", `${D}/exec`, 409, { error: { code: "not_ready", message: "cannot exec desktop work yet", up: "booting", waiting_for: "agent" } }, { "Retry-After": "5" });
    const e = await d.exec("true").then(() => null, (e) => e);
    assert.ok(e instanceof NotReadyError && e instanceof BureauError);
    assert.deepEqual([e.status, e.code, e.up, e.waitingFor, e.retryAfter, e.message], [409, "not_ready", "booting", "agent", 5, "cannot exec desktop work yet"]);
    json("POST", `${D}/exec`, 409, { error: { code: "invalid_state", message: "stopped", state: "stopped" } });
    const other = await d.exec("true").then(() => null, (e) => e);
    assert.ok(!(other instanceof NotReadyError));
    assert.equal(other.state, "stopped");
  });

  test("waitReady asks the server to wait until the desktop is ready", async () => {
    const asked = answers(booting, ready);
    const d = await new Bureau({ url }).desktop("d1").waitReady({ timeoutMs: 1_000_000 });
    assert.deepEqual([d.data.ready, d.data.ready_at, d.data.up, d.data.waiting_for], [true, "2026-01-02T03:04:05Z", "session", undefined]);
    assert.deepEqual(asked, [`${D}?wait=ready&timeout_s=240`, `${D}?wait=ready&timeout_s=240`]);
  });

  test("waitReady runs out with TimeoutError; a stopped desktop is a 409 at once", async () => {
    const asked = answers(booting);
    const e = await new Bureau({ url }).desktop("d1").waitReady({ timeoutMs: 0 }).then(() => null, (e) => e);
    assert.ok(e instanceof TimeoutError);
    assert.deepEqual([e.code, e.state], ["timeout", "running"]);
    assert.match(e.message, /waiting for session/);
    assert.deepEqual(asked, [`${D}?wait=ready&timeout_s=0`]);
    json("GET", D, 409, { error: { code: "invalid_state", message: "cannot wait for a stopped desktop", state: "stopped" } });
    const c = await new Bureau({ url }).desktop("d1").waitReady().then(() => null, (e) => e);
    assert.deepEqual([c.status, c.code, c.state], [409, "invalid_state", "stopped"]);
  });

  test("create can resolve once the desktop is ready", async () => {
    const b = new Bureau({ url });
    const got = [];
    routes.set("POST /api/v1/desktops", (_r, body) => {
      got.push(JSON.parse(body));
      return [202, { "Content-Type": "application/json" }, JSON.stringify({ id: "d1", name: "work", state: "creating", ready: false })];
    });
    const asked = answers(ready);
    assert.equal((await b.desktops.create({ name: "work" }, { waitReady: true, timeoutMs: 60_000 })).data.ready, true);
    assert.equal((await b.desktops.create({ name: "work" })).data.ready, false);
    assert.deepEqual(got, [{ name: "work" }, { name: "work" }]);
    assert.equal(asked.length, 1);
    assert.match(asked[0], /^\/api\/v1\/desktops\/d1\?wait=ready&timeout_s=(59|60)$/); // 60 s, less the time the create took
  });
});
