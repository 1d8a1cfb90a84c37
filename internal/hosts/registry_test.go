package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"testing"
)

// memStore keeps hosts in a map.
type memStore struct {
	mu sync.Mutex
	m  map[string]Host
}

func (s *memStore) ListHosts(context.Context) ([]Host, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Host
	for _, h := range s.m {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *memStore) GetHost(_ context.Context, name string) (*Host, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[name]
	if !ok {
		return nil, ErrNotFound
	}
	return &h, nil
}

func (s *memStore) InsertHost(_ context.Context, h *Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.m {
		if x.Name == h.Name || x.URI == h.URI {
			return ErrExists
		}
	}
	s.m[h.Name] = *h
	return nil
}

func (s *memStore) DeleteHost(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[name]; !ok {
		return ErrNotFound
	}
	delete(s.m, name)
	return nil
}

func (s *memStore) UpdateHostHealth(_ context.Context, h *Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[h.Name]; !ok {
		return ErrNotFound
	}
	s.m[h.Name] = *h
	return nil
}

// fakeNet answers for the URIs it has up; a link to a URI that went down
// fails its next check, as libvirt's keepalive makes a real one.
type fakeNet struct {
	mu     sync.Mutex
	up     map[string]bool
	dials  int
	closed int
}

type fakeLink struct {
	n   *fakeNet
	uri string
}

func (n *fakeNet) dial(_ context.Context, uri string) (Link, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dials++
	if !n.up[uri] {
		return nil, fmt.Errorf("unable to connect to server at %s: Connection refused", uri)
	}
	return &fakeLink{n, uri}, nil
}

func (n *fakeNet) set(uri string, up bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.up[uri] = up
}

func (l *fakeLink) Facts(context.Context) (Facts, error) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	if !l.n.up[l.uri] {
		return Facts{}, errors.New("connection lost: no keepalive answer")
	}
	return Facts{Hostname: "h", Accelerator: "tcg", CPUs: 2, MemoryMiB: 4096, FreeMemoryMiB: 1024}, nil
}

func (l *fakeLink) Close() error {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	l.n.closed++
	return nil
}

const uri2 = "qemu+tcp://127.0.0.1:16510/system"

func newTestRegistry(t *testing.T, single bool) (*Registry, *memStore, *fakeNet) {
	t.Helper()
	st := &memStore{m: map[string]Host{}}
	n := &fakeNet{up: map[string]bool{"qemu:///system": true, uri2: true}}
	r := NewRegistry(st, n.dial, slog.New(slog.DiscardHandler))
	r.Single, r.LocalURI, r.LocalAccelerator = single, "qemu:///system", "kvm"
	if err := r.EnsureLocal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureLocal(context.Background()); err != nil {
		t.Fatalf("second start: %v", err)
	}
	return r, st, n
}

func TestSQLiteServesOneHost(t *testing.T) {
	r, _, n := newTestRegistry(t, true)
	_, err := r.Add(context.Background(), AddRequest{Name: "two", URI: uri2, Labels: nil})
	if !errors.Is(err, ErrNeedsPostgres) {
		t.Fatalf("add on SQLite: %v", err)
	}
	if n.dials != 0 {
		t.Error("dialled a host it could not add")
	}
}

