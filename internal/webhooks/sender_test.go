package webhooks_test

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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
	"github.com/bureau/bureau/internal/webhooks"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type received struct {
	header http.Header
	body   []byte
}

// receiver answers with codes in turn (the last one again and again).
type receiver struct {
	mu    sync.Mutex
	codes []int
	got   []received
	srv   *httptest.Server
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	r := &receiver{codes: codes}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), b})
		code := r.codes[0]
		if len(r.codes) > 1 {
			r.codes = r.codes[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
		io.WriteString(w, "answer")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

type env struct {
	st      *store.Webhooks
	svc     *webhooks.Service
	send    *webhooks.Sender
	clock   *clock
	key     []byte
	disable []*webhooks.Endpoint
}

func newEnv(t *testing.T, schedule string) *env {
	t.Helper()
	s := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	cfg, err := webhooks.ParseConfig(schedule, "1h", "127.0.0.0/8", 0)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{st: s.Webhooks(), clock: &clock{t: time.Unix(1700000000, 0).UTC()}, key: make([]byte, 32)}
	e.send, err = webhooks.NewSender(e.st, e.key, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e.send.Now = e.clock.now
	e.send.Disabled = func(_ context.Context, ep *webhooks.Endpoint) { e.disable = append(e.disable, ep) }
	e.svc, err = webhooks.NewService(e.st, e.key, cfg, e.send.Wake, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e.svc.Now = e.clock.now
	return e
}

func (e *env) create(t *testing.T, owner, url string, allOwners bool, events ...string) (*webhooks.Endpoint, string) {
	t.Helper()
	ep, secret, err := e.svc.Create(context.Background(), webhooks.CreateRequest{Owner: owner, URL: url, Events: events, AllOwners: allOwners})
	if err != nil {
		t.Fatal(err)
	}
	return ep, secret
}

// step claims what is due now and attempts it; it returns how many.
func (e *env) step(t *testing.T) int {
	t.Helper()
	now := e.clock.now()
	due, err := e.st.ClaimDeliveries(context.Background(), now, now.Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		e.send.Attempt(context.Background(), d)
	}
	return len(due)
}

// verify checks a request's signature as a receiver would, independently.
func verify(t *testing.T, secret string, r received) {
	t.Helper()
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(r.header.Get("webhook-id") + "." + r.header.Get("webhook-timestamp") + "." + string(r.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Split(r.header.Get("webhook-signature"), " ") {
		if s == want {
			return
		}
	}
	t.Fatalf("no signature by %s in %q", secret, r.header.Get("webhook-signature"))
}

type desktops map[string]*desktop.Desktop

func (d desktops) Get(_ context.Context, id string) (*desktop.Desktop, error) {
	if x, ok := d[id]; ok {
		return x, nil
	}
	return nil, desktop.ErrNotFound
}

func TestDispatcherMatching(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	url := "http://127.0.0.1:9/"
	aliceAll, _ := e.create(t, "alice", url, false, "desktop.*")
	aliceHelp, _ := e.create(t, "alice", url, false, "help.requested", "operation.failed")
	bob, _ := e.create(t, "bob", url, false, "*")
	rootAll, _ := e.create(t, "root", url, true, "backup.*", "help.*")
	rootOwn, _ := e.create(t, "root", url, false, "*") // root's desktops only
	off, _ := e.create(t, "alice", url, false, "*")
	f := false
	if _, err := e.svc.Update(ctx, off.ID, webhooks.Patch{Enabled: &f}); err != nil {
		t.Fatal(err)
	}
	d := &webhooks.Dispatcher{Store: e.st, Desktops: desktops{"d1": {ID: "d1", Name: "one", Owner: "alice", State: desktop.StatePaused}},
		Log: slog.New(slog.DiscardHandler)}
	for _, ev := range []*desktop.Event{
		{ID: "e1", DesktopID: "d1", Type: "paused", Message: "paused", Actor: "alice/tok", CreatedAt: e.clock.now()},
		{ID: "e2", DesktopID: "d1", Type: "help_requested", Message: "asks", CreatedAt: e.clock.now()},
		{ID: "e3", DesktopID: "d1", Type: "backup_failed", Message: "no room", CreatedAt: e.clock.now()},
	} {
		if err := d.Handle(ctx, "alice", ev); err != nil {
			t.Fatal(err)
		}
	}
	types := func(ep *webhooks.Endpoint) []string {
		list, err := e.st.ListDeliveries(ctx, ep.ID, "", time.Time{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range list {
			out = append(out, d.EventType)
		}
		slices.Sort(out)
		return out
	}
	for ep, want := range map[*webhooks.Endpoint]string{
		aliceAll:  "desktop.paused",
		aliceHelp: "help.requested operation.failed",
		bob:       "",
		rootAll:   "backup.failed help.requested",
		rootOwn:   "",
		off:       "",
	} {
		if got := strings.Join(types(ep), " "); got != want {
			t.Errorf("%s (%s %v): %q, want %q", ep.ID, ep.Owner, ep.Events, got, want)
		}
	}
	list, _ := e.st.ListDeliveries(ctx, aliceAll.ID, "", time.Time{}, 1)
	full, _ := e.st.GetDelivery(ctx, list[0].ID)
	var m webhooks.Message
	if err := json.Unmarshal(full.Payload, &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "desktop.paused" || m.Data.DesktopID != "d1" || m.Data.EventID != "e1" || m.Data.Actor != "alice/tok" ||
		m.Data.Desktop == nil || m.Data.Desktop.Name != "one" || m.Data.Desktop.State != "paused" || m.Data.Owner != "alice" {
		t.Errorf("payload: %s", full.Payload)
	}
}

// A receiver that answers 500 then 200: the retry is scheduled on the
// schedule and both attempts are in the delivery log.
func TestSenderRetriesThenDelivers(t *testing.T) {
	e := newEnv(t, "1s,2s")
	r := newReceiver(t, 500, 200)
	ctx := context.Background()
	ep, secret := e.create(t, "alice", r.srv.URL+"/hook", false, "*")
	d, err := e.svc.Ping(ctx, ep.ID, "alice/tok")
	if err != nil {
		t.Fatal(err)
	}
	if e.step(t) != 1 {
		t.Fatal("nothing due")
	}
	got, _ := e.st.GetDelivery(ctx, d.ID)
	if got.Status != webhooks.StatusPending || got.Attempts != 1 || got.ResponseCode != 500 || !strings.Contains(got.LastError, "HTTP 500: answer") ||
		!got.NextAttemptAt.Equal(e.clock.now().Add(time.Second)) {
		t.Fatalf("after a 500: %+v", got)
	}
	if e.step(t) != 0 {
		t.Fatal("retried before its time")
	}
	e.clock.add(time.Second)
	if e.step(t) != 1 {
		t.Fatal("no retry")
	}
	got, _ = e.st.GetDelivery(ctx, d.ID)
	if got.Status != webhooks.StatusDelivered || got.Attempts != 2 || got.ResponseCode != 200 || got.LastError != "" || got.DeliveredAt == nil || got.NextAttemptAt != nil {
		t.Fatalf("after a 200: %+v", got)
	}
	if len(r.got) != 2 || r.got[0].header.Get("webhook-id") != r.got[1].header.Get("webhook-id") || r.got[0].header.Get("webhook-id") != d.MessageID {
		t.Fatalf("requests: %d", len(r.got))
	}
	for _, rq := range r.got {
		verify(t, secret, rq)
	}
	if ts := r.got[1].header.Get("webhook-timestamp"); ts != "1700000001" {
		t.Errorf("the retry's timestamp: %s", ts)
	}
	ep, _ = e.svc.Get(ctx, ep.ID)
	if ep.Failures != 0 || ep.FailingSince != nil {
		t.Errorf("failures not cleared: %+v", ep)
	}
	// Redelivery: a new delivery, the same message id and payload.
	again, err := e.svc.Redeliver(ctx, ep.ID, d.ID)
	if err != nil || again.ID == d.ID || again.MessageID != d.MessageID || again.RedeliveryOf != d.ID || string(again.Payload) != string(got.Payload) {
		t.Fatalf("redelivery: %+v %v", again, err)
	}
	e.step(t)
	if len(r.got) != 3 || string(r.got[2].body) != string(r.got[0].body) || r.got[2].header.Get("webhook-id") != d.MessageID {
		t.Fatalf("redelivered: %d", len(r.got))
	}
	if _, err := e.svc.Redeliver(ctx, "wh_other", d.ID); err == nil {
		t.Fatal("redelivered through another endpoint")
	}
}

// An endpoint failing MinFailures times in a row for longer than
// DisableAfter is disabled, its owner told, and its pending deliveries
// not sent; the schedule spent, a delivery is failed.
func TestSenderDisables(t *testing.T) {
	e := newEnv(t, "20m,20m,20m,20m,20m")
	r := newReceiver(t, 503)
	ctx := context.Background()
	ep, _ := e.create(t, "alice", r.srv.URL, false, "*")
	d, _ := e.svc.Ping(ctx, ep.ID, "alice")
	for i := range 5 {
		if e.step(t) != 1 {
			t.Fatalf("attempt %d not due", i+1)
		}
		e.clock.add(20 * time.Minute)
	}
	// 5 failures over 80 minutes (> 1h): disabled at the fifth.
	if len(e.disable) != 1 || e.disable[0].ID != ep.ID || !strings.Contains(e.disable[0].DisabledReason, "5 in a row") {
		t.Fatalf("disabled: %+v", e.disable)
	}
	got, _ := e.svc.Get(ctx, ep.ID)
	if got.Enabled || got.DisabledAt == nil || got.Failures != 5 {
		t.Fatalf("endpoint: %+v", got)
	}
	e.step(t)
	del, _ := e.st.GetDelivery(ctx, d.ID)
	if del.Status != webhooks.StatusFailed || !strings.Contains(del.LastError, "disabled") || len(r.got) != 5 {
		t.Fatalf("delivery to a disabled endpoint: %+v (%d sent)", del, len(r.got))
	}
	// Enabling clears it all.
	on := true
	got, _ = e.svc.Update(ctx, ep.ID, webhooks.Patch{Enabled: &on})
	if !got.Enabled || got.DisabledAt != nil || got.DisabledReason != "" || got.Failures != 0 || got.FailingSince != nil {
		t.Fatalf("enabled again: %+v", got)
	}
	// Five failures within the hour do not disable.
	e2 := newEnv(t, "1s")
	ep2, _ := e2.create(t, "alice", r.srv.URL, false, "*")
	for range 6 {
		d, _ := e2.svc.Ping(ctx, ep2.ID, "alice")
		e2.step(t)
		e2.clock.add(time.Second)
		e2.step(t)
		if got, _ := e2.st.GetDelivery(ctx, d.ID); got.Status != webhooks.StatusFailed || got.Attempts != 2 {
			t.Fatalf("schedule spent: %+v", got)
		}
	}
	if len(e2.disable) != 0 {
		t.Fatal("disabled within DisableAfter")
	}
}

// For a day after a rotation, messages carry both signatures.
func TestRotationSignsWithBoth(t *testing.T) {
	e := newEnv(t, "")
	r := newReceiver(t, 204)
	ctx := context.Background()
	ep, old := e.create(t, "alice", r.srv.URL, false, "*")
	secret, after, err := e.svc.RotateSecret(ctx, ep.ID)
	if err != nil || secret == old || after.PreviousSecretUntil == nil {
		t.Fatal(secret, err)
	}
	e.svc.Ping(ctx, ep.ID, "alice")
	e.step(t)
	if sigs := strings.Split(r.got[0].header.Get("webhook-signature"), " "); len(sigs) != 2 {
		t.Fatalf("signatures: %v", sigs)
	}
	verify(t, secret, r.got[0])
	verify(t, old, r.got[0])
	e.clock.add(webhooks.RotationOverlap + time.Second)
	e.svc.Ping(ctx, ep.ID, "alice")
	e.step(t)
	if sigs := strings.Split(r.got[1].header.Get("webhook-signature"), " "); len(sigs) != 1 {
		t.Fatalf("signatures a day later: %v", sigs)
	}
	verify(t, secret, r.got[1])
}

// Run: the senders pick deliveries up by themselves.
func TestSenderRun(t *testing.T) {
	e := newEnv(t, "")
	e.send.Now = time.Now
	e.svc.Now = time.Now
	r := newReceiver(t, 200)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.send.Run(ctx); close(done) }()
	ep, _ := e.create(t, "alice", r.srv.URL, false, "*")
	d, _ := e.svc.Ping(ctx, ep.ID, "alice")
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ := e.st.GetDelivery(context.Background(), d.ID)
		if got.Status == webhooks.StatusDelivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

func TestServiceRefuses(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	for _, c := range []struct {
		url    string
		events []string
		field  string
		desc   string
	}{
		{"http://10.0.0.1/", []string{"*"}, "url", ""},
		{"http://169.254.169.254/", []string{"*"}, "url", ""},
		{"gopher://x/", []string{"*"}, "url", ""},
		{"", []string{"*"}, "url", ""},
		{"http://127.0.0.1/", nil, "events", ""},
		{"http://127.0.0.1/", []string{"*", "desktop.nope"}, "events[1]", ""},
		// Shown in listings and terminals: plain text only.
		{"http://127.0.0.1/", []string{"*"}, "description", "ci\x1b[31m red"},
		{"http://127.0.0.1/", []string{"*"}, "description", "a\u202eb"},
		{"http://127.0.0.1/", []string{"*"}, "description", strings.Repeat("x", webhooks.MaxDescription+1)},
	} {
		_, _, err := e.svc.Create(ctx, webhooks.CreateRequest{Owner: "a", URL: c.url, Events: c.events, Description: c.desc})
		var ve *desktop.ValidationError
		if !errorsAs(err, &ve) || ve.Field != c.field {
			t.Errorf("%s %v: %v, want field %s", c.url, c.events, err, c.field)
		}
	}
}

// Run reads its source until it ends, counting what the feed dropped;
// records of desktops make no message.
func TestDispatcherRun(t *testing.T) {
	e := newEnv(t, "")
	ep, _ := e.create(t, "alice", "http://127.0.0.1:9/", false, "*")
	changes := []webhooks.Change{
		{Owner: "alice"}, // a desktop's record
		{Owner: "alice", Event: &desktop.Event{ID: "e1", DesktopID: "d1", Type: "resumed"}, Dropped: 3},
	}
	d := &webhooks.Dispatcher{Store: e.st, Log: slog.New(slog.DiscardHandler)}
	d.Run(context.Background(), func(context.Context) (webhooks.Change, bool) {
		if len(changes) == 0 {
			return webhooks.Change{}, false
		}
		c := changes[0]
		changes = changes[1:]
		return c, true
	})
	list, _ := e.st.ListDeliveries(context.Background(), ep.ID, "", time.Time{}, 10)
	if len(list) != 1 || list[0].EventType != "desktop.resumed" || d.DroppedTotal() != 3 {
		t.Fatalf("deliveries %+v, dropped %d", list, d.DroppedTotal())
	}
}
