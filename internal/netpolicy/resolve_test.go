package netpolicy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// fakeDNS answers from its table; a name listed in held waits until its
// channel is closed (or the lookup's context ends).
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	held    map[string]chan struct{}
	calls   map[string]int
	now     int // lookups under way
	most    int // the most under way at once
}

func newFakeDNS() *fakeDNS {
	return &fakeDNS{answers: map[string][]netip.Addr{}, held: map[string]chan struct{}{}, calls: map[string]int{}}
}

func (r *fakeDNS) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if addrs == nil {
		delete(r.answers, host)
		return
	}
	r.answers[host] = nil
	for _, a := range addrs {
		r.answers[host] = append(r.answers[host], netip.MustParseAddr(a))
	}
}

// hold makes lookups of host wait until the returned func is called.
func (r *fakeDNS) hold(host string) (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	r.held[host] = ch
	return sync.OnceFunc(func() { close(ch) })
}

func (r *fakeDNS) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

func (r *fakeDNS) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.calls[host]++
	r.now++
	r.most = max(r.most, r.now)
	ch := r.held[host]
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.now--; r.mu.Unlock() }()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.answers[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// applied records the scripts a firewall applies.
type applied struct {
	mu      sync.Mutex
	scripts []string
}

func (a *applied) apply(_ context.Context, s string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scripts = append(a.scripts, s)
	return nil
}

func (a *applied) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.scripts)
}

func (a *applied) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.scripts) == 0 {
		return ""
	}
	return a.scripts[len(a.scripts)-1]
}

// chainOf is desktop id's own chain in script.
func chainOf(script, id string) string {
	_, after, _ := strings.Cut(script, "\tchain d_"+id+" {\n")
	chain, _, _ := strings.Cut(after, "\t}\n")
	return chain
}

// allowSet is the allow set of desktop id's chain ("" when it has none).
func allowSet(script, id string) string {
	for _, l := range strings.Split(chainOf(script, id), "\n") {
		if strings.Contains(l, "meta mark set") {
			return l
		}
	}
	return ""
}

// logBuffer is a logger's output, safe to read while it logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// within fails the test when do takes longer than a few seconds.
func within(t *testing.T, what string, do func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- do() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s waited for a host name lookup", what)
	}
}

func TestSetDoesNotWaitForLookups(t *testing.T) {
	dns := newFakeDNS()
	dns.set("slow.example.com", "203.0.113.5")
	release := dns.hold("slow.example.com")
	defer release()
	var a applied
	f := New("r1", testNet, dns, a.apply, discard())
	ctx := context.Background()

	within(t, "Set", func() error {
		return f.Set(ctx, &desktop.Desktop{ID: "aaaaaaaaaaa1", Owner: "alice", NetIP: "10.120.0.5",
			Network: desktop.NetworkPolicy{AllowOut: []string{"slow.example.com"}, DenyOut: []string{"198.51.100.0/24"}}})
	})
	// Its literal entries hold at once; the name contributes nothing yet.
	if s := a.last(); !strings.Contains(chainOf(s, "aaaaaaaaaaa1"), "ip daddr { 198.51.100.0/24 } drop") || allowSet(s, "aaaaaaaaaaa1") != "" {
		t.Fatalf("rules before the answer:\n%s", s)
	}
	// Neither another owner's desktop nor a change to alice's waits for
	// her slow DNS.
	within(t, "another desktop's Set", func() error {
		return f.Set(ctx, &desktop.Desktop{ID: "bbbbbbbbbbb2", Owner: "bob", NetIP: "10.120.0.6",
			Network: desktop.NetworkPolicy{DenyOut: []string{"192.0.2.0/24"}}})
	})
	within(t, "Set again", func() error {
		return f.Set(ctx, &desktop.Desktop{ID: "aaaaaaaaaaa1", Owner: "alice", NetIP: "10.120.0.5",
			Network: desktop.NetworkPolicy{AllowOut: []string{"slow.example.com"}}})
	})
	if !strings.Contains(a.last(), `jump d_bbbbbbbbbbb2`) {
		t.Fatalf("bob's desktop has no rules:\n%s", a.last())
	}
	release()
	f.background.Wait()
	if n := dns.count("slow.example.com"); n != 1 {
		t.Errorf("slow.example.com looked up %d times, want once (a lookup under way is not started again)", n)
	}
}

