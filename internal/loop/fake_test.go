package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

// fakeStore keeps requests and policies in memory, deciding as the SQL
// store does (only a pending request).
type fakeStore struct {
	mu       sync.Mutex
	reqs     map[string]*Request
	policies map[string][]byte
}

func newFakeStore() *fakeStore {
	return &fakeStore{reqs: map[string]*Request{}, policies: map[string][]byte{}}
}

func (f *fakeStore) AddRequest(_ context.Context, r *Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *r
	f.reqs[r.ID] = &c
	return nil
}

func (f *fakeStore) GetRequest(_ context.Context, id string) (*Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs[id]
	if r == nil {
		return nil, fmt.Errorf("request %s: %w", id, ErrNotFound)
	}
	c := *r
	return &c, nil
}

func (f *fakeStore) ListRequests(_ context.Context, fl Filter) ([]*Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []*Request{}
	for _, r := range f.reqs {
		if (fl.Owner == "" || r.Owner == fl.Owner) && (fl.DesktopID == "" || r.DesktopID == fl.DesktopID) &&
			(fl.Kind == "" || r.Kind == fl.Kind) && (fl.Status == "" || r.Status == fl.Status) {
			c := *r
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *Request) int { return b.AskedAt.Compare(a.AskedAt) })
	return out, nil
}

func (f *fakeStore) DecideRequest(_ context.Context, r *Request) (*Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.reqs[r.ID]
	if old == nil {
		return nil, ErrNotFound
	}
	if old.Decided() {
		c := *old
		return &c, ErrAlreadyDecided
	}
	c := *r
	f.reqs[r.ID] = &c
	out := c
	return &out, nil
}

func (f *fakeStore) ApprovalPolicy(_ context.Context, id string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.policies[id], nil
}

func (f *fakeStore) SetApprovalPolicy(_ context.Context, id string, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policies[id] = p
	return nil
}

func (f *fakeStore) DeleteApprovalPolicy(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.policies, id)
	return nil
}

// event is a Note the service made.
type event struct{ desktop, typ, actor, msg string }

// world is a Service over a fake store, with what it told recorded.
type world struct {
	*Service
	store *fakeStore

	mu      sync.Mutex
	events  []event
	steps   []*steps.Step
	changed map[string]int
	// recording: when the recording being made began (zero: none is).
	recording time.Time
}

func newWorld(t *testing.T, st *fakeStore) *world {
	t.Helper()
	if st == nil {
		st = newFakeStore()
	}
	w := &world{store: st, changed: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := New(ctx, Config{Store: st, Dir: t.TempDir(),
		Note: func(_ context.Context, d, typ, actor, msg string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.events = append(w.events, event{d, typ, actor, msg})
		},
		Step: func(_ context.Context, s *steps.Step) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.steps = append(w.steps, s)
		},
		RecordingAt: func(_ string, t time.Time) (string, int64, bool) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.recording.IsZero() || t.Before(w.recording) {
				return "", 0, false
			}
			return "rec_1", t.Sub(w.recording).Milliseconds(), true
		},
		Changed: func(d string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.changed[d]++
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Service = s
	return w
}

// eventsOf lists the events of type typ.
func (w *world) eventsOf(typ string) []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []event
	for _, e := range w.events {
		if e.typ == typ {
			out = append(out, e)
		}
	}
	return out
}

func (w *world) stepsOf(kind string) []*steps.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*steps.Step
	for _, s := range w.steps {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// eventually waits up to 2 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s: not within 2s", what)
}

// fields decodes a step's JSON.
func fields(t *testing.T, b json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

var (
	dana  = Person{Name: "Dana", Actor: "alice/tok_dana", Console: "ct_dana"}
	sam   = Person{Name: "Sam", Actor: "alice/tok_sam"}
	agent = "alice/tok_agent"
)
