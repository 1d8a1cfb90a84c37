package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/webhooks"
)

// TestDeliveryLatency measures how long an event takes to reach a
// receiver on loopback: the dispatcher enqueues it in the store (SQLite),
// wakes the senders, one claims it, signs it and posts it. Events come one
// at a time (each after the last arrived) and then in a burst; the figures
// are logged (make bench-webhooks), the test asserts only that every event
// arrived once. BUREAU_WEBHOOK_BENCH_EVENTS sets how many (default 200).
func TestDeliveryLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("a benchmark: not in -short")
	}
	n := 200
	if v, err := strconv.Atoi(os.Getenv("BUREAU_WEBHOOK_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet := slog.New(slog.DiscardHandler)
	if err := s.Migrate(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	cfg, err := webhooks.ParseConfig("", "1h", "127.0.0.0/8", 0)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	send, err := webhooks.NewSender(s.Webhooks(), key, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := webhooks.NewService(s.Webhooks(), key, cfg, send.Wake, quiet)
	if err != nil {
		t.Fatal(err)
	}

	// The receiver notes when each event (by its id in the body) arrived.
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	count := map[string]int{}
	got := make(chan struct{}, 2*n)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Data struct {
				EventID string `json:"event_id"`
			}
		}
		json.NewDecoder(r.Body).Decode(&msg)
		mu.Lock()
		if _, ok := arrived[msg.Data.EventID]; !ok {
			arrived[msg.Data.EventID] = time.Now()
		}
		count[msg.Data.EventID]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		got <- struct{}{}
	}))
	defer rcv.Close()
	if _, _, err := svc.Create(ctx, webhooks.CreateRequest{Owner: "alice", URL: rcv.URL, Events: []string{"desktop.*"}}); err != nil {
		t.Fatal(err)
	}

	events := make(chan webhooks.Change)
	d := &webhooks.Dispatcher{Store: s.Webhooks(), Log: quiet, Wake: send.Wake}
	go d.Run(ctx, func(ctx context.Context) (webhooks.Change, bool) {
		select {
		case c := <-events:
			return c, true
		case <-ctx.Done():
			return webhooks.Change{}, false
		}
	})
	go send.Run(ctx)

	sent := map[string]time.Time{}
	emit := func(id string) {
		sent[id] = time.Now()
		events <- webhooks.Change{Owner: "alice", Event: &desktop.Event{ID: id, DesktopID: "d1", Type: "paused", CreatedAt: time.Now()}}
	}
	wait := func(k int, within time.Duration) {
		deadline := time.After(within)
		for range k {
			select {
			case <-got:
			case <-deadline:
				t.Fatalf("deliveries did not arrive within %s", within)
			}
		}
	}
	figures := func(prefix string, from, to int) string {
		mu.Lock()
		defer mu.Unlock()
		var took []time.Duration
		for i := from; i < to; i++ {
			id := fmt.Sprintf("%s%d", prefix, i)
			took = append(took, arrived[id].Sub(sent[id]))
		}
		slices.Sort(took)
		q := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
		return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", q(0.50).Round(10*time.Microsecond), q(0.90).Round(10*time.Microsecond),
			q(0.99).Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond))
	}

	for i := range n { // one at a time
		emit(fmt.Sprintf("one%d", i))
		wait(1, 30*time.Second)
	}
	burstStart := time.Now()
	for i := range n { // all at once
		emit(fmt.Sprintf("burst%d", i))
	}
	wait(n, 2*time.Minute)
	burst := time.Since(burstStart)

	mu.Lock()
	for id, c := range count {
		if c != 1 {
			t.Errorf("event %s arrived %d times", id, c)
		}
	}
	if len(count) != 2*n {
		t.Errorf("%d of %d events arrived", len(count), 2*n)
	}
	mu.Unlock()
	t.Logf("bench: webhook delivery, event → receiver, one at a time (%d events): %s", n, figures("one", 0, n))
	t.Logf("bench: webhook delivery, a burst of %d events: %s; all in %s (%.0f deliveries/s)", n, figures("burst", 0, n),
		burst.Round(time.Millisecond), float64(n)/burst.Seconds())
}
