// Offline tests of backups (bureau.backups, bureau.backupTargets) against a fake server.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Bureau, BureauError, Desktop, TimeoutError } from "../dist/index.js";
import { jsonServer } from "./fake.mjs";

const fake = jsonServer();
const { seen, json, routes } = fake;
const rejection = (p) => p.then(() => null, (e) => e);
const backup = (state = "running", more = {}) => ({
  id: "b1", desktop_id: "d1", desktop_name: "agent-1", owner: "alice", target_id: "t1", state, kind: "full", consistency: "filesystem",
  disk_bytes: 20 << 30, image: "debian", vcpus: 2, memory_mib: 4096, bytes_read: 0, read_total: 3 << 30, chunks: 0, chunks_new: 0,
  bytes_new: 0, started_at: "2025-03-04T05:06:07Z", ...more,
});
const SCHEDULE = { desktop_id: "d1", target_id: "t1", every_minutes: 60, keep_last: 0, keep_hourly: 24, keep_daily: 7, keep_weekly: 4,
  next_at: "2025-03-04T09:06:07Z", updated_at: "2025-03-04T05:06:07Z", updated_by: "alice/tok_1" };
const TARGET = { id: "t1", name: "offsite", kind: "s3", created_at: "2025-03-04T05:06:07Z", created_by: "root/tok_1",
  s3: { endpoint: "nas.lan:9000", bucket: "bk", access_key: "AKID", insecure: true } };

