// Offline tests of a backup's files (bureau.backups.backupFiles and co.) against a fake server.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Bureau, BureauError } from "../dist/index.js";
import { jsonServer } from "./fake.mjs";

const fake = jsonServer();
const { seen, json } = fake;
const rejection = (p) => p.then(() => null, (e) => e);
const LISTING = {
  backup_id: "b1", path: "/home/agent", type: "dir", size: 4096, mode: "0755", modified: "2026-11-28T10:00:00Z",
  entries: [
    { name: "latest", path: "/home/agent/latest", type: "symlink", size: 9, mode: "0777", modified: "2026-11-28T10:00:00Z", link_target: "notes.txt" },
    { name: "notes.txt", path: "/home/agent/notes.txt", type: "file", size: 12, mode: "0644", modified: "2026-11-28T09:59:01Z" },
  ],
};

describe("backup files", () => {
  const b = () => new Bureau({ url: fake.url, token: "bureau_test" });

  test("list", async () => {
    json("GET", "/api/v1/backups/b1/files", 200, LISTING);
    const fs = await b().backups.backupFiles("b1", "/home/agent");
    assert.deepEqual(fs.entries.map((e) => e.name), ["latest", "notes.txt"]);
    assert.match(seen.at(-1).url, /path=%2Fhome%2Fagent$/);
    await b().backups.backupFiles({ id: "b1" });
    assert.match(seen.at(-1).url, /path=%2Fhome$/);
    json("GET", "/api/v1/backups/b1/files", 404, { error: { code: "not_found", message: "no /home/x" } });
    const e = await rejection(b().backups.backupFiles("b1", "/home/x"));
    assert.ok(e instanceof BureauError);
    assert.equal(e.status, 404);
  });

  test("content", async () => {
    json("GET", "/api/v1/backups/b1/files/content", 200, "hello");
    const data = await b().backups.backupFileContent("b1", "/home/agent/notes.txt");
    assert.equal(Buffer.from(data).toString(), '"hello"');
    assert.match(seen.at(-1).url, /path=%2Fhome%2Fagent%2Fnotes.txt$/);
  });

  test("restore", async () => {
    json("POST", "/api/v1/backups/b1/files/restore", 200, { backup_id: "b1", desktop_id: "d1", path: "/home/agent/src", to: "/home/agent/old", files: 3, bytes: 10240 });
    const r = await b().backups.restoreBackupFiles("b1", "/home/agent/src", "dev-1", { to: "/home/agent/old", overwrite: true });
    assert.deepEqual([r.files, r.bytes], [3, 10240]);
    assert.deepEqual(JSON.parse(seen.at(-1).body), { path: "/home/agent/src", desktop: "dev-1", to: "/home/agent/old", overwrite: true });
    await b().backups.restoreBackupFiles("b1", "/home/agent/src", "dev-1");
    assert.deepEqual(JSON.parse(seen.at(-1).body), { path: "/home/agent/src", desktop: "dev-1" });
    json("POST", "/api/v1/backups/b1/files/restore", 409, { error: { code: "exists", message: "exists" } });
    const e = await rejection(b().backups.restoreBackupFiles("b1", "/home/agent/notes.txt", "dev-1"));
    assert.equal(e.code, "exists");
  });
});
