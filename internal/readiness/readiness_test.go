package readiness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
)

// fakeGuest answers probes from a script of answers, the last repeated.
type fakeGuest struct {
	mu      sync.Mutex
	answers []answer
	asked   int
}

type answer struct {
	waiting string
	err     error
}

func (f *fakeGuest) Probe(ctx context.Context, domain string) (guest.Probe, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.answers[min(f.asked, len(f.answers)-1)]
	f.asked++
	if a.err != nil {
		return guest.Probe{}, a.err
	}
	return guest.Probe{Via: "bureau-agent", Waiting: a.waiting}, nil
}

func (f *fakeGuest) set(a ...answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers, f.asked = a, 0
}

func (f *fakeGuest) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked
}

func newTracker(f *fakeGuest) *Tracker {
	t := New(context.Background(), f, nil)
	t.Every = time.Millisecond
	return t
}

func running(id string) *desktop.Desktop {
	return &desktop.Desktop{ID: id, Name: "d" + id, State: desktop.StateRunning}
}

func waitReady(t *testing.T, tr *Tracker, id string) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := tr.Wait(ctx, id)
	if !st.Ready {
		t.Fatalf("not ready: %+v", st)
	}
	return st
}

func TestBootToReady(t *testing.T) {
	f := &fakeGuest{answers: []answer{{err: errors.New("no agent")}, {waiting: guest.WaitUser}, {waiting: guest.WaitSession}, {}}}
	tr := newTracker(f)
	var became []time.Duration
	tr.Changed = func(_ context.Context, id string, st Status, took time.Duration) { became = append(became, took) }
	if st := tr.Status("a"); st.Ready || st.Up != "" {
		t.Fatalf("a desktop not followed: %+v", st)
	}
	tr.Follow(running("a"))
	st := waitReady(t, tr, "a")
	if st.Up != UpSession || st.Waiting != "" || st.ReadyAt.IsZero() || st.Via != "bureau-agent" {
		t.Fatalf("ready status: %+v", st)
	}
	if f.count() != 4 {
		t.Fatalf("asked %d times, want 4 (booting, user, session, ready)", f.count())
	}
	// Once ready it is not asked again, even when followed again.
	tr.Follow(running("a"))
	time.Sleep(20 * time.Millisecond)
	if f.count() != 4 {
		t.Fatalf("asked again after ready: %d", f.count())
	}
	if len(became) != 1 {
		t.Fatalf("Changed called %d times, want 1", len(became))
	}
}

func TestNotReadyStages(t *testing.T) {
	f := &fakeGuest{answers: []answer{{err: errors.New("no agent")}}}
	tr := New(context.Background(), f, nil) // the default pace: one check at once, the next 2 s later
	ctx := context.Background()
	d := running("b")
	if st := tr.Check(ctx, d); st.Ready || st.Up != UpBooting || st.Waiting != guest.WaitAgent {
		t.Fatalf("booting: %+v", st)
	}
	f.set(answer{waiting: guest.WaitSetup})
	if st := tr.Check(ctx, d); st.Ready || st.Up != UpAgent || st.Waiting != guest.WaitSetup {
		t.Fatalf("setup running: %+v", st)
	}
	// Check asks now: a watch's stale answer does not refuse a call.
	f.set(answer{})
	if st := tr.Check(ctx, d); !st.Ready {
		t.Fatalf("ready guest reported %+v", st)
	}
}

func TestKeptWhileMemoryKept(t *testing.T) {
	f := &fakeGuest{answers: []answer{{}}}
	tr := newTracker(f)
	d := running("c")
	tr.Follow(d)
	first := waitReady(t, tr, "c")
	for _, st := range []desktop.State{desktop.StateHibernating, desktop.StateHibernated, desktop.StateResuming, desktop.StatePaused, desktop.StateNapping} {
		tr.Follow(&desktop.Desktop{ID: "c", State: st})
		if !tr.Status("c").Ready {
			t.Fatalf("readiness lost when %s", st)
		}
	}
	tr.Follow(d)
	if got := tr.Status("c"); !got.Ready || !got.ReadyAt.Equal(first.ReadyAt) {
		t.Fatalf("after a wake: %+v, want ready since %s", got, first.ReadyAt)
	}
	for _, st := range []desktop.State{desktop.StateStopping, desktop.StateRebooting, desktop.StateReverting, desktop.StateReimaging, desktop.StateCrashed, desktop.StateError} {
		tr.Follow(d)
		waitReady(t, tr, "c")
		tr.Follow(&desktop.Desktop{ID: "c", State: st})
		if got := tr.Status("c"); got.Ready || got.Up != "" {
			t.Fatalf("still ready when %s: %+v", st, got)
		}
	}
}

