// Offline tests of bureau.audit against a fake server.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { Bureau, BureauError } from "../dist/index.js";

const entry = (i) => ({ id: `au_${i}`, at: "2026-01-02T03:04:05Z", owner: "alice", subject_owner: "alice", token_id: "tok_1", token_name: "ci",
  person: "", client_ip: "198.51.100.9", method: "POST", route: "POST /api/v1/desktops/:id/stop", action: "desktop.stop", object_type: "desktop",
  object_id: "d1", desktop_id: "d1", status: 202, error_code: "", duration_ms: 3, detail: "" });

describe("bureau.audit", () => {
  let server, url, answer;
  const seen = [];
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push({ url: req.url, accept: req.headers.accept });
      const [status, type, body] = answer(new URL(req.url, "http://x"));
      res.writeHead(status, { "Content-Type": type });
      res.end(body);
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => server.close());

  test("a page, its filters, and every page", async () => {
    answer = (u) => {
      const second = u.searchParams.get("cursor") === "c1";
      return [200, "application/json", JSON.stringify({ entries: second ? [entry(1)] : [entry(3), entry(2)], next_cursor: second ? "" : "c1" })];
    };
    const b = new Bureau({ url, token: "tok" });
    const p = await b.audit({ desktop: "d1", action: "desktop.", outcome: "ok", since: new Date("2026-01-01T00:00:00Z"), limit: 2 });
    assert.deepEqual(p.entries.map((e) => e.id), ["au_3", "au_2"]);
    assert.equal(p.next_cursor, "c1");
    assert.equal(seen.at(-1).url, "/api/v1/audit?desktop=d1&action=desktop.&outcome=ok&since=2026-01-01T00%3A00%3A00Z&limit=2");
    const all = [];
    for await (const e of b.auditAll({ actor: "tok_1", limit: 2 })) all.push(e.id);
    assert.deepEqual(all, ["au_3", "au_2", "au_1"]);
    assert.match(seen.at(-1).url, /cursor=c1/);
  });

  test("export streams NDJSON", async () => {
    answer = () => [200, "application/x-ndjson", JSON.stringify(entry(2)) + "\n" + JSON.stringify(entry(1)) + "\n"];
    const b = new Bureau({ url, token: "tok" });
    const ids = [];
    for await (const e of b.auditExport({ outcome: "error" })) ids.push(e.id);
    assert.deepEqual(ids, ["au_2", "au_1"]);
    assert.match(seen.at(-1).url, /format=ndjson/);
    assert.equal(seen.at(-1).accept, "application/x-ndjson");
  });

  test("a bad filter is a 422 naming it", async () => {
    answer = () => [422, "application/json", JSON.stringify({ error: { code: "invalid", message: "no", field: "since" } })];
    const b = new Bureau({ url, token: "tok" });
    await assert.rejects(b.audit({ since: "yesterday" }), (e) => e instanceof BureauError && e.status === 422);
  });
});
