//go:build e2e

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// webhookEnv lets bureau deliver to a receiver on loopback (refused by
// default: server-side request forgery) and retry within seconds.
var webhookEnv = []string{"BUREAU_WEBHOOK_ALLOW_PRIVATE=127.0.0.0/8", "BUREAU_WEBHOOK_RETRY_SCHEDULE=1s,1s,2s"}

// received is one delivery as the receiver saw it.
type received struct {
	id, typ string
	at      time.Time
	status  int
}

// receiver is a webhook endpoint on loopback that checks each delivery's
// signature the way the Standard Webhooks specification says (computed
// here, not with bureau's code) and answers 500 to the first attempt of
// each message whose type is in failFirst.
type receiver struct {
	*httptest.Server
	mu        sync.Mutex
	secret    []byte
	failFirst map[string]bool
	seen      map[string]int // message id → attempts
	got       []received
	bad       []string
}

func newReceiver(t *testing.T, failFirst ...string) *receiver {
	r := &receiver{failFirst: map[string]bool{}, seen: map[string]int{}}
	for _, f := range failFirst {
		r.failFirst[f] = true
	}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id, ts, sigs := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	var ev struct {
		Type string `json:"type"`
	}
	json.Unmarshal(body, &ev)
	r.mu.Lock()
	defer r.mu.Unlock()
	if problem := r.check(id, ts, sigs, body); problem != "" {
		r.bad = append(r.bad, problem)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.seen[id]++
	status := http.StatusNoContent
	if r.failFirst[ev.Type] && r.seen[id] == 1 {
		status = http.StatusInternalServerError
	}
	r.got = append(r.got, received{id: id, typ: ev.Type, at: time.Now(), status: status})
	w.WriteHeader(status)
}

// check verifies a delivery: a fresh timestamp and one v1 signature that
// is the HMAC-SHA256 of "id.timestamp.body" under the secret.
func (r *receiver) check(id, ts, sigs string, body []byte) string {
	if r.secret == nil {
		return "a delivery before the secret was known"
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Sprintf("bad id %q or timestamp %q", id, ts)
	}
	mac := hmac.New(sha256.New, r.secret)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return ""
		}
	}
	return fmt.Sprintf("no valid signature in %q", sigs)
}

// await waits until a delivery of typ answered status arrived, and
// returns it.
func (r *receiver) await(t *testing.T, typ string, status int, within time.Duration) received {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, g := range r.got {
			if g.typ == typ && g.status == status {
				r.mu.Unlock()
				return g
			}
		}
		r.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("no %s delivery answered %d within %s; got %+v, refused %v", typ, status, within, r.got, r.bad)
	return received{}
}

type webhookDelivery struct {
	ID, Status, LastError string
	MessageID             string `json:"message_id"`
	EventType             string `json:"event_type"`
	Attempts              int
	ResponseCode          int    `json:"response_code"`
	LatencyMS             int64  `json:"latency_ms"`
	RedeliveryOf          string `json:"redelivery_of"`
}

// testWebhooks: a real receiver on loopback gets signed deliveries of the
// desktop's events it asked for, a retry after it answered 500, a ping
// and a redelivery (same message id), all as the delivery log says;
// targets in private ranges are refused.
func testWebhooks(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	rcv := newReceiver(t, "desktop.paused")
	e := s.expectError(token, "POST", "/api/v1/webhooks", map[string]any{"url": "http://169.254.169.254/latest", "events": []string{"desktop.*"}}, 422, "invalid")
	if e.Error.Field != "url" {
		t.Errorf("a cloud metadata target: field %q", e.Error.Field)
	}
	s.expectError(token, "POST", "/api/v1/webhooks", map[string]any{"url": rcv.URL, "events": []string{"desktop.nonsense"}}, 422, "invalid")

	var hook struct {
		ID, Secret string
	}
	if code := s.call(token, "POST", "/api/v1/webhooks", map[string]any{"url": rcv.URL + "/hook", "description": "e2e receiver",
		"events": []string{"desktop.paused", "desktop.resumed", "webhook.ping"}}, &hook); code != 201 || !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Fatalf("register a webhook: %d %+v", code, hook)
	}
	defer s.call(token, "DELETE", "/api/v1/webhooks/"+hook.ID, nil, nil)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(hook.Secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q: %v", hook.Secret, err)
	}
	rcv.mu.Lock()
	rcv.secret = key
	rcv.mu.Unlock()
	base := "/api/v1/webhooks/" + hook.ID

	if code := s.call(token, "POST", base+"/ping", nil, nil); code != 200 && code != 201 && code != 202 {
		t.Errorf("ping: %d", code)
	}
	rcv.await(t, "webhook.ping", 204, 30*time.Second)

	// The desktop's own events: pause (the receiver fails its first try)
	// and resume.
	pausedAt := time.Now()
	if code := s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/pause", nil, nil); code != 200 && code != 202 {
		t.Fatalf("pause: %d", code)
	}
	s.waitState(token, d.ID, "paused", time.Minute)
	s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/resume", nil, nil)
	s.waitState(token, d.ID, "running", time.Minute)
	first := rcv.await(t, "desktop.paused", 500, 30*time.Second)
	retried := rcv.await(t, "desktop.paused", 204, 30*time.Second)
	rcv.await(t, "desktop.resumed", 204, 30*time.Second)
	t.Logf("bench: pause → its webhook delivered: %s (first try), retry %s later",
		first.at.Sub(pausedAt).Round(time.Millisecond), retried.at.Sub(first.at).Round(time.Millisecond))
	if first.id != retried.id {
		t.Errorf("the retry has message id %q, the first try %q", retried.id, first.id)
	}

	// The delivery log says the same.
	var log struct{ Deliveries []webhookDelivery }
	s.call(token, "GET", base+"/deliveries", nil, &log)
	byType := map[string]webhookDelivery{}
	for _, dl := range log.Deliveries {
		byType[dl.EventType] = dl
	}
	if p := byType["desktop.paused"]; p.Status != "delivered" || p.Attempts != 2 || p.ResponseCode != 204 || p.MessageID != first.id {
		t.Errorf("the pause's delivery in the log: %+v (receiver saw message %s)", p, first.id)
	}
	if p := byType["webhook.ping"]; p.Status != "delivered" || p.Attempts != 1 {
		t.Errorf("the ping's delivery in the log: %+v", p)
	}

	// Redelivery: the same message again, a new delivery in the log.
	var again webhookDelivery
	if code := s.call(token, "POST", base+"/deliveries/"+byType["desktop.resumed"].ID+"/redeliver", nil, &again); code/100 != 2 ||
		again.MessageID != byType["desktop.resumed"].MessageID {
		t.Errorf("redeliver: %d %+v", code, again)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; n < 2 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		n = 0
		rcv.mu.Lock()
		for _, g := range rcv.got {
			if g.id == again.MessageID {
				n++
			}
		}
		rcv.mu.Unlock()
		if n == 2 {
			break
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.seen[again.MessageID] != 2 {
		t.Errorf("the receiver saw the resumed message %d times after a redelivery, want 2", rcv.seen[again.MessageID])
	}
	if len(rcv.bad) > 0 {
		t.Errorf("deliveries the receiver refused: %v", rcv.bad)
	}
}