func TestFirewallAppliesAnswersAsTheyArrive(t *testing.T) {
	dns := newFakeDNS()
	dns.set("api.example.com", "203.0.113.5", "203.0.113.6")
	release := dns.hold("api.example.com")
	var a applied
	f := New("r2", testNet, dns, a.apply, discard())
	if err := f.Set(context.Background(), &desktop.Desktop{ID: "aaaaaaaaaaa1", Owner: "alice",
		Network: desktop.NetworkPolicy{AllowOut: []string{"api.example.com"}, DenyOut: []string{"0.0.0.0/0"}}}); err != nil {
		t.Fatal(err)
	}
	if allowSet(a.last(), "aaaaaaaaaaa1") != "" {
		t.Fatalf("allowed before the answer:\n%s", a.last())
	}
	release()
	f.background.Wait()
	if got := allowSet(a.last(), "aaaaaaaaaaa1"); !strings.Contains(got, "{ 203.0.113.5/32, 203.0.113.6/32 }") {
		t.Fatalf("after the answer the allow is %q:\n%s", got, a.last())
	}
	if a.count() != 2 {
		t.Errorf("%d applies, want 2 (the Set, the answer)", a.count())
	}
}

// The answer is used for answerTTL, then looked up again; a failed lookup
// keeps the last good answer and is tried again after retryAfter.
func TestFirewallLooksNamesUpAgainAndKeepsLastAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dns := newFakeDNS()
		dns.set("api.example.com", "203.0.113.5")
		var a applied
		f := New("r3", testNet, dns, a.apply, discard())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go f.Refresh(ctx, time.Minute)
		if err := f.Set(ctx, &desktop.Desktop{ID: "aaaaaaaaaaa1", Owner: "alice",
			Network: desktop.NetworkPolicy{DenyOut: []string{"api.example.com", "198.51.100.0/24"}}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !strings.Contains(a.last(), "ip daddr { 198.51.100.0/24, 203.0.113.5/32 } drop") {
			t.Fatalf("host name not resolved into the deny set:\n%s", a.last())
		}
		applies := a.count()

		dns.set("api.example.com") // the name stops resolving
		time.Sleep(answerTTL - time.Second)
		synctest.Wait()
		if n := dns.count("api.example.com"); n != 1 {
			t.Fatalf("looked up %d times before its answer expired", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := dns.count("api.example.com"); n != 2 {
			t.Fatalf("looked up %d times after its answer expired, want 2", n)
		}
		if a.count() != applies {
			t.Fatalf("a failed lookup changed the rules:\n%s", a.last())
		}

		dns.set("api.example.com", "203.0.113.9")
		time.Sleep(retryAfter)
		synctest.Wait()
		if a.count() != applies+1 || !strings.Contains(a.last(), "ip daddr { 198.51.100.0/24, 203.0.113.9/32 } drop") {
			t.Fatalf("a changed answer was not applied (%d applies):\n%s", a.count()-applies, a.last())
		}
		time.Sleep(answerTTL + time.Minute)
		synctest.Wait()
		if a.count() != applies+1 {
			t.Fatalf("an unchanged answer was applied again")
		}
		cancel()
	})
}

// Lookups run maxLookups at once, whatever the number of names.
func TestLookupsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dns := newFakeDNS()
		var names []string
		var releases []func()
		for i := range 10 {
			h := fmt.Sprintf("n%d.example.com", i)
			names = append(names, h)
			dns.set(h, fmt.Sprintf("203.0.113.%d", i+1))
			releases = append(releases, dns.hold(h))
		}
		var a applied
		f := New("r4", testNet, dns, a.apply, discard())
		if err := f.Set(context.Background(), &desktop.Desktop{ID: "aaaaaaaaaaa1", Owner: "alice",
			Network: desktop.NetworkPolicy{AllowOut: names}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		dns.mu.Lock()
		now := dns.now
		dns.mu.Unlock()
		if now != maxLookups {
			t.Fatalf("%d lookups under way, want %d", now, maxLookups)
		}
		for _, r := range releases {
			r()
		}
		f.background.Wait()
		if dns.most != maxLookups || !strings.Contains(allowSet(a.last(), "aaaaaaaaaaa1"), "203.0.113.10/32") {
			t.Fatalf("at most %d lookups at once; allow %q", dns.most, allowSet(a.last(), "aaaaaaaaaaa1"))
		}
	})
}

