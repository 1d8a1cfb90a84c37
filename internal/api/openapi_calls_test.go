package api

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/coder/websocket"
)

// TestResponsesMatchTheSpec drives a representative set of real calls
// through the env's fakes, the in-process agent and real token, console,
// secret and share services. Every response is checked against the spec
// (the env's specChecker), and so is every request the server accepted:
// the spec may be neither looser nor stricter than the server.
func TestResponsesMatchTheSpec(t *testing.T) {
	e := newEnv(t)
	checker := e.srv.Config.Handler.(*specChecker)
	checker.requests = true

	// Meta, images, quotas, templates, hosts, tokens.
	for _, c := range []specCall{
		{method: "GET", path: "/healthz", want: 200},
		{method: "GET", path: "/api/v1/openapi.json", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/info", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/session", want: 200},
		{method: "GET", path: "/api/v1/session", want: 401},
		{method: "GET", path: "/auth/config", want: 200},
		{method: "GET", path: "/api/v1/info", want: 401},
		{token: e.alice, method: "GET", path: "/api/v1/info?token=x", want: 401},
		{token: e.admin, method: "GET", path: "/metrics", want: 200},
		{token: e.alice, method: "GET", path: "/metrics", want: 403},
		{token: e.alice, method: "GET", path: "/api/v1/images", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/images", want: 200},
		{token: e.admin, method: "POST", path: "/api/v1/images", body: `{"name":"imported","url":"https://example.com/x.qcow2"}`, want: 200},
		{token: e.admin, method: "POST", path: "/api/v1/images", body: `{"name":"x","bogus":1}`, want: 400},
		{token: e.admin, method: "DELETE", path: "/api/v1/images/debian", want: 409},
		{token: e.alice, method: "DELETE", path: "/api/v1/images/debian", want: 403},
		{token: e.alice, method: "GET", path: "/api/v1/quota", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/quotas/alice", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/quotas/bob", want: 403},
		{token: e.admin, method: "PUT", path: "/api/v1/quotas/alice", body: `{"plan":"custom","max_desktops":5,"max_vcpus":8}`, want: 200},
		{token: e.admin, method: "PUT", path: "/api/v1/quotas/alice", body: `{"plan":"gold"}`, want: 422},
		{token: e.alice, method: "GET", path: "/api/v1/templates", want: 200},
		{token: e.admin, method: "POST", path: "/api/v1/templates", body: `{"vcpus":2,"memory_mib":4096}`, want: 202},
		{token: e.alice, method: "POST", path: "/api/v1/templates", body: `{}`, want: 403},
		{token: e.admin, method: "GET", path: "/api/v1/hosts", want: 200},
		{token: e.admin, method: "POST", path: "/api/v1/hosts", body: `{"name":"node-2","uri":"qemu+ssh://bureau@node-2/system","labels":{"zone":"eu"}}`, want: 201},
		{token: e.admin, method: "POST", path: "/api/v1/hosts", body: `{"name":"node-2","uri":"qemu+ssh://bureau@node-3/system"}`, want: 409},
		{token: e.admin, method: "POST", path: "/api/v1/hosts", body: `{"name":"node-3","uri":"qemu+tcp://unreachable:16509/system"}`, want: 422},
		{token: e.admin, method: "POST", path: "/api/v1/hosts", body: `{"name":"node-3","url":"x"}`, want: 400},
		{token: e.alice, method: "POST", path: "/api/v1/hosts", body: `{"name":"node-3","uri":"qemu+ssh://bureau@node-3/system"}`, want: 403},
		{token: e.admin, method: "GET", path: "/api/v1/hosts/node-2", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/hosts/nope", want: 404},
		{token: e.alice, method: "GET", path: "/api/v1/hosts", want: 403},
		{token: e.admin, method: "DELETE", path: "/api/v1/hosts/local", want: 409},
		{token: e.admin, method: "DELETE", path: "/api/v1/hosts/node-2", want: 204},
		{token: e.alice, method: "GET", path: "/api/v1/tokens", want: 200},
		{token: e.alice, method: "POST", path: "/api/v1/tokens", body: `{"name":"ci","ttl_seconds":3600}`, want: 201},
		{token: e.alice, method: "POST", path: "/api/v1/tokens", body: `{"scope":"admin"}`, want: 403},
		{token: e.alice, method: "POST", path: "/api/v1/tokens", body: `{"ttl_seconds":-1}`, want: 422},
		{token: e.alice, method: "DELETE", path: "/api/v1/tokens/tok_nope", want: 404},
		{token: e.alice, method: "GET", path: "/api/v1/events?limit=50", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/events?limit=0", want: 422},
		{token: e.alice, method: "GET", path: "/api/v1/audit?action=token.&outcome=ok&limit=5", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/audit?owner=alice&since=2025-01-02T15:04:05Z", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/audit?format=ndjson", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/audit?limit=0", want: 422},
		{token: e.alice, method: "GET", path: "/api/v1/secrets", want: 200},
		{token: e.alice, method: "PUT", path: "/api/v1/secrets/API_KEY", body: `{"value":"s3cret"}`, want: 200},
		{token: e.alice, method: "PUT", path: "/api/v1/secrets/bad-name", body: `{"value":"x"}`, want: 422},
		{token: e.alice, method: "GET", path: "/api/v1/secrets?owner=bob", want: 403},
		{token: e.admin, method: "GET", path: "/api/v1/secrets?owner=alice", want: 200},
		{token: e.alice, method: "DELETE", path: "/api/v1/secrets/NOPE", want: 404},
		{token: e.alice, method: "DELETE", path: "/api/v1/secrets/API_KEY", want: 204},
		{token: e.alice, method: "POST", path: "/api/v1/events/stream-token", want: 201},
		// Webhooks are off in this env (webhooks_test.go drives them
		// through the spec checker with a receiver).
		{token: e.alice, method: "GET", path: "/api/v1/webhooks", want: 503},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://93.184.216.34/","events":["*"]}`, want: 503},
		{token: e.alice, method: "GET", path: "/api/v1/webhooks/wh_x", want: 503},
		{token: e.alice, method: "PATCH", path: "/api/v1/webhooks/wh_x", body: `{"enabled":true}`, want: 503},
		{token: e.alice, method: "DELETE", path: "/api/v1/webhooks/wh_x", want: 503},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks/wh_x/ping", want: 503},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks/wh_x/rotate-secret", want: 503},
		{token: e.alice, method: "GET", path: "/api/v1/webhooks/wh_x/deliveries", want: 503},
		{token: e.alice, method: "GET", path: "/api/v1/webhooks/wh_x/deliveries/whd_x", want: 503},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks/wh_x/deliveries/whd_x/redeliver", want: 503},
	} {
		e.call(t, c)
	}
	_, tok := e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/tokens", body: `{"name":"gone"}`, want: 201})
	e.call(t, specCall{token: e.alice, method: "DELETE", path: "/api/v1/tokens/" + tok["info"].(map[string]any)["id"].(string), want: 204})

	// A desktop: create, read, settings, power, snapshots.
	_, d := e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/desktops", want: 202,
		body: `{"name":"spec","image":"debian","vcpus":2,"memory_mib":2048,"data_disk_gib":10,"ssh_authorized_keys":["ssh-ed25519 AAAA x"],` +
			`"idle_timeout_seconds":600,"cold":true,"network":{"allow_out":["1.1.1.1"],"deny_out":["0.0.0.0/0"]},"keyboard_layout":"de"}`})
	id := d["id"].(string)
	base := "/api/v1/desktops/" + id
	for _, c := range []specCall{
		{token: e.alice, method: "POST", path: "/api/v1/desktops", body: `{"name":"x","vcpus":99}`, want: 422},
		{token: e.alice, method: "POST", path: "/api/v1/desktops", body: `{"name":`, want: 400},
		{token: e.alice, method: "POST", path: "/api/v1/desktops", body: `{"name":"clone","from":{"desktop":"nope","snapshot":"s"}}`, want: 422},
		{token: e.alice, method: "GET", path: "/api/v1/desktops", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/desktops", want: 200},
		{token: e.alice, method: "GET", path: base, want: 200},
		{token: e.bob, method: "GET", path: base, want: 404},
		{token: e.alice, method: "GET", path: "/api/v1/desktops/nope", want: 404},
		{token: e.alice, method: "PATCH", path: base, body: `{"idle_timeout_seconds":0,"restart_on_crash":true,"network":{"allow_out":[],"deny_out":["10.0.0.0/8"]}}`, want: 200},
		{token: e.alice, method: "PATCH", path: base, body: `{"keyboard_layout":"fr"}`, want: 409},
		{token: e.alice, method: "PATCH", path: base, body: `{"idle_timeout_seconds":5}`, want: 422},
		{token: e.alice, method: "GET", path: base + "/events?limit=10", want: 200},
		{token: e.alice, method: "GET", path: base + "/events?limit=5000", want: 422},
		{token: e.alice, method: "GET", path: base + "/stats", want: 409},
		{token: e.alice, method: "POST", path: base + "/start", want: 202},
		{token: e.alice, method: "POST", path: base + "/stop?force=true&timeout=30", want: 202},
		{token: e.alice, method: "POST", path: base + "/stop?timeout=0", want: 422},
		{token: e.alice, method: "POST", path: base + "/reboot", want: 202},
		{token: e.admin, method: "POST", path: base + "/migrate", body: `{"host":"two"}`, want: 409}, // no Migrations here
		{token: e.admin, method: "POST", path: base + "/migrate", body: `{"to":"two"}`, want: 400},
		{token: e.alice, method: "POST", path: base + "/migrate", body: `{"host":"two"}`, want: 403},
		{token: e.admin, method: "DELETE", path: base + "/migrate", want: 409},
		{token: e.alice, method: "DELETE", path: base + "/migrate", want: 403},
		{token: e.alice, method: "POST", path: base + "/snapshots", body: `{"name":"clean","description":"tools","scope":"all","memory":true}`, want: 201},
		{token: e.alice, method: "POST", path: base + "/snapshots", body: `{"name":"d","scope":"data"}`, want: 201},
		{token: e.alice, method: "GET", path: base + "/snapshots", want: 200},
		{token: e.alice, method: "POST", path: base + "/snapshots/clean/revert", want: 202},
		{token: e.alice, method: "DELETE", path: base + "/snapshots/clean", want: 204},
		{token: e.alice, method: "GET", path: base + "/checkpoints", want: 200},
		{token: e.alice, method: "PUT", path: base + "/checkpoints", body: `{"every_steps":5,"before":["exec","file_delete"],"memory":true,"keep":3}`, want: 200},
		{token: e.alice, method: "PUT", path: base + "/checkpoints", body: `{"before":["rm"]}`, want: 422},
		{token: e.alice, method: "PUT", path: base + "/checkpoints", body: `{"every":5}`, want: 400},
		{token: e.bob, method: "GET", path: base + "/checkpoints", want: 404},
		{token: e.alice, method: "PUT", path: base + "/checkpoints", body: `{}`, want: 200},
		{token: e.alice, method: "GET", path: base + "/backup-schedule", want: 404},
		{token: e.alice, method: "PUT", path: base + "/backup-schedule", body: `{"every_minutes":30}`, want: 422}, // no target set up
		{token: e.alice, method: "DELETE", path: base + "/backup-schedule", want: 204},
		{token: e.admin, method: "DELETE", path: "/api/v1/backups/nope", want: 404},
		{token: e.admin, method: "GET", path: "/api/v1/backups/nope/files?path=/home/agent", want: 404},
		{token: e.admin, method: "GET", path: "/api/v1/backups/nope/files/content?path=/home/agent/x", want: 404},
		{token: e.admin, method: "POST", path: "/api/v1/backups/nope/files/restore", body: `{"path":"/home/agent/x","desktop":"d1"}`, want: 404},
		{token: e.alice, method: "POST", path: base + "/reimage", want: 202},
		{token: e.alice, method: "POST", path: base + "/reimage", body: `{"image":"debian"}`, want: 202},
		{token: e.alice, method: "POST", path: base + "/data-disk", body: `{"size_gib":30}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/data-disk", body: `{}`, want: 422},
		{token: e.alice, method: "GET", path: base + "/clipboard", want: 409}, // reimaging: not running
		{token: e.alice, method: "POST", path: base + "/console", body: `{"ttl_seconds":-1}`, want: 422},
	} {
		e.call(t, c)
	}

	// Running: screen, input, files, clipboard, console, URLs, tokens.
	e.desktops.setState(id, desktop.StateRunning)
	for _, c := range []specCall{
		{token: e.alice, method: "PATCH", path: base, body: `{"keyboard_layout":"fr"}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/pause", want: 200},
		{token: e.alice, method: "POST", path: base + "/resume", want: 200},
		{token: e.alice, method: "POST", path: base + "/hibernate", want: 202},
	} {
		e.call(t, c)
	}
	e.desktops.setState(id, desktop.StateRunning)
	for _, c := range []specCall{
		{token: e.alice, method: "GET", path: base + "/stats", want: 200},
		{token: e.admin, method: "GET", path: base + "/stats", want: 200},
		{token: e.alice, method: "GET", path: base + "/screenshot?format=jpeg&quality=80&width=640&settle=true", want: 200},
		{token: e.alice, method: "GET", path: base + "/screenshot?passive=true", want: 200},
		{token: e.alice, method: "GET", path: base + "/screenshot?format=bmp", want: 422},
		{token: e.alice, method: "POST", path: base + "/computer", body: `{"action":"left_click","coordinate":[10,20]}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/computer", body: `{"actions":[{"type":"click","x":1,"y":2,"button":"left"}],"display":{"width":1280,"height":800},"screenshot":true}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/computer", body: `{"nope":1}`, want: 400},
		{token: e.alice, method: "POST", path: base + "/resolution", body: `{"width":1280,"height":800}`, want: 200},
		{token: e.alice, method: "GET", path: base + "/ui?display=640x400&role=button", want: 200},
		{token: e.alice, method: "GET", path: base + "/ui?depth=0", want: 422},
		{token: e.alice, method: "GET", path: base + "/ui/find?name=ok", want: 200},
		{token: e.alice, method: "POST", path: base + "/ui/ok", body: `{"action":"click"}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/ui/gone", body: `{"action":"click"}`, want: 410},
		{token: e.alice, method: "POST", path: base + "/exec", body: `{"cmd":"echo hi","timeout_s":10,"env":{"A":"b"}}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/exec?stream=true", body: `{"cmd":"plain"}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/exec", body: `{"cmd":"x","argv":["y"]}`, want: 422},
		{token: e.alice, method: "POST", path: base + "/exec?agent=other", body: `{"cmd":"x"}`, want: 422},
		{token: e.alice, method: "PUT", path: base + "/files?path=notes.txt&mode=0600", body: "hello", contentType: "application/octet-stream", want: 201},
		{token: e.alice, method: "GET", path: base + "/files?path=notes.txt", want: 200},
		{token: e.alice, method: "GET", path: base + "/files?path=missing", want: 404},
		{token: e.alice, method: "PUT", path: base + "/files?path=x&mode=99", body: "x", contentType: "application/octet-stream", want: 422},
		{token: e.alice, method: "DELETE", path: base + "/files?path=notes.txt", want: 204},
		{token: e.alice, method: "PUT", path: base + "/clipboard", body: `{"text":"hi"}`, want: 200},
		{token: e.alice, method: "PUT", path: base + "/clipboard", body: "\x89PNG\r\n\x1a\n", contentType: "image/png", want: 200},
		{token: e.alice, method: "GET", path: base + "/clipboard", want: 200},
		{token: e.alice, method: "GET", path: base + "/clipboard?type=image/png", want: 200},
		{token: e.alice, method: "GET", path: base + "/clipboard?type=image/jpeg", want: 404},
		{token: e.alice, method: "GET", path: base + "/secrets", want: 200},
		{token: e.alice, method: "PUT", path: base + "/secrets/DB_URL", body: `{"value":"postgres://x"}`, want: 200},
		{token: e.alice, method: "DELETE", path: base + "/secrets/DB_URL", want: 204},
		{token: e.alice, method: "GET", path: base + "/urls", want: 200},
		{token: e.alice, method: "PUT", path: base + "/urls/8000", body: `{"public":true}`, want: 200},
		{token: e.alice, method: "PUT", path: base + "/urls/0", body: `{"public":true}`, want: 422},
		{token: e.alice, method: "POST", path: base + "/urls/8000/open", want: 200},
		{token: e.alice, method: "GET", path: base + "/shares", want: 200},
		{token: e.alice, method: "GET", path: base + "/console", want: 200},
		{token: e.alice, method: "DELETE", path: base + "/console/con_nope", want: 404},
		{token: e.alice, method: "POST", path: "/api/v1/tokens", body: `{"name":"agent","desktop_id":"` + id + `","computer_only":true}`, want: 201},
	} {
		e.call(t, c)
	}
	_, share := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/shares", body: `{"port":8000,"ttl_s":3600,"read_only":true}`, want: 201})
	e.call(t, specCall{token: e.alice, method: "DELETE", path: base + "/shares/" + share["share"].(map[string]any)["id"].(string), want: 204})
	_, con := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/console", body: `{"view_only":true,"ttl_seconds":60}`, want: 201})
	secret := "?token=" + con["token"].(string)
	for _, c := range []specCall{
		{method: "GET", path: base + "/console/session" + secret, want: 200},
		{method: "GET", path: base + "/console/session?token=nope", want: 401},
		{method: "GET", path: base + "/console/clipboard" + secret, want: 200},
		{method: "PUT", path: base + "/console/clipboard" + secret, body: `{"text":"x"}`, want: 403},
		{method: "GET", path: base + "/console/pty" + secret, want: 422},
		{token: e.alice, method: "DELETE", path: base + "/console/" + con["id"].(string), want: 204},
	} {
		e.call(t, c)
	}
	_, full := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/console", want: 201})
	e.call(t, specCall{method: "PUT", path: base + "/console/clipboard?token=" + full["token"].(string), body: `{"text":"x"}`, want: 200})

	specStreams(t, e, id)
	specPeople(t, e, id)
	specMCP(t, e)
	specConsole(t, e, id)
	if os.Geteuid() == 0 {
		specAgent(t, e, base)
	}
	e.call(t, specCall{token: e.alice, method: "DELETE", path: base + "?delete_data=true", want: 200})
	e.call(t, specCall{token: e.alice, method: "DELETE", path: base + "?delete_data=maybe", want: 422})
	// Last: an owner's heavy requests run out (10 at once).
	for i := 0; ; i++ {
		code, _ := e.doF(t, e.bob, "POST", "/api/v1/desktops/"+id+"/snapshots", `{"name":"x"}`)
		if code == 429 || i > 20 {
			break
		}
	}

	if f := checker.Failures(); len(f) > 0 {
		t.Fatalf("%d responses do not match the spec:\n%s", len(f), strings.Join(f, "\n"))
	}
	reportCoverage(t, checker)
}

// specStreams: the event stream, a streamed exec, an image import.
func specStreams(t *testing.T, e *env, id string) {
	_, st := e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/events/stream-token", want: 201})
	resp, err := http.Get(e.srv.URL + st["url"].(string))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	d, _ := e.desktops.Get(context.Background(), id)
	e.live.Publish(manager.Change{Owner: "alice", Desktop: d})
	e.live.Publish(manager.Change{Owner: "alice", Event: &desktop.Event{ID: "1", DesktopID: id, Type: "started", Message: "up", Actor: "bureau", CreatedAt: time.Now()}})
	rd := bufio.NewReader(resp.Body)
	for seen := 0; seen < 2; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		if strings.HasPrefix(line, "event: ") {
			seen++
		}
	}
	rd.ReadString('\n') // the second event's data
	resp.Body.Close()
}

// specConsole: the display over a console token's WebSocket.
func specConsole(t *testing.T, e *env, id string) {
	e.desktops.vnc = newFakeVNC(t).dial
	con := e.console(t, e.alice, id, true)
	ws := rfbClient(t, e, id, con["token"].(string))
	ws.CloseNow()
}

// specMCP: the MCP endpoint answers an initialize.
func specMCP(t *testing.T, e *env) {
	req, _ := http.NewRequest("POST", e.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
		`"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+e.alice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("MCP initialize: %d %s", resp.StatusCode, body)
	}
}

// specAgent: what goes through bureau-agent (the in-process agent runs
// commands as root): background processes, services, a terminal.
func specAgent(t *testing.T, e *env, base string) {
	_, p := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/exec", body: `{"cmd":"echo serving; exec sleep 60","background":true,"name":"web"}`, want: 202})
	pid := p["id"].(string)
	for _, c := range []specCall{
		{token: e.alice, method: "GET", path: base + "/agent", want: 200},
		{token: e.alice, method: "GET", path: base + "/processes", want: 200},
		{token: e.alice, method: "GET", path: base + "/processes/" + pid, want: 200},
		{token: e.alice, method: "GET", path: base + "/processes/" + pid + "/log?tail=100", want: 200},
		{token: e.alice, method: "GET", path: base + "/processes/p-000000000000", want: 404},
		{token: e.alice, method: "DELETE", path: base + "/processes/" + pid + "?signal=NOPE", want: 422},
		{token: e.alice, method: "DELETE", path: base + "/processes/" + pid + "?signal=KILL", want: 202},
		{token: e.alice, method: "POST", path: base + "/services", body: `{"name":"web","cmd":"sleep 60","port":8000,"restart":"always","env":{"A":"b"}}`, want: 201},
		{token: e.alice, method: "POST", path: base + "/services", body: `{"name":"web","cmd":"sleep 60"}`, want: 409},
		{token: e.alice, method: "POST", path: base + "/services", body: `{"name":"Bad","cmd":"x"}`, want: 422},
		{token: e.alice, method: "GET", path: base + "/services", want: 200},
		{token: e.alice, method: "GET", path: base + "/services/web", want: 200},
		{token: e.alice, method: "GET", path: base + "/services/none", want: 404},
		{token: e.alice, method: "POST", path: base + "/services/web/stop", want: 200},
		{token: e.alice, method: "POST", path: base + "/services/web/start", want: 200},
		{token: e.alice, method: "POST", path: base + "/services/web/restart", want: 200},
		{token: e.alice, method: "PUT", path: base + "/services/web", body: `{"cmd":"sleep 61","port":8000}`, want: 200},
		{token: e.alice, method: "GET", path: base + "/services/web/logs?tail=1000", want: 200},
		{token: e.alice, method: "GET", path: base + "/urls", want: 200},
		{token: e.alice, method: "DELETE", path: base + "/services/web", want: 204},
	} {
		e.call(t, c)
	}
	// A port in the desktop, through the API and as a live URL.
	port := itoa(liveApp(t))
	id := strings.TrimPrefix(base, "/api/v1/desktops/")
	for _, c := range []specCall{
		{token: e.alice, method: "GET", path: base + "/ports/" + port + "/api/items?q=1", want: 200},
		{token: e.alice, method: "POST", path: base + "/ports/" + port + "/", body: `{}`, want: 200},
		{token: e.alice, method: "GET", path: base + "/ports/0/", want: 422},
		{method: "GET", path: "/preview/" + id + "/" + port + "/x", want: 401},
		{token: e.alice, method: "GET", path: "/preview/" + id + "/" + port + "/x/y", want: 200},
		{method: "GET", path: "/preview/nope/" + port + "/", want: 404},
	} {
		e.call(t, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+base+"/pty?rows=30&cols=100",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.alice}}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	ws.Write(ctx, websocket.MessageText, []byte(`{"type":"resize","rows":40,"cols":120}`))
	ws.Write(ctx, websocket.MessageBinary, []byte("exit\n"))
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			break
		}
	}
	ws.CloseNow()
}

// reportCoverage logs which operations had a response checked, and fails
// if too few did.
func reportCoverage(t *testing.T, checker *specChecker) {
	doc, _ := loadSpec()
	seen := map[string]bool{}
	statuses := 0
	for k := range checker.Checked() {
		method, rest, _ := strings.Cut(k, " ")
		path, _, _ := strings.Cut(rest, " ")
		seen[method+" "+path] = true
		statuses++
	}
	var unseen []string
	total := 0
	for path, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			total++
			if !seen[m+" "+path] {
				unseen = append(unseen, m+" "+path)
			}
		}
	}
	slices.Sort(unseen)
	t.Logf("responses checked for %d of %d operations (%d operation/status pairs)", total-len(unseen), total, statuses)
	if len(unseen) > 0 {
		t.Logf("not exercised here: %s", strings.Join(unseen, ", "))
	}
	if os.Geteuid() == 0 && total-len(unseen) < total*3/4 {
		t.Errorf("only %d of %d operations exercised", total-len(unseen), total)
	}
}