func TestAddChecksTheHostFirst(t *testing.T) {
	r, st, n := newTestRegistry(t, false)
	ctx := context.Background()
	var inv *InvalidError
	for _, bad := range []struct{ name, uri string }{
		{"Two", uri2}, {"two", "http://x/system"}, {"two", "qemu+ssh://h/session"}, {"", uri2}, {"two", "qemu+ssh://root:hunter2@h/system"},
	} {
		if _, err := r.Add(ctx, AddRequest{Name: bad.name, URI: bad.uri, Labels: nil}); !errors.As(err, &inv) {
			t.Errorf("add %q %q: %v, want an invalid field", bad.name, bad.uri, err)
		}
	}
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: uri2, Labels: map[string]string{"bad key!": "x"}}); !errors.As(err, &inv) || inv.Field != "labels" {
		t.Errorf("bad label: %v", err)
	}
	n.set(uri2, false)
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: uri2, Labels: nil}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("unreachable host: %v", err)
	}
	if _, err := st.GetHost(ctx, "two"); err == nil {
		t.Fatal("an unreachable host was recorded")
	}
	n.set(uri2, true)
	h, err := r.Add(ctx, AddRequest{Name: "two", URI: uri2, Labels: map[string]string{"zone": "b"}})
	if err != nil || h.State != StateUp || h.CPUs != 2 || h.LastSeenAt == nil {
		t.Fatalf("add: %+v %v", h, err)
	}
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: "qemu+tcp://127.0.0.2:16510/system", Labels: nil}); !errors.Is(err, ErrExists) {
		t.Errorf("same name again: %v", err)
	}
	dials := n.dials
	n.set(uri2, false)
	if _, err := r.Add(ctx, AddRequest{Name: "three", URI: uri2, Labels: nil}); !errors.Is(err, ErrExists) {
		t.Errorf("same URI again: %v (said before connecting, even when it does not answer)", err)
	}
	if n.dials != dials {
		t.Error("dialled a host that is there already")
	}
}

func TestLocalFollowsBureausURI(t *testing.T) {
	r, st, _ := newTestRegistry(t, true)
	ctx := context.Background()
	r.LocalURI = "qemu+unix:///system?socket=/run/other"
	if err := r.EnsureLocal(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := st.GetHost(ctx, LocalName); err != nil || h.URI != r.LocalURI {
		t.Errorf("local after a URI change: %+v %v", h, err)
	}
}

func TestChecksMarkALostHostAndItsReturn(t *testing.T) {
	r, st, n := newTestRegistry(t, false)
	ctx := context.Background()
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: uri2, Labels: nil}); err != nil {
		t.Fatal(err)
	}
	r.CheckAll(ctx)
	local, _ := st.GetHost(ctx, LocalName)
	if local.State != StateUp || local.Accelerator != "kvm" || local.CPUs != 2 {
		t.Errorf("local after a check: %+v (its accelerator is the one chosen at start-up)", local)
	}
	dials := n.dials
	r.CheckAll(ctx)
	if n.dials != dials {
		t.Errorf("a check of hosts that are up dialled again (%d → %d): links are kept", dials, n.dials)
	}
	n.set(uri2, false)
	r.CheckAll(ctx)
	two, _ := st.GetHost(ctx, "two")
	if two.State != StateUnreachable || two.LastError == "" || two.LastSeenAt == nil || two.CPUs != 2 {
		t.Errorf("lost host: %+v (keeps what it last reported)", two)
	}
	r.CheckAll(ctx) // still down: the reconnect fails too
	if two, _ = st.GetHost(ctx, "two"); two.State != StateUnreachable || two.LastError == "" {
		t.Errorf("still lost: %+v", two)
	}
	n.set(uri2, true)
	r.CheckAll(ctx)
	if two, _ = st.GetHost(ctx, "two"); two.State != StateUp || two.LastError != "" {
		t.Errorf("back: %+v", two)
	}
}

func TestRemove(t *testing.T) {
	r, st, n := newTestRegistry(t, false)
	ctx := context.Background()
	if err := r.Remove(ctx, LocalName); !errors.Is(err, ErrInUse) {
		t.Errorf("remove local: %v", err)
	}
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: uri2, Labels: nil}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetHost(ctx, "two"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after remove: %v", err)
	}
	if n.closed != 1 {
		t.Errorf("%d links closed, want the removed host's", n.closed)
	}
	if err := r.Remove(ctx, "two"); !errors.Is(err, ErrNotFound) {
		t.Errorf("remove twice: %v", err)
	}
}
