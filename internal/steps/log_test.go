package steps

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// memStore is an in-memory Store.
type memStore struct {
	mu    sync.Mutex
	steps map[string][]*Step
	// taken makes the next AddStep of that number fail (another writer).
	taken int64
	// policies are desktops' checkpoint policies.
	policies map[string]CheckpointPolicy
}

func newMem() *memStore { return &memStore{steps: map[string][]*Step{}} }

func (m *memStore) AddStep(_ context.Context, st *Step) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.Seq == m.taken {
		m.taken = 0
		c := *st
		m.steps[st.DesktopID] = append(m.steps[st.DesktopID], &c)
		return ErrTaken
	}
	for _, x := range m.steps[st.DesktopID] {
		if x.Seq == st.Seq {
			return ErrTaken
		}
	}
	c := *st
	m.steps[st.DesktopID] = append(m.steps[st.DesktopID], &c)
	return nil
}

func (m *memStore) LastStep(_ context.Context, id string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, x := range m.steps[id] {
		n = max(n, x.Seq)
	}
	return n, nil
}

func (m *memStore) ListSteps(_ context.Context, id string, p Page) ([]*Step, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*Step{}
	for _, x := range m.steps[id] {
		if x.Seq > p.After && (p.Before <= 0 || x.Seq < p.Before) {
			out = append(out, x)
		}
	}
	if len(out) > p.Limit {
		if p.Newest {
			out = out[len(out)-p.Limit:]
		} else {
			out = out[:p.Limit]
		}
	}
	return out, nil
}

func (m *memStore) GetStep(ctx context.Context, id string, seq int64) (*Step, error) {
	l, _ := m.ListSteps(ctx, id, Page{After: seq - 1, Limit: 1})
	if len(l) == 0 || l[0].Seq != seq {
		return nil, desktop.ErrNotFound
	}
	return l[0], nil
}

func (m *memStore) DeleteSteps(_ context.Context, id string, through int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keep []*Step
	for _, x := range m.steps[id] {
		if through >= 0 && x.Seq > through {
			keep = append(keep, x)
		}
	}
	m.steps[id] = keep
	return nil
}

func step(kind string) *Step {
	return &Step{DesktopID: "d1", At: time.Now(), Actor: "alice/tok_1", Kind: kind,
		Input: json.RawMessage(`{}`), Result: json.RawMessage(`null`), Status: 200}
}

func TestRecordNumbersStepsAndKeepsThumbnails(t *testing.T) {
	ctx := context.Background()
	store, dir := newMem(), t.TempDir()
	l := New(store, dir, 0, slog.Default())
	var kinds []string
	l.Recorded = func(kind string, ok bool) { kinds = append(kinds, kind) }
	f, stop := l.Follow("d1")
	defer stop()

	if err := l.Record(ctx, step(KindComputer), []byte("before-jpeg"), []byte("after-jpeg")); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(ctx, step(KindExec), nil, []byte("after-2")); err != nil {
		t.Fatal(err)
	}
	list, _ := l.List(ctx, "d1", Page{Limit: 10})
	if len(list) != 2 || list[0].Seq != 1 || list[1].Seq != 2 {
		t.Fatalf("steps %+v", list)
	}
	if !list[0].Before || !list[0].After || list[1].Before || !list[1].After {
		t.Errorf("thumbnail flags: %+v %+v", list[0], list[1])
	}
	if b, err := l.Thumbnail(ctx, "d1", 1, Before); err != nil || string(b) != "before-jpeg" {
		t.Errorf("thumbnail before step 1: %q %v", b, err)
	}
	if _, err := l.Thumbnail(ctx, "d1", 2, Before); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("a thumbnail never taken: %v", err)
	}
	if _, err := l.Thumbnail(ctx, "d1", 9, After); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("a step that does not exist: %v", err)
	}
	for _, want := range []int64{1, 2} {
		select {
		case st := <-f.C:
			if st.Seq != want {
				t.Errorf("followed step %d, want %d", st.Seq, want)
			}
		case <-time.After(time.Second):
			t.Fatal("a follower was not told")
		}
	}
	if len(kinds) != 2 || kinds[0] != KindComputer {
		t.Errorf("recorded %v", kinds)
	}
	// Another desktop numbers its own steps.
	other := step(KindExec)
	other.DesktopID = "d2"
	l.Record(ctx, other, nil, nil)
	if other.Seq != 1 {
		t.Errorf("d2's first step is %d", other.Seq)
	}
}

// A fresh log (bureau restarted) numbers on from the store; a number
// another writer took is skipped.
func TestRecordContinuesFromTheStore(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	l := New(store, t.TempDir(), 0, slog.Default())
	l.Record(ctx, step(KindExec), nil, nil)
	l.Record(ctx, step(KindExec), nil, nil)
	l2 := New(store, t.TempDir(), 0, slog.Default())
	st := step(KindExec)
	if err := l2.Record(ctx, st, nil, nil); err != nil || st.Seq != 3 {
		t.Fatalf("after a restart: seq %d, %v", st.Seq, err)
	}
	store.taken = 4
	st = step(KindExec)
	if err := l2.Record(ctx, st, nil, nil); err != nil || st.Seq != 5 {
		t.Fatalf("after a taken number: seq %d, %v", st.Seq, err)
	}
}

func TestPruneAndForget(t *testing.T) {
	ctx := context.Background()
	store, dir := newMem(), t.TempDir()
	l := New(store, dir, 150, slog.Default())
	for i := 0; i < 200; i++ {
		if err := l.Record(ctx, step(KindComputer), []byte("b"), []byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := l.List(ctx, "d1", Page{Limit: 1000})
	if len(list) != 150 || list[0].Seq != 51 {
		t.Fatalf("kept %d steps from %d, want 150 from 51", len(list), list[0].Seq)
	}
	if _, err := os.Stat(filepath.Join(dir, "d1", "50-after.jpg")); !os.IsNotExist(err) {
		t.Errorf("a pruned step's thumbnail is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d1", "51-after.jpg")); err != nil {
		t.Errorf("a kept step's thumbnail: %v", err)
	}
	if err := l.Forget(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := l.List(ctx, "d1", Page{Limit: 1000}); len(list) != 0 {
		t.Errorf("%d steps left after Forget", len(list))
	}
	if _, err := os.Stat(filepath.Join(dir, "d1")); !os.IsNotExist(err) {
		t.Errorf("thumbnails left after Forget: %v", err)
	}
}

func TestSlowFollowerIsToldWhatItMissed(t *testing.T) {
	l := New(newMem(), t.TempDir(), 0, slog.Default())
	f, stop := l.Follow("d1")
	defer stop()
	for i := 0; i < followBuffer+3; i++ {
		l.Record(context.Background(), step(KindExec), nil, nil)
	}
	if n := f.Dropped(); n != 3 {
		t.Errorf("dropped %d, want 3", n)
	}
	if f.Dropped() != 0 {
		t.Error("Dropped does not clear")
	}
}