// One owner's desktops look up MaxHostNamesPerOwner distinct names
// between them; the rest are left out, with a warning each, once.
func TestOwnerHostNameCap(t *testing.T) {
	dns := newFakeDNS()
	name := func(i int) string { return fmt.Sprintf("n%02d.example.com", i) }
	var first, second []string
	for i := range 80 {
		dns.set(name(i), fmt.Sprintf("198.51.100.%d", i))
		if i < 40 {
			first = append(first, name(i))
		} else {
			second = append(second, name(i))
		}
	}
	var a applied
	var logs logBuffer
	f := New("r5", testNet, dns, a.apply, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	for _, d := range []*desktop.Desktop{
		{ID: "aaaaaaaaaaa1", Owner: "alice", Network: desktop.NetworkPolicy{AllowOut: first}},
		// A name both desktops use counts once.
		{ID: "aaaaaaaaaaa2", Owner: "alice", Network: desktop.NetworkPolicy{AllowOut: []string{name(0)}, DenyOut: second}},
		// Another owner has a cap of its own.
		{ID: "bbbbbbbbbbb3", Owner: "bob", Network: desktop.NetworkPolicy{DenyOut: []string{name(79)}}},
	} {
		if err := f.Set(ctx, d); err != nil {
			t.Fatal(err)
		}
		f.background.Wait()
	}
	for i := range 80 {
		want := 1
		if i >= MaxHostNamesPerOwner && i != 79 {
			want = 0
		}
		if n := dns.count(name(i)); n != want {
			t.Errorf("%s looked up %d times, want %d", name(i), n, want)
		}
	}
	s := a.last()
	if d := chainOf(s, "aaaaaaaaaaa2"); !strings.Contains(d, "198.51.100.63/32") || strings.Contains(d, "198.51.100.64/32") || strings.Contains(d, "198.51.100.79/32") {
		t.Errorf("alice's second desktop's chain is past the cap:\n%s", d)
	}
	if d := chainOf(s, "bbbbbbbbbbb3"); !strings.Contains(d, "198.51.100.79/32") {
		t.Errorf("bob's name was not looked up:\n%s", d)
	}
	if n := logs.count("too many host names"); n != 80-MaxHostNamesPerOwner {
		t.Errorf("%d warnings of names past the cap, want one each (%d):\n%s", n, 80-MaxHostNamesPerOwner, logs.b.String())
	}
}

// A host name to allow opens no reserved address it resolves to (DNS
// rebinding to cloud metadata or the LAN) but within the install's
// owner-openable ranges, and never link-local; literal entries, checked by
// the API, and denies are left as they are.
func TestHostNamesDoNotOpenReservedRanges(t *testing.T) {
	dns := newFakeDNS()
	dns.set("meta.example.com", "169.254.169.254")
	dns.set("lan.example.com", "10.1.2.3", "203.0.113.7")
	dns.set("far.example.com", "10.2.0.1")
	var a applied
	var logs logBuffer
	f := New("r6", testNet, dns, a.apply, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	d := &desktop.Desktop{ID: "aaaaaaaaaaa1", Owner: "alice", Network: desktop.NetworkPolicy{
		AllowOut: []string{"meta.example.com", "lan.example.com", "far.example.com", "172.16.0.0/12"},
		DenyOut:  []string{"0.0.0.0/0", "meta.example.com"}}}
	if err := f.Set(ctx, d); err != nil {
		t.Fatal(err)
	}
	f.background.Wait()
	if got := allowSet(a.last(), "aaaaaaaaaaa1"); !strings.Contains(got, "{ 172.16.0.0/12, 203.0.113.7/32 }") {
		t.Errorf("allow %q, want the literal range and the public address only", got)
	}
	if !strings.Contains(chainOf(a.last(), "aaaaaaaaaaa1"), "ip daddr { 0.0.0.0/0 } drop") {
		t.Errorf("deny set changed:\n%s", chainOf(a.last(), "aaaaaaaaaaa1"))
	}

	f.SetOpenable([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("169.254.0.0/16")})
	if err := f.Set(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got := allowSet(a.last(), "aaaaaaaaaaa1"); !strings.Contains(got, "{ 10.1.2.3/32, 172.16.0.0/12, 203.0.113.7/32 }") {
		t.Errorf("with 10.1.0.0/16 openable the allow is %q, want 10.1.2.3 in and 169.254.169.254 and 10.2.0.1 out", got)
	}
	for _, w := range []string{"host=meta.example.com addr=169.254.169.254", "host=far.example.com addr=10.2.0.1", "host=lan.example.com addr=10.1.2.3"} {
		if n := logs.count(w); n != 1 {
			t.Errorf("%d warnings for %s, want 1:\n%s", n, w, logs.b.String())
		}
	}
}
