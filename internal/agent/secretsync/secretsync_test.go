package secretsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

type fakeAgents struct {
	mu    sync.Mutex
	fails int                          // calls that fail before one succeeds
	names []string                     // what the services name
	got   map[string]map[string]string // domain → values handed over
}

func (f *fakeAgents) SyncSecrets(_ context.Context, domain string, resolve func([]string) map[string]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return nil, errors.New("agent not up")
	}
	v := resolve(f.names)
	if f.got == nil {
		f.got = map[string]map[string]string{}
	}
	f.got[domain] = v
	out := []string{}
	for n := range v {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

type fakeDesktops []*desktop.Desktop

func (f fakeDesktops) Get(_ context.Context, id string) (*desktop.Desktop, error) {
	for _, d := range f {
		if d.ID == id {
			return d, nil
		}
	}
	return nil, desktop.ErrNotFound
}

func (f fakeDesktops) List(_ context.Context, flt desktop.Filter) ([]*desktop.Desktop, error) {
	var out []*desktop.Desktop
	for _, d := range f {
		if flt.Owner == "" || d.Owner == flt.Owner {
			out = append(out, d)
		}
	}
	return out, nil
}

type fakeSecrets map[string]string // owner/name → value

func (f fakeSecrets) ResolveForDesktop(_ context.Context, owner, _ string, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		v, ok := f[owner+"/"+n]
		if !ok {
			return nil, fmt.Errorf("no secret %s", n)
		}
		out[n] = v
	}
	return out, nil
}

func newSync(a *fakeAgents) *SecretSync {
	return &SecretSync{Agents: a, Secrets: fakeSecrets{"alice/A": "1", "alice/B": "2"}, Log: slog.New(slog.DiscardHandler),
		Desktops: fakeDesktops{
			{ID: "d1", Owner: "alice", State: desktop.StateRunning},
			{ID: "d2", Owner: "alice", State: desktop.StateHibernated},
			{ID: "d3", Owner: "bob", State: desktop.StateRunning},
		}, Retry: 10 * time.Millisecond, Within: 5 * time.Second}
}

func TestSyncHandsOverWhatIsSetAndLeavesOutWhatIsNot(t *testing.T) {
	a := &fakeAgents{names: []string{"A", "B", "MISSING"}}
	s := newSync(a)
	if err := s.Sync(context.Background(), "bureau-d1"); err != nil {
		t.Fatal(err)
	}
	if got := a.got["bureau-d1"]; len(got) != 2 || got["A"] != "1" || got["B"] != "2" {
		t.Fatalf("handed over %v", got)
	}
	if err := s.Sync(context.Background(), "not-a-bureau-domain"); err != nil || len(a.got) != 1 {
		t.Fatalf("a foreign domain: %v %v", err, a.got)
	}
}

func TestBootedRetriesUntilTheAgentAnswers(t *testing.T) {
	a := &fakeAgents{names: []string{"A"}, fails: 3}
	newSync(a).Booted(context.Background(), "bureau-d1")
	if a.got["bureau-d1"]["A"] != "1" {
		t.Fatalf("after retries: %v", a.got)
	}
}

func TestChangedReachesTheOwnersRunningDesktopsOnly(t *testing.T) {
	a := &fakeAgents{names: []string{"A"}}
	newSync(a).Changed(context.Background(), "alice", "")
	if len(a.got) != 1 || a.got["bureau-d1"] == nil {
		t.Fatalf("synced %v, want d1 only (d2 sleeps, d3 is bob's)", a.got)
	}
}