func TestRecheckAfterRebootFromInside(t *testing.T) {
	f := &fakeGuest{answers: []answer{{}}}
	tr := newTracker(f)
	tr.Follow(running("e"))
	waitReady(t, tr, "e")
	// The guest rebooted: its agent's new session comes before its session.
	f.set(answer{waiting: guest.WaitSession}, answer{waiting: guest.WaitSession}, answer{})
	tr.Recheck(running("e").DomainName())
	// Not ready once the first answer is recorded (the count goes up as
	// the guest is asked, before its answer is).
	deadline := time.Now().Add(5 * time.Second)
	for tr.Status("e").Ready && f.count() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	waitReady(t, tr, "e")
	if f.count() != 3 {
		t.Fatalf("asked %d times after the recheck, want 3", f.count())
	}
}

// A ready desktop whose agent does not answer for a moment (a new
// session after a resume or a move) stays ready: exec is not refused
// while its session, kept in memory, is there.
func TestReadyKeptWhileAgentSilent(t *testing.T) {
	f := &fakeGuest{answers: []answer{{}}}
	tr := newTracker(f)
	tr.Follow(running("g"))
	waitReady(t, tr, "g")
	f.set(answer{err: errors.New("no answer on its channel")}, answer{err: errors.New("no answer")}, answer{})
	tr.Recheck(running("g").DomainName())
	deadline := time.Now().Add(5 * time.Second)
	for f.count() < 3 && time.Now().Before(deadline) {
		if st := tr.Status("g"); !st.Ready {
			t.Fatalf("a silent agent made a ready desktop not ready: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
	if f.count() < 3 {
		t.Fatalf("asked %d times: the recheck stopped before the guest answered", f.count())
	}
	// An answer that says otherwise counts, after a silence too (a guest
	// that rebooted from inside). (A recheck while the last watch winds
	// down is skipped: it is given a moment to end.)
	time.Sleep(20 * time.Millisecond)
	f.set(answer{err: errors.New("no answer")}, answer{waiting: guest.WaitSession})
	tr.Recheck(running("g").DomainName())
	for tr.Status("g").Ready && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := tr.Status("g"); st.Ready || st.Waiting != guest.WaitSession {
		t.Fatalf("a guest whose session is gone: %+v", st)
	}
}

func TestWaitEnds(t *testing.T) {
	f := &fakeGuest{answers: []answer{{waiting: guest.WaitSession}}}
	tr := newTracker(f)
	ctx := context.Background()
	tr.Follow(running("f"))
	// The time is up: Wait answers what it knows.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer wcancel()
	if st := tr.Wait(wctx, "f"); st.Ready || st.Up != UpAgent || st.Waiting != guest.WaitSession {
		t.Fatalf("after the time ran out: %+v", st)
	}
	// The desktop stops: Wait answers at once, not followed.
	done := make(chan Status)
	go func() { done <- tr.Wait(ctx, "f") }()
	tr.Follow(&desktop.Desktop{ID: "f", State: desktop.StateStopping})
	select {
	case st := <-done:
		if st.Ready || st.Up != "" {
			t.Fatalf("a stopped desktop's wait: %+v", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not end when the desktop stopped")
	}
	// Deleted desktops are not followed.
	now := time.Now()
	tr.Follow(&desktop.Desktop{ID: "g", State: desktop.StateRunning, DeletedAt: &now})
	if st := tr.Status("g"); st.Up != "" {
		t.Fatalf("a deleted desktop is followed: %+v", st)
	}
}

// TestAdoptedNotAnnounced: a desktop found running when bureau starts is
// followed, but its being ready is not news; a later start over is.
func TestAdoptedNotAnnounced(t *testing.T) {
	f := &fakeGuest{answers: []answer{{}}}
	tr := newTracker(f)
	var announced int
	var mu sync.Mutex
	tr.Changed = func(context.Context, string, Status, time.Duration) { mu.Lock(); announced++; mu.Unlock() }
	tr.Adopt(running("h"))
	waitReady(t, tr, "h")
	tr.Follow(&desktop.Desktop{ID: "h", State: desktop.StateRebooting})
	tr.Follow(running("h"))
	waitReady(t, tr, "h")
	mu.Lock()
	defer mu.Unlock()
	if announced != 1 {
		t.Fatalf("announced %d times, want once (after the reboot, not on adoption)", announced)
	}
}
