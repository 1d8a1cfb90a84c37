package main

import (
	"encoding/json"
	"strings"
	"testing"
)

var hookJSON = map[string]any{"id": "wh_1", "owner": "alice", "url": "https://hooks.example/b", "description": "ci",
	"events": []string{"desktop.*", "help.*"}, "all_owners": false, "enabled": true, "created_at": "2026-01-02T03:04:05Z",
	"created_by": "alice/tok_1", "failures": 0}

func TestWebhookAddListShow(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	posted := f.bodies("POST /api/v1/webhooks", 201, with(hookJSON, map[string]any{"secret": "whsec_c2VjcmV0"}))
	out, _, err := f.run("webhook", "add", "https://hooks.example/b", "--event", "desktop.*", "--event", "help.*", "--description", "ci")
	if err != nil || !strings.Contains(out, "whsec_c2VjcmV0") || !strings.Contains(out, "wh_1") {
		t.Fatalf("add: %q %v", out, err)
	}
	var body map[string]any
	json.Unmarshal([]byte((*posted)[0]), &body)
	if body["url"] != "https://hooks.example/b" || len(body["events"].([]any)) != 2 || body["description"] != "ci" || body["all_owners"] != nil {
		t.Fatalf("posted: %v", body)
	}
	f.run("webhook", "add", "https://hooks.example/b", "--event", "*", "--all-owners")
	json.Unmarshal([]byte((*posted)[1]), &body)
	if body["all_owners"] != true {
		t.Fatalf("--all-owners: %v", body)
	}
	if _, _, err := f.run("webhook", "add", "https://hooks.example/b"); err == nil {
		t.Fatal("add without --event")
	}
	disabled := with(hookJSON, map[string]any{"id": "wh_2", "enabled": false, "disabled_reason": "disabled by bureau at …"})
	f.json("GET /api/v1/webhooks", 200, map[string]any{"webhooks": []any{hookJSON, disabled}})
	out, _, err = f.run("webhook", "list", "--owner", "alice")
	if err != nil || !strings.Contains(out, "desktop.*,help.*") || !strings.Contains(out, "disabled: disabled by bureau") {
		t.Fatalf("list: %q %v", out, err)
	}
	if r := f.requests(); r[len(r)-1] != "GET /api/v1/webhooks?owner=alice" {
		t.Errorf("list asked %s", r[len(r)-1])
	}
	f.json("GET /api/v1/webhooks/wh_1", 200, hookJSON)
	if out, _, err = f.run("webhook", "show", "wh_1"); err != nil || !strings.Contains(out, `"url": "https://hooks.example/b"`) {
		t.Fatalf("show: %q %v", out, err)
	}
}

func TestWebhookManage(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	patched := f.bodies("PATCH /api/v1/webhooks/wh_1", 200, hookJSON)
	if out, _, err := f.run("webhook", "disable", "wh_1"); err != nil || !strings.Contains(out, "disabled") {
		t.Fatalf("disable: %q %v", out, err)
	}
	f.run("webhook", "enable", "wh_1")
	if (*patched)[0] != `{"enabled":false}` || (*patched)[1] != `{"enabled":true}` {
		t.Fatalf("patched: %v", *patched)
	}
	delivery := map[string]any{"id": "whd_1", "webhook_id": "wh_1", "message_id": "msg_1", "event_type": "webhook.ping",
		"status": "pending", "attempts": 0, "created_at": "2026-01-02T03:04:05Z"}
	f.json("POST /api/v1/webhooks/wh_1/ping", 202, delivery)
	if out, _, err := f.run("webhook", "ping", "wh_1"); err != nil || !strings.Contains(out, "whd_1") {
		t.Fatalf("ping: %q %v", out, err)
	}
	failed := with(delivery, map[string]any{"status": "failed", "attempts": 8, "response_code": 500, "latency_ms": 31, "last_error": "HTTP 500: boom"})
	f.json("GET /api/v1/webhooks/wh_1/deliveries", 200, map[string]any{"deliveries": []any{failed}})
	out, _, err := f.run("webhook", "deliveries", "wh_1", "--status", "failed")
	if err != nil || !strings.Contains(out, "HTTP 500: boom") || !strings.Contains(out, "failed") {
		t.Fatalf("deliveries: %q %v", out, err)
	}
	if r := f.requests(); r[len(r)-1] != "GET /api/v1/webhooks/wh_1/deliveries?status=failed" {
		t.Errorf("deliveries asked %s", r[len(r)-1])
	}
	f.json("POST /api/v1/webhooks/wh_1/deliveries/whd_1/redeliver", 202, with(delivery, map[string]any{"id": "whd_2", "redelivery_of": "whd_1"}))
	if out, _, err := f.run("webhook", "redeliver", "wh_1", "whd_1"); err != nil || !strings.Contains(out, "whd_2") || !strings.Contains(out, "msg_1") {
		t.Fatalf("redeliver: %q %v", out, err)
	}
	f.json("POST /api/v1/webhooks/wh_1/rotate-secret", 200, with(hookJSON, map[string]any{"secret": "whsec_bmV3", "previous_secret_until": "2026-01-03T03:04:05Z"}))
	if out, _, err := f.run("webhook", "rotate-secret", "wh_1"); err != nil || !strings.Contains(out, "whsec_bmV3") || !strings.Contains(out, "2026-01-03 03:04:05") {
		t.Fatalf("rotate: %q %v", out, err)
	}
	f.json("DELETE /api/v1/webhooks/wh_1", 204, nil)
	if out, _, err := f.run("webhook", "rm", "wh_1"); err != nil || !strings.Contains(out, "deleted") {
		t.Fatalf("rm: %q %v", out, err)
	}
	if _, _, err := f.run("webhook", "show", "wh_nope"); err == nil {
		t.Fatal("show of a missing webhook")
	}
}