describe("backups", () => {
  const b = () => new Bureau({ url: fake.url, token: "bureau_test" });

  test("create and wait", async () => {
    json("POST", "/api/v1/desktops/d1/backups", 202, backup());
    const bk = await b().backups.create("d1", { target: "offsite" });
    assert.deepEqual([bk.id, bk.state, bk.read_total], ["b1", "running", 3 << 30]);
    assert.deepEqual(JSON.parse(seen.at(-1).body), { target: "offsite" });
    await b().backups.create(b().desktop("d1")); // a Desktop does as well; the only target
    assert.equal(seen.at(-1).body, "");

    const answers = [backup("running", { bytes_read: 1 << 30 }), backup("complete", { chunks: 768, chunks_new: 768, finished_at: "2025-03-04T05:10:19Z" })];
    routes.set("GET /api/v1/backups/b1", () => [200, answers.length > 1 ? answers.shift() : answers[0]]);
    const done = await b().backups.wait(bk, { pollMs: 5 });
    assert.deepEqual([done.state, done.chunks_new, done.finished_at], ["complete", 768, "2025-03-04T05:10:19Z"]);

    json("GET", "/api/v1/backups/b1", 200, backup("failed", { error: "read the data disk: input/output error" }));
    const e = await rejection(b().backups.wait("b1", { pollMs: 5 }));
    assert.ok(e instanceof BureauError);
    assert.deepEqual([e.code, e.message, e.state], ["backup_failed", "read the data disk: input/output error", "failed"]);
    json("GET", "/api/v1/backups/b1", 200, backup());
    assert.ok((await rejection(b().backups.wait("b1", { timeoutMs: 20, pollMs: 5 }))) instanceof TimeoutError);
  });

  test("lists, restore and verify", async () => {
    json("GET", "/api/v1/backups", 200, { backups: [backup("complete", { id: "b2", kind: "incremental", parent: "b1" }), backup("complete")] });
    const got = await b().backups.list({ desktop: "d1", target: "offsite" });
    assert.deepEqual(got.map((x) => [x.id, x.kind, x.parent]), [["b2", "incremental", "b1"], ["b1", "full", undefined]]);
    assert.equal(seen.at(-1).url, "/api/v1/backups?desktop=d1&target=offsite");
    json("GET", "/api/v1/desktops/d1/backups", 200, { backups: [backup()] });
    assert.deepEqual((await b().backups.forDesktop("d1")).map((x) => x.state), ["running"]);

    json("POST", "/api/v1/backups/b1/restore", 202, { id: "d2", name: "back", owner: "alice", state: "creating" });
    const d = await b().backups.restore("b1", "back");
    assert.ok(d instanceof Desktop);
    assert.deepEqual([d.id, d.data.state, JSON.parse(seen.at(-1).body)], ["d2", "creating", { name: "back" }]);
    json("POST", "/api/v1/backups/b1/restore", 202, { id: "d1", name: "work", owner: "alice", state: "reverting", operation: "restore_data" });
    const onto = await b().backups.restoreOnto("b1", "work");
    assert.deepEqual([onto.id, onto.data.state, JSON.parse(seen.at(-1).body)], ["d1", "reverting", { desktop: "work", replace_data_disk: true }]);
    json("POST", "/api/v1/backups/b1/verify", 200, { backup_id: "b1", chunks: 768, missing: [], corrupt: ["chunks/ab/ab12"], ok: false, took_ms: 3240 });
    const check = await b().backups.verify({ id: "b1" });
    assert.deepEqual([check.ok, check.corrupt], [false, ["chunks/ab/ab12"]]);
  });

  test("delete and schedule", async () => {
    json("DELETE", "/api/v1/backups/b1", 204, undefined);
    await b().backups.delete({ id: "b1" });
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", "/api/v1/backups/b1"]);
    json("DELETE", "/api/v1/backups/b2", 409, { error: { code: "conflict", message: "backup b2 is running" } });
    assert.equal((await rejection(b().backups.delete("b2"))).status, 409);

    const path = "/api/v1/desktops/d1/backup-schedule";
    json("GET", path, 404, { error: { code: "not_found", message: "desktop d1 has no backup schedule: not found" } });
    const none = await rejection(b().backups.schedule("d1"));
    assert.ok(none instanceof BureauError);
    assert.deepEqual([none.status, none.code], [404, "not_found"]);
    const sched = { ...SCHEDULE, every_minutes: 240, keep_hourly: 0 };
    json("PUT", path, 200, sched);
    const s = await b().backups.setSchedule(b().desktop("d1"), { target: "offsite", every_minutes: 240, keep_hourly: 0 });
    assert.deepEqual([s.every_minutes, s.keep_hourly, s.keep_daily, s.next_at], [240, 0, 7, "2025-03-04T09:06:07Z"]);
    assert.deepEqual(JSON.parse(seen.at(-1).body), { target: "offsite", every_minutes: 240, keep_hourly: 0 });
    await b().backups.setSchedule("d1"); // the defaults
    assert.deepEqual(JSON.parse(seen.at(-1).body), {});
    json("PUT", path, 422, { error: { code: "invalid", field: "every_minutes", message: "every_minutes: from 1 to 10080 (a week)" } });
    const bad = await rejection(b().backups.setSchedule("d1", { every_minutes: 0 }));
    assert.deepEqual([bad.status, bad.field], [422, "every_minutes"]);
    json("GET", path, 200, sched);
    assert.equal((await b().backups.schedule("d1")).updated_by, "alice/tok_1");
    json("DELETE", path, 204, undefined);
    await b().backups.unschedule({ id: "d1" });
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", path]);
  });

  test("targets", async () => {
    json("POST", "/api/v1/backup-targets", 201, TARGET);
    const t = await b().backupTargets.addS3("offsite", { endpoint: "nas.lan:9000", bucket: "bk", access_key: "AKID", secret_key: "hunter2", insecure: true });
    assert.deepEqual([t.name, t.s3.access_key], ["offsite", "AKID"]);
    assert.deepEqual(JSON.parse(seen.at(-1).body), { name: "offsite", kind: "s3", s3: { endpoint: "nas.lan:9000", bucket: "bk", access_key: "AKID", secret_key: "hunter2", insecure: true } });
    await b().backupTargets.addDir("local", "/srv/backups");
    assert.deepEqual(JSON.parse(seen.at(-1).body), { name: "local", kind: "dir", dir: "/srv/backups" });
    json("GET", "/api/v1/backup-targets", 200, { targets: [TARGET] });
    assert.deepEqual((await b().backupTargets.list()).map((x) => x.name), ["offsite"]);
    json("GET", "/api/v1/backup-targets/offsite", 200, TARGET);
    assert.equal((await b().backupTargets.get("offsite")).id, "t1");
    json("DELETE", "/api/v1/backup-targets/t1", 204, undefined);
    await b().backupTargets.remove(t);
    assert.deepEqual([seen.at(-1).method, seen.at(-1).url], ["DELETE", "/api/v1/backup-targets/t1"]);
  });
});
