package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTeamCommands(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	created := f.bodies("POST /api/v1/teams", 201, map[string]any{"name": "ops", "role": "admin"})
	if out, _, err := f.run("team", "create", "ops"); err != nil || !strings.Contains(out, "team ops created") {
		t.Fatalf("create: %q %v", out, err)
	}
	if (*created)[0] != `{"name":"ops"}` {
		t.Errorf("create posted %s", (*created)[0])
	}
	f.json("GET /api/v1/teams", 200, map[string]any{"teams": []any{map[string]any{"name": "ops", "role": "admin", "members": 2, "created_at": "2026-01-02T03:04:05Z"}}})
	if out, _, err := f.run("team", "list"); err != nil || !strings.Contains(out, "ops") || !strings.Contains(out, "admin") {
		t.Fatalf("list: %q %v", out, err)
	}
	f.json("GET /api/v1/teams/ops", 200, map[string]any{"name": "ops", "role": "admin", "created_by": "alice", "created_at": "2026-01-02T03:04:05Z",
		"members": []any{map[string]any{"member": "alice", "role": "admin", "added_by": "alice", "added_at": "2026-01-02T03:04:05Z"},
			map[string]any{"member": "bob@example.com", "role": "viewer", "added_by": "alice", "added_at": "2026-01-02T03:04:05Z"}}})
	if out, _, err := f.run("team", "show", "ops"); err != nil || !strings.Contains(out, "bob@example.com  viewer") {
		t.Fatalf("show: %q %v", out, err)
	}
	set := f.bodies("PUT /api/v1/teams/ops/members/bob@example.com", 200, map[string]any{"member": "bob@example.com", "role": "member"})
	if out, _, err := f.run("team", "add", "ops", "bob@example.com", "--role", "member"); err != nil || !strings.Contains(out, "is a member of ops") {
		t.Fatalf("add: %q %v", out, err)
	}
	if (*set)[0] != `{"role":"member"}` {
		t.Errorf("add sent %s", (*set)[0])
	}
	minted := f.bodies("POST /api/v1/tokens", 201, map[string]any{"token": "bureau_secret", "info": map[string]any{"id": "tok_1", "owner": "ops", "role": "viewer"}})
	out, _, err := f.run("team", "token", "ops", "--role", "viewer", "--name", "watcher", "--ttl", "1h")
	if err != nil || strings.TrimSpace(out) != "bureau_secret" {
		t.Fatalf("token: %q %v", out, err)
	}
	var body map[string]any
	json.Unmarshal([]byte((*minted)[0]), &body)
	if body["owner"] != "ops" || body["role"] != "viewer" || body["name"] != "watcher" || body["ttl_seconds"] != float64(3600) {
		t.Errorf("token posted %v", body)
	}
	// The API's refusal reaches the user as it said it.
	f.json("DELETE /api/v1/teams/ops", 409, map[string]any{"error": map[string]any{"code": "busy", "message": "team ops owns desktops: shared"}})
	if _, _, err := f.run("team", "delete", "ops"); err == nil || !strings.Contains(err.Error(), "owns desktops") {
		t.Errorf("delete of a busy team: %v", err)
	}
	f.json("DELETE /api/v1/teams/ops/members/bob@example.com", 204, nil)
	if out, _, err := f.run("team", "remove", "ops", "bob@example.com"); err != nil || !strings.Contains(out, "removed from ops") {
		t.Errorf("remove: %q %v", out, err)
	}
}
