// Offline tests of the step log (bureau.steps) against a fake server.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { Bureau, BureauError } from "../dist/index.js";

const D = "/api/v1/desktops/d1";
let server, url;
const routes = new Map();
const seen = [];

before(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      const u = new URL(req.url, "http://x");
      const route = routes.get(`${req.method} ${u.pathname}`);
      const [status, headers, out] = route ? route(u.searchParams) : [404, { "Content-Type": "application/json" }, JSON.stringify({ error: { code: "not_found", message: "no route" } })];
      res.writeHead(status, headers);
      res.end(out);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

const json = (method, path, status, obj) => routes.set(`${method} ${path}`, () => [status, { "Content-Type": "application/json" }, JSON.stringify(obj)]);
const query = () => Object.fromEntries(new URL(seen.at(-1).url, "http://x").searchParams);
const step = (seq, kind = "exec", input = { cmd: "ls" }) => ({ desktop_id: "d1", seq, at: "2025-03-04T05:06:07Z", duration_ms: 12, actor: "alice/tok_1", kind, input, result: null, status: 200, thumbnail_before: true, thumbnail_after: true });
const sse = (...events) => ": bureau step log of d1\n\n" + events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n: keepalive\n\n`).join("");
const rejection = (p) => p.then(() => null, (e) => e);

describe("steps", () => {
  const b = () => new Bureau({ url, token: "bureau_test" });

  test("list and get", async () => {
    json("GET", `${D}/steps`, 200, { steps: [step(4), step(5, "clipboard", { chars: 3 })] });
    assert.deepEqual((await b().steps.list("d1", { after: 3, limit: 2 })).map((s) => [s.seq, s.kind, s.input]), [[4, "exec", { cmd: "ls" }], [5, "clipboard", { chars: 3 }]]);
    assert.deepEqual(query(), { after: "3", limit: "2" });
    assert.equal(seen.at(-1).headers.authorization, "Bearer bureau_test");
    await b().steps.list(b().desktop("d1")); // a Desktop does as well as its id
    assert.deepEqual(query(), { after: "0", limit: "100" });
    json("GET", `${D}/steps/5`, 200, step(5));
    assert.equal((await b().steps.get("d1", 5)).seq, 5);
    assert.equal((await rejection(b().steps.get("d1", 6))).status, 404);
  });

  test("follow yields steps as they come and ends on the server's last word", async () => {
    routes.set(`GET ${D}/steps`, () => [200, { "Content-Type": "text/event-stream" }, sse(["step", step(1)], ["step", step(2)], ["unauthorized", { code: "unauthorized", message: "token revoked" }])]);
    const got = [];
    const e = await rejection((async () => { for await (const s of b().steps.follow("d1")) got.push(s.seq); })());
    assert.deepEqual(got, [1, 2]);
    assert.ok(e instanceof BureauError);
    assert.deepEqual([e.status, e.code, e.message], [401, "unauthorized", "token revoked"]);
    assert.deepEqual(query(), { after: "0", follow: "true" });
    assert.equal(seen.at(-1).headers.accept, "text/event-stream");

    routes.set(`GET ${D}/steps`, () => [200, { "Content-Type": "text/event-stream" }, sse(["step", step(8)], ["error", { message: "database is locked" }])]);
    const it = b().steps.follow("d1", { after: 7 });
    assert.equal((await it.next()).value.seq, 8);
    const e2 = await rejection(it.next());
    assert.deepEqual([e2.status, e2.code, e2.message], [500, "error", "database is locked"]);
    assert.deepEqual(query(), { after: "7", follow: "true" });
    // Breaking off hangs up.
    for await (const s of b().steps.follow("d1")) {
      assert.equal(s.seq, 8);
      break;
    }
  });

  test("thumbnail", async () => {
    routes.set(`GET ${D}/steps/7/thumbnails/before`, () => [200, { "Content-Type": "image/jpeg" }, Buffer.from("\xff\xd8jpeg", "latin1")]);
    assert.deepEqual(Buffer.from(await b().steps.thumbnail("d1", 7, "before")), Buffer.from("\xff\xd8jpeg", "latin1"));
    assert.equal((await rejection(b().steps.thumbnail("d1", 7))).status, 404);
    assert.equal(seen.at(-1).url, `${D}/steps/7/thumbnails/after`);
    const n = seen.length;
    await assert.rejects(b().steps.thumbnail("d1", 7, "during"), /want "before" or "after"/);
    assert.equal(seen.length, n);
  });

  test("export follows next_after and joins the pages", async () => {
    const tools = [{ type: "computer_20250124", name: "computer" }];
    const pages = {
      0: { format: "anthropic", desktop_id: "d1", tools, next_after: 2, messages: [{ role: "assistant", n: 1 }, { role: "user", n: 1 }, { role: "assistant", n: 2 }, { role: "user", n: 2 }] },
      2: { format: "anthropic", desktop_id: "d1", tools, next_after: 3, messages: [{ role: "assistant", n: 3 }, { role: "user", n: 3 }] },
      3: { format: "anthropic", desktop_id: "d1", tools, messages: null },
    };
    const queries = [];
    routes.set(`GET ${D}/steps/export`, (q) => {
      queries.push(Object.fromEntries(q));
      return [200, { "Content-Type": "application/json" }, JSON.stringify(pages[q.get("after")])];
    });
    const doc = await b().steps.export("d1", { format: "anthropic", images: false });
    assert.deepEqual(doc, { format: "anthropic", desktop_id: "d1", tools, messages: [1, 1, 2, 2, 3, 3].map((n, i) => ({ role: i % 2 ? "user" : "assistant", n })) });
    assert.deepEqual(queries, ["0", "2", "3"].map((after) => ({ format: "anthropic", images: "false", after })));

    json("GET", `${D}/steps/export`, 200, { format: "bureau", desktop_id: "d1", steps: [step(1)] });
    assert.deepEqual((await b().steps.export("d1")).steps.map((s) => s.seq), [1]);
    assert.deepEqual(query(), { format: "bureau", after: "0" }); // images are in by default
  });

  test("revert", async () => {
    json("POST", `${D}/steps/42/revert`, 202, { desktop: { id: "d1", name: "agent-1", state: "reverting" }, snapshot: { name: "clean", created_at: "2025-03-04T05:00:00Z" }, holds_through_step: 40 });
    const d = b().desktop("d1");
    const r = await b().steps.revert(d, 42);
    assert.deepEqual([r.snapshot.name, r.holds_through_step, d.state], ["clean", 40, "reverting"]);
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["POST", `${D}/steps/42/revert`]);
    json("POST", `${D}/steps/1/revert`, 409, { error: { code: "conflict", message: "no snapshot of this desktop was taken before step 1 began" } });
    const e = await rejection(b().steps.revert("d1", 1));
    assert.deepEqual([e.status, e.code], [409, "conflict"]);
  });

  test("checkpoint policy", async () => {
    json("GET", `${D}/checkpoints`, 200, { every_steps: 0, before: [], memory: false, keep: 5 });
    assert.deepEqual(await b().steps.checkpoints(b().desktop("d1")), { every_steps: 0, before: [], memory: false, keep: 5 });
    json("PUT", `${D}/checkpoints`, 200, { every_steps: 10, before: ["exec"], memory: false, keep: 3 });
    const p = await b().steps.setCheckpoints("d1", { every_steps: 10, before: ["exec"], keep: 3 });
    assert.deepEqual([p.every_steps, p.before, p.keep], [10, ["exec"], 3]);
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url, JSON.parse(seen.at(-1).body)], ["PUT", `${D}/checkpoints`, { every_steps: 10, before: ["exec"], keep: 3 }]);
    json("PUT", `${D}/checkpoints`, 422, { error: { code: "invalid", message: 'before: unknown step kind "rm"', field: "before" } });
    const e = await rejection(b().steps.setCheckpoints("d1", { before: ["rm"] }));
    assert.deepEqual([e.status, e.field], [422, "before"]);
  });
});
