package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store/storetest"
	"github.com/bureau/bureau/internal/webhooks"
)

type hookReceiver struct {
	mu   sync.Mutex
	got  []*http.Request
	body [][]byte
	srv  *httptest.Server
}

func (r *hookReceiver) wait(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		k := len(r.got)
		r.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages received, want %d", k, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newHookEnv is the API env with real webhooks (their own store) and a
// running sender allowed to reach 127.0.0.1.
func newHookEnv(t *testing.T) (*env, *hookReceiver) {
	st := storetest.Open(t, filepath.Join(t.TempDir(), "w.db"))
	cfg, _ := webhooks.ParseConfig("100ms", "", "127.0.0.0/8", 0)
	key := make([]byte, 32)
	send, err := webhooks.NewSender(st.Webhooks(), key, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := webhooks.NewService(st.Webhooks(), key, cfg, send.Wake, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { send.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r := &hookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got, r.body = append(r.got, req), append(r.body, b)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return newEnvDeps(t, nil, func(d *Deps) { d.Webhooks = svc }), r
}

func TestWebhooksAPI(t *testing.T) {
	e, r := newHookEnv(t)
	checker := e.srv.Config.Handler.(*specChecker)
	checker.requests = true
	_, made := e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/webhooks", want: 201,
		body: `{"url":"` + r.srv.URL + `/hook","events":["webhook.*","quota.refused"],"description":"ci"}`})
	id, secret := made["id"].(string), made["secret"].(string)
	if !strings.HasPrefix(id, "wh_") || !strings.HasPrefix(secret, "whsec_") || made["owner"] != "alice" {
		t.Fatalf("made: %v", made)
	}
	base := "/api/v1/webhooks/" + id
	for _, c := range []specCall{
		{token: e.alice, method: "POST", path: "/api/v1/webhooks", body: `{"url":"http://169.254.169.254/","events":["*"]}`, want: 422},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://93.184.216.34/","events":["desktop.nope"]}`, want: 422},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://93.184.216.34/","events":["*"],"all_owners":true}`, want: 403},
		{token: e.alice, method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://93.184.216.34/","bogus":1}`, want: 400},
		{token: e.admin, method: "POST", path: "/api/v1/webhooks", body: `{"url":"` + r.srv.URL + `/all","events":["help.*"],"all_owners":true}`, want: 201},
		{token: e.alice, method: "GET", path: "/api/v1/webhooks", want: 200},
		{token: e.admin, method: "GET", path: "/api/v1/webhooks?owner=alice", want: 200},
		{token: e.bob, method: "GET", path: "/api/v1/webhooks?owner=alice", want: 403},
		{token: e.alice, method: "GET", path: base, want: 200},
		{token: e.bob, method: "GET", path: base, want: 404},
		{token: e.admin, method: "GET", path: base, want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/webhooks/wh_nope", want: 404},
		{token: e.alice, method: "PATCH", path: base, body: `{"description":"CI hook","events":["webhook.*","quota.refused","help.*"]}`, want: 200},
		{token: e.alice, method: "PATCH", path: base, body: `{"url":"ftp://x/"}`, want: 422},
		{token: e.bob, method: "PATCH", path: base, body: `{"enabled":false}`, want: 404},
		{token: e.bob, method: "POST", path: base + "/ping", want: 404},
		{token: e.alice, method: "GET", path: base + "/deliveries?status=lost", want: 422},
		{token: e.alice, method: "GET", path: base + "/deliveries?limit=0", want: 422},
	} {
		e.call(t, c)
	}
	code, body := e.do(t, e.alice, "POST", "/api/v1/webhooks", `{"url":"https://93.184.216.34/","events":["*","help.nope"]}`)
	if f, _ := body["error"].(map[string]any)["field"].(string); code != 422 || f != "events[1]" {
		t.Errorf("a bad pattern: %d %v", code, body)
	}
	code, body = e.do(t, e.alice, "POST", "/api/v1/webhooks", `{"url":"http://10.1.2.3/","events":["*"]}`)
	if msg, _ := body["error"].(map[string]any)["message"].(string); code != 422 || !strings.Contains(msg, "BUREAU_WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("a private URL: %d %v", code, body)
	}

	// A ping reaches the receiver, signed; its delivery is in the log.
	_, ping := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/ping", want: 202})
	r.wait(t, 1)
	checkSigned(t, secret, r.got[0], r.body[0])
	var m webhooks.Message
	json.Unmarshal(r.body[0], &m)
	if m.Type != "webhook.ping" || m.Data.WebhookID != id {
		t.Errorf("ping: %s", r.body[0])
	}
	did := ping["id"].(string)
	waitDelivered(t, e, base+"/deliveries/"+did)
	e.call(t, specCall{token: e.alice, method: "GET", path: base + "/deliveries?status=delivered&limit=10", want: 200})
	e.call(t, specCall{token: e.alice, method: "GET", path: base + "/deliveries?before=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339), want: 200})
	e.call(t, specCall{token: e.alice, method: "GET", path: base + "/deliveries/whd_nope", want: 404})
	_, again := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/deliveries/" + did + "/redeliver", want: 202})
	if again["message_id"] != ping["message_id"] || again["id"] == did {
		t.Errorf("redelivery: %v", again)
	}
	r.wait(t, 2)
	if r.got[1].Header.Get("webhook-id") != r.got[0].Header.Get("webhook-id") {
		t.Error("a redelivery with another message id")
	}
	_, rot := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/rotate-secret", want: 200})
	e.call(t, specCall{token: e.alice, method: "POST", path: base + "/ping", want: 202})
	r.wait(t, 3)
	if sigs := strings.Fields(r.got[2].Header.Get("webhook-signature")); len(sigs) != 2 {
		t.Errorf("after a rotation: %v", sigs)
	}
	checkSigned(t, rot["secret"].(string), r.got[2], r.body[2])
	checkSigned(t, secret, r.got[2], r.body[2])

	// A quota refusal is told to the owner's webhooks.
	d := runningDesktop(t, e, e.alice)
	e.desktops.err = &desktop.QuotaError{Limit: "snapshots", Max: 3, Would: 4, Plan: "custom"}
	e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/desktops/" + d + "/snapshots", body: `{"name":"t"}`, want: 403})
	e.desktops.err = nil
	r.wait(t, 4)
	json.Unmarshal(r.body[3], &m)
	if m.Type != "quota.refused" || m.Data.Limit != "snapshots" || m.Data.Owner != "alice" {
		t.Errorf("quota.refused: %s", r.body[3])
	}

	e.call(t, specCall{token: e.alice, method: "PATCH", path: base, body: `{"enabled":false}`, want: 200})
	_, got := e.call(t, specCall{token: e.alice, method: "GET", path: base, want: 200})
	if got["enabled"] != false || !strings.Contains(got["disabled_reason"].(string), "alice") {
		t.Errorf("disabled: %v", got)
	}
	e.call(t, specCall{token: e.bob, method: "DELETE", path: base, want: 404})
	e.call(t, specCall{token: e.alice, method: "DELETE", path: base, want: 204})
	e.call(t, specCall{token: e.alice, method: "GET", path: base, want: 404})
	if f := checker.Failures(); len(f) > 0 {
		t.Fatalf("%d responses do not match the spec:\n%s", len(f), strings.Join(f, "\n"))
	}
}

// Without webhooks the routes answer 503.
func TestWebhooksUnavailable(t *testing.T) {
	e := newEnv(t)
	e.call(t, specCall{token: e.alice, method: "GET", path: "/api/v1/webhooks", want: 503})
	e.call(t, specCall{token: e.alice, method: "POST", path: "/api/v1/webhooks/wh_x/ping", want: 503})
}

func waitDelivered(t *testing.T, e *env, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, d := e.call(t, specCall{token: e.alice, method: "GET", path: path, want: 200})
		if d["status"] == "delivered" {
			if d["payload"] == nil || d["attempts"] != 1.0 || d["response_code"] != 200.0 {
				t.Errorf("delivery: %v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkSigned(t *testing.T, secret string, r *http.Request, body []byte) {
	t.Helper()
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Fields(r.Header.Get("webhook-signature")) {
		if s == want {
			return
		}
	}
	t.Errorf("not signed by %s: %q", secret, r.Header.Get("webhook-signature"))
}
