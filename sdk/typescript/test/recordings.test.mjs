// Offline tests of recordings (bureau.recordings) against a fake server.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Bureau, BureauError } from "../dist/index.js";

const R = "/api/v1/desktops/d1/recordings";
const VIDEO = Buffer.concat([Buffer.from("\x1aE\xdf\xa3 webm ", "latin1"), Buffer.alloc(200 << 10, "v")]);
let server, url;
const routes = new Map();
const seen = [];

before(async () => {
  server = http.createServer((req, res) => {
    const body = [];
    req.on("data", (c) => body.push(c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(body).toString() });
      const u = new URL(req.url, "http://x");
      const route = routes.get(`${req.method} ${u.pathname}`);
      if (typeof route === "function" && route.length === 2) return route(req, res); // answers by itself
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
const rejection = (p) => p.then(() => null, (e) => e);
const rec = (id, state = "done", seconds = 10, size = 1000) => ({
  id, desktop_id: "d1", state, actor: "alice/tok_1", fps: 2, max_seconds: 3600, width: 1280, height: 800, frames: seconds * 2,
  size_bytes: size, started_at: "2025-03-04T05:06:07Z", duration_ms: seconds * 1000,
  ...(state === "recording" ? {} : { ended_at: "2025-03-04T05:06:17Z", ended_why: "stopped by alice/tok_1", video_url: `${R}/${id}/video` }),
});

describe("recordings", () => {
  const b = () => new Bureau({ url, token: "bureau_test" });

  test("start", async () => {
    json("POST", R, 201, rec("rec_000000000000000a", "recording", 0, 0));
    const r = await b().recordings.start("d1", { fps: 5, max_seconds: 60 });
    assert.deepEqual([r.id, r.state, r.width, r.ended_at], ["rec_000000000000000a", "recording", 1280, undefined]);
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url, JSON.parse(seen.at(-1).body)], ["POST", R, { fps: 5, max_seconds: 60 }]);
    assert.equal(seen.at(-1).headers.authorization, "Bearer bureau_test");
    await b().recordings.start(b().desktop("d1")); // a Desktop does as well as its id; the server's defaults
    assert.equal(seen.at(-1).body, "");
    json("POST", R, 422, { error: { code: "invalid", message: "must be 1 to 10 frames a second", field: "fps" } });
    const e = await rejection(b().recordings.start("d1", { fps: 30 }));
    assert.deepEqual([e.status, e.code, e.field], [422, "invalid", "fps"]);
  });

  test("list, get and delete", async () => {
    json("GET", R, 200, { recordings: [rec("rec_000000000000000a"), rec("rec_000000000000000b", "recording", 3, 0)] });
    const list = await b().recordings.list("d1");
    assert.deepEqual(list.map((r) => [r.id, r.state, r.duration_ms]), [["rec_000000000000000a", "done", 10000], ["rec_000000000000000b", "recording", 3000]]);
    assert.equal(list[0].video_url, `${R}/rec_000000000000000a/video`);
    json("GET", R, 200, { recordings: [] });
    assert.deepEqual(await b().recordings.list("d1"), []);

    json("GET", `${R}/rec_000000000000000a`, 200, rec("rec_000000000000000a"));
    assert.equal((await b().recordings.get("d1", "rec_000000000000000a")).size_bytes, 1000);
    assert.equal((await rejection(b().recordings.get("d1", "rec_000000000000000f"))).status, 404);

    routes.set(`DELETE ${R}/rec_000000000000000a`, () => [204, {}, ""]);
    assert.equal(await b().recordings.delete("d1", list[0]), undefined); // a Recording does as well as its id
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", `${R}/rec_000000000000000a`]);
  });

  test("stop stops the one under way by default", async () => {
    json("GET", R, 200, { recordings: [rec("rec_000000000000000a"), rec("rec_000000000000000b", "recording", 3, 0)] });
    json("POST", `${R}/rec_000000000000000b/stop`, 200, rec("rec_000000000000000b", "done", 4, 2048));
    const r = await b().recordings.stop("d1");
    assert.deepEqual([r.id, r.state, r.size_bytes], ["rec_000000000000000b", "done", 2048]);
    assert.deepEqual(seen.slice(-2).map((s) => `${s.method} ${s.url}`), [`GET ${R}`, `POST ${R}/rec_000000000000000b/stop`]);

    json("POST", `${R}/rec_000000000000000a/stop`, 200, rec("rec_000000000000000a"));
    let n = seen.length;
    assert.equal((await b().recordings.stop("d1", "rec_000000000000000a")).state, "done");
    assert.deepEqual(seen.slice(n).map((s) => `${s.method} ${s.url}`), [`POST ${R}/rec_000000000000000a/stop`]);

    json("GET", R, 200, { recordings: [rec("rec_000000000000000a")] });
    n = seen.length;
    const e = await rejection(b().recordings.stop("d1"));
    assert.ok(e instanceof BureauError);
    assert.deepEqual([e.status, e.code], [404, "not_found"]);
    assert.match(e.message, /under way/);
    assert.deepEqual(seen.slice(n).map((s) => s.method), ["GET"]);
  });

  test("video and download", async () => {
    routes.set(`GET ${R}/rec_000000000000000a/video`, () => [200, { "Content-Type": "video/webm" }, VIDEO]);
    const v = await b().recordings.video("d1", "rec_000000000000000a");
    assert.ok(v instanceof Uint8Array);
    assert.deepEqual(Buffer.from(v), VIDEO);
    assert.equal(seen.at(-1).headers.accept, "video/webm");

    const dir = mkdtempSync(join(tmpdir(), "bureau-rec-"));
    try {
      const path = join(dir, "rec.webm");
      assert.equal(await b().recordings.download("d1", "rec_000000000000000a", path), VIDEO.length);
      assert.deepEqual(readFileSync(path), VIDEO);

      // Refused, or cut off half way: the file is as it was, and no part is left.
      json("GET", `${R}/rec_000000000000000b/video`, 409, { error: { code: "conflict", message: "the recording is not finished" } });
      assert.equal((await rejection(b().recordings.download("d1", "rec_000000000000000b", join(dir, "other.webm")))).status, 409);
      assert.equal((await rejection(b().recordings.video("d1", "rec_000000000000000b"))).status, 409);
      routes.set(`GET ${R}/rec_000000000000000c/video`, (_req, res) => {
        res.writeHead(200, { "Content-Type": "video/webm", "Content-Length": String(VIDEO.length) });
        res.write(VIDEO.subarray(0, 1000), () => res.destroy());
      });
      assert.ok(await rejection(b().recordings.download("d1", "rec_000000000000000c", path)));
      assert.deepEqual(readFileSync(path), VIDEO);
      assert.deepEqual(readdirSync(dir), ["rec.webm"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("keep, and the owner's routes", async () => {
    routes.set(`PATCH ${R}/rec_000000000000000a`, () => [200, { "Content-Type": "application/json" }, JSON.stringify({ ...rec("rec_000000000000000a"), kept: JSON.parse(seen.at(-1).body).kept })]);
    assert.equal((await b().recordings.keep("d1", "rec_000000000000000a")).kept, true);
    assert.deepEqual([seen.at(-1).method, JSON.parse(seen.at(-1).body)], ["PATCH", { kept: true }]);
    assert.equal((await b().recordings.unkeep("d1", { id: "rec_000000000000000a" })).kept, false);
    assert.deepEqual(JSON.parse(seen.at(-1).body), { kept: false });

    const O = "/api/v1/recordings";
    const gone = { ...rec("rec_000000000000000b"), kept: true, owner: "alice", desktop_name: "old", desktop_deleted: true, video_url: `${O}/rec_000000000000000b/video` };
    json("GET", O, 200, { recordings: [gone], size_bytes: 1000, kept_size_bytes: 1000 });
    const all = await b().recordings.listAll();
    assert.deepEqual(all.map((r) => [r.id, r.kept, r.desktop_deleted, r.desktop_name]), [["rec_000000000000000b", true, true, "old"]]);
    json("GET", `${O}/rec_000000000000000b`, 200, gone);
    assert.equal((await b().recordings.getById(all[0])).desktop_deleted, true);
    assert.equal((await rejection(b().recordings.getById("rec_000000000000000f"))).status, 404);
    routes.set(`GET ${O}/rec_000000000000000b/video`, () => [200, { "Content-Type": "video/webm" }, VIDEO]);
    const dir = mkdtempSync(join(tmpdir(), "bureau-rec-"));
    try {
      const path = join(dir, "kept.webm");
      assert.equal(await b().recordings.downloadById("rec_000000000000000b", path), VIDEO.length);
      assert.deepEqual(readFileSync(path), VIDEO);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    routes.set(`DELETE ${O}/rec_000000000000000b`, () => [204, {}, ""]);
    await b().recordings.deleteById("rec_000000000000000b");
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", `${O}/rec_000000000000000b`]);
  });

  test("delete a desktop keeping its recordings", async () => {
    json("DELETE", "/api/v1/desktops/d1", 200, { desktop: { id: "d1", state: "deleted" }, data_deleted: false });
    await b().desktop("d1").delete({ keepRecordings: true });
    assert.equal(seen.at(-1).url, "/api/v1/desktops/d1?keep_recordings=true");
    await b().desktop("d1").delete();
    assert.equal(seen.at(-1).url, "/api/v1/desktops/d1");
  });
});
