package audit

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore keeps entries in memory; block, when set, holds AddAudit.
type memStore struct {
	mu      sync.Mutex
	entries []*Entry
	pruned  []time.Time
	block   chan struct{}
}

func (m *memStore) AddAudit(ctx context.Context, es []*Entry) error {
	if m.block != nil {
		<-m.block
	}
	if err := ctx.Err(); err != nil {
		return err // as a database would
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, es...)
	return nil
}

func (m *memStore) ListAudit(_ context.Context, f Filter) ([]*Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := append([]*Entry(nil), m.entries...)
	sort.Slice(all, func(i, j int) bool {
		if !all[i].At.Equal(all[j].At) {
			return all[i].At.After(all[j].At)
		}
		return all[i].ID > all[j].ID
	})
	var out []*Entry
	for _, e := range all {
		if f.After != nil && (e.At.UnixMilli() > f.After.AtMS || e.At.UnixMilli() == f.After.AtMS && e.ID >= f.After.ID) {
			continue
		}
		if f.Action != "" && (len(e.Action) < len(f.Action) || e.Action[:len(f.Action)] != f.Action) {
			continue
		}
		if len(out) == f.Limit {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

func (m *memStore) PruneAudit(_ context.Context, before time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruned = append(m.pruned, before)
	return 0, nil
}

func (m *memStore) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

func run(t *testing.T, l *Log) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestRecordNeverBlocksAndCountsDrops(t *testing.T) {
	st := &memStore{block: make(chan struct{})}
	l := New(st, Config{Buffer: 4, Batch: 2}, slog.New(slog.DiscardHandler))
	run(t, l)
	start := time.Now()
	for range 20 {
		l.Record(&Entry{Action: "desktop.stop", Status: 200})
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Record waited %v", took)
	}
	// The writer holds one batch (blocked), the buffer 4: the rest dropped.
	if d := l.Dropped(); d < 20-4-2 || d > 20-4 {
		t.Errorf("dropped %d", d)
	}
	close(st.block)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := st.count(); int64(n)+l.Dropped() != 20 {
		t.Errorf("%d written + %d dropped != 20", n, l.Dropped())
	}
}

func TestRunWritesInBatchesAndOnShutdown(t *testing.T) {
	st := &memStore{}
	l := New(st, Config{Batch: 3}, slog.New(slog.DiscardHandler))
	for range 10 {
		l.Record(&Entry{Action: "a"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run writes what is queued even so
	l.Run(ctx)
	if n := st.count(); n != 10 {
		t.Errorf("%d written on shutdown", n)
	}
	for _, e := range st.entries {
		if e.ID == "" || e.At.IsZero() || e.At.Location() != time.UTC {
			t.Errorf("entry not stamped: %+v", e)
		}
	}
}

// A batch being gathered when Run's context ends is written, not lost
// with the context.
func TestRunWritesTheBatchItWasGatheringAtShutdown(t *testing.T) {
	st := &memStore{}
	l := New(st, Config{Batch: 100, Linger: time.Minute}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	l.Record(&Entry{Action: "a"})
	l.Record(&Entry{Action: "b"})
	for len(l.entries) > 0 { // taken into the batch being gathered
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if n := st.count(); n != 2 {
		t.Errorf("%d of 2 entries written", n)
	}
}

func TestPrunesPastRetention(t *testing.T) {
	st := &memStore{}
	l := New(st, Config{Retention: 48 * time.Hour, PruneEvery: 10 * time.Millisecond}, slog.New(slog.DiscardHandler))
	run(t, l)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st.mu.Lock()
		n := len(st.pruned)
		var last time.Time
		if n > 0 {
			last = st.pruned[n-1]
		}
		st.mu.Unlock()
		if n >= 2 {
			if age := time.Since(last); age < 47*time.Hour || age > 49*time.Hour {
				t.Errorf("pruned before %v ago", age)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not pruned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	keep := &memStore{}
	run(t, New(keep, Config{PruneEvery: time.Millisecond}, slog.New(slog.DiscardHandler)))
	time.Sleep(20 * time.Millisecond)
	keep.mu.Lock()
	defer keep.mu.Unlock()
	if len(keep.pruned) != 0 {
		t.Error("retention 0 pruned")
	}
}

func TestQueryPagesAndExportStreamsAll(t *testing.T) {
	st := &memStore{}
	base := time.UnixMilli(1_700_000_000_000).UTC()
	for i := range 25 {
		at := base.Add(time.Duration(i/2) * time.Millisecond) // two entries a millisecond
		st.entries = append(st.entries, &Entry{ID: NewID(at), At: at, Action: "desktop.stop"})
	}
	l := New(st, Config{}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	seen := map[string]bool{}
	f := Filter{Limit: 4}
	for pages := 0; ; pages++ {
		p, err := l.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if seen[e.ID] {
				t.Fatalf("%s twice", e.ID)
			}
			seen[e.ID] = true
		}
		if p.NextCursor == "" {
			if pages != 6 || len(p.Entries) != 1 {
				t.Errorf("last page %d holds %d", pages, len(p.Entries))
			}
			break
		}
		if f.After, err = ParseCursor(p.NextCursor); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 25 {
		t.Errorf("paged %d", len(seen))
	}
	n := 0
	if err := l.Export(ctx, Filter{Limit: 3}, func(*Entry) error { n++; return nil }); err != nil || n != 25 {
		t.Errorf("exported %d: %v", n, err)
	}
	if _, err := ParseCursor("bm90IGEgY3Vyc29y"); err == nil {
		t.Error("a made-up cursor parsed")
	}
}

func TestActionFor(t *testing.T) {
	for route, want := range map[string]string{
		"POST /api/v1/desktops/:id/stop":                       "desktop.stop",
		"POST /api/v1/desktops/:id/exec":                       "desktop.exec",
		"POST /api/v1/desktops":                                "desktop.create",
		"DELETE /api/v1/desktops/:id":                          "desktop.delete",
		"PATCH /api/v1/desktops/:id":                           "desktop.update",
		"POST /api/v1/tokens":                                  "token.create",
		"DELETE /api/v1/tokens/:id":                            "token.revoke",
		"POST /api/v1/webhooks":                                "webhook.create",
		"POST /api/v1/webhooks/:wid/deliveries/:did/redeliver": "webhook.delivery.redeliver",
		"POST /api/v1/desktops/:id/snapshots":                  "desktop.snapshot.create",
		"POST /api/v1/desktops/:id/snapshots/:name/revert":     "desktop.snapshot.revert",
		"DELETE /api/v1/desktops/:id/snapshots/:name":          "desktop.snapshot.delete",
		"DELETE /api/v1/desktops/:id/processes/:pid":           "desktop.process.signal",
		"PUT /api/v1/desktops/:id/files":                       "desktop.file.set",
		"PUT /api/v1/quotas/:owner":                            "quota.set",
		"POST /api/v1/desktops/:id/ports/:port/*path":          "desktop.port.proxy",
		"POST /mcp": "mcp.call",
		"PUT /api/v1/desktops/:id/console/clipboard":              "console.clipboard.set",
		"POST /api/v1/desktops/:id/console/requests/:rid/approve": "console.request.approve",
	} {
		method, path, _ := strings.Cut(route, " ")
		if got := ActionFor(method, path); got != want {
			t.Errorf("%s: %s, want %s", route, got, want)
		}
	}
	if ObjectType("/api/v1/desktops/:id/snapshots/:name", "name") != "snapshot" || ObjectType("/api/v1/desktops/:id", "id") != "desktop" {
		t.Error("object types")
	}
}

func TestWindowAdmitsMaxASecond(t *testing.T) {
	w := &Window{Max: 10}
	now := time.Now()
	admitted := 0
	for range 25 {
		if ok, _ := w.Allow(now); ok {
			admitted++
		}
	}
	if admitted != 10 || w.Suppressed() != 15 {
		t.Errorf("admitted %d, suppressed %d", admitted, w.Suppressed())
	}
	ok, missed := w.Allow(now.Add(time.Second))
	if !ok || missed != 15 {
		t.Errorf("next second: %v, missed %d", ok, missed)
	}
}
