// Offline tests of bureau.teams against a fake server.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Bureau, BureauError } from "../dist/index.js";
import { jsonServer } from "./fake.mjs";

describe("bureau.teams", () => {
  const fake = jsonServer();
  const { seen, json } = fake;
  const member = { member: "bob@example.com", role: "viewer", added_at: "2026-01-02T03:04:05Z", added_by: "alice" };
  const team = { name: "ops", created_at: "2026-01-02T03:04:05Z", created_by: "alice", role: "admin", members: [member] };

  test("every route", async () => {
    const b = new Bureau({ url: fake.url, token: "tok" });
    json("POST", "/api/v1/teams", 201, team);
    assert.equal((await b.teams.create("ops")).role, "admin");
    assert.deepEqual(JSON.parse(seen.at(-1).body), { name: "ops" });
    json("GET", "/api/v1/teams", 200, { teams: [{ name: "ops", created_at: team.created_at, created_by: "alice", role: "admin", members: 1 }] });
    assert.deepEqual((await b.teams.list()).map((t) => t.name), ["ops"]);
    json("GET", "/api/v1/teams/ops", 200, team);
    assert.equal((await b.teams.get("ops")).members[0].role, "viewer");
    json("PUT", "/api/v1/teams/ops/members/bob%40example.com", 200, member);
    assert.equal((await b.teams.setMember("ops", "bob@example.com", "viewer")).member, "bob@example.com");
    assert.deepEqual(JSON.parse(seen.at(-1).body), { role: "viewer" });
    json("DELETE", "/api/v1/teams/ops/members/bob%40example.com", 204, undefined);
    await b.teams.removeMember("ops", "bob@example.com");
    json("DELETE", "/api/v1/teams/ops", 409, { error: { code: "busy", message: "team ops owns desktops: shared" } });
    await assert.rejects(b.teams.delete("ops"), (e) => e instanceof BureauError && e.code === "busy" && /owns desktops/.test(e.message));
  });
});
