// Package readiness follows whether each running desktop is ready: its
// guest answers, its user and first-boot setup exist, and its session is
// up, so exec, files and computer use work. A desktop reports running
// seconds after it is started while its guest takes minutes more to get
// there (under software emulation); callers ask here instead of finding
// out from a black screenshot or a guest error.
//
// Readiness is watched from the moment a desktop runs until it is ready,
// by asking its guest every Every; it is kept while the guest's memory is
// kept (paused, napping, sleeping, hibernated, migrating: the session
// is still there when it runs again) and forgotten when the guest starts
// over (stopped, rebooted, reverted, reimaged, crashed) or a new session
// with its agent suggests it rebooted from inside.
package readiness

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
)

// Up is how far a running desktop has come.
const (
	UpBooting = "booting" // no agent in the guest answers yet
	UpAgent   = "agent"   // an agent answers; setup or the session is still coming
	UpSession = "session" // the session is up: ready
)

// Status is a desktop's readiness.
type Status struct {
	Ready bool
	// ReadyAt: when it last became ready (zero when not ready).
	ReadyAt time.Time
	// Up and Waiting (one of guest.Wait*) say how far it is; both are ""
	// for a desktop not followed (not running).
	Up      string
	Waiting string
	// Via is the agent that answered the last check.
	Via string
}

// Prober asks a desktop's guest what is up (guest.Service.Probe).
type Prober interface {
	Probe(ctx context.Context, domain string) (guest.Probe, error)
}

// Tracker follows the readiness of running desktops.
type Tracker struct {
	probe Prober
	log   *slog.Logger
	// Every is how often a desktop not ready yet is asked; Within bounds
	// one check.
	Every, Within time.Duration
	// Changed, if set, is called (in the tracker's goroutine) when a
	// desktop becomes ready, with how long it took from the moment it was
	// first seen running.
	Changed func(ctx context.Context, id string, st Status, took time.Duration)

	// base bounds every watch: they outlive the calls that start them.
	base context.Context

	mu sync.Mutex
	m  map[string]*entry // by desktop id
}

type entry struct {
	domain string
	st     Status
	since  time.Time
	// stop ends the watch (nil: none runs); changed is closed at every
	// change of st and made anew.
	stop    context.CancelFunc
	changed chan struct{}
	// adopted: running before bureau started; its coming up was told
	// then, not again (Changed is not called for it).
	adopted bool
}

// New builds a tracker whose watches end with ctx.
func New(ctx context.Context, p Prober, log *slog.Logger) *Tracker {
	return &Tracker{probe: p, log: log, Every: 2 * time.Second, Within: 10 * time.Second, base: ctx, m: map[string]*entry{}}
}

// keeps says whether a desktop in state st keeps its guest's memory, so
// its session is there when it runs again.
func keeps(st desktop.State) bool {
	switch st {
	case desktop.StateRunning, desktop.StatePausing, desktop.StatePaused, desktop.StateNapping, desktop.StateSleeping,
		desktop.StateHibernating, desktop.StateHibernated, desktop.StateResuming, desktop.StateMigrating:
		return true
	}
	return false
}

// Follow takes a desktop's new state: a running desktop not yet followed
// is watched until ready; one whose guest starts over is forgotten.
func (t *Tracker) Follow(d *desktop.Desktop) { t.follow(d, false) }

// Adopt follows a desktop found running when bureau starts: as Follow,
// but its becoming ready is not announced (it was, by the bureau before).
func (t *Tracker) Adopt(d *desktop.Desktop) { t.follow(d, true) }

func (t *Tracker) follow(d *desktop.Desktop, adopted bool) {
	if d.DeletedAt != nil || !keeps(d.State) {
		t.Forget(d.ID)
		return
	}
	if d.State != desktop.StateRunning {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[d.ID]
	if e == nil {
		e = &entry{domain: d.DomainName(), since: time.Now(), changed: make(chan struct{}), st: Status{Up: UpBooting, Waiting: guest.WaitAgent}, adopted: adopted}
		t.m[d.ID] = e
	}
	if !e.st.Ready && e.stop == nil {
		t.watch(d.ID, e)
	}
}

// Recheck starts over for the desktop on domain: its agent's new session
// may mean its guest rebooted from inside. It is watched (and not ready)
// until a check says otherwise.
func (t *Tracker) Recheck(domain string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, e := range t.m {
		if e.domain != domain || e.stop != nil {
			continue
		}
		t.watch(id, e)
	}
}

// Forget drops a desktop (its guest starts over or is gone), ending its
// watch.
func (t *Tracker) Forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		if e.stop != nil {
			e.stop()
		}
		close(e.changed)
		delete(t.m, id)
	}
}

// Status is a desktop's readiness as last seen (zero: not followed).
func (t *Tracker) Status(id string) Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		return e.st
	}
	return Status{}
}

// Check asks d's guest now, unless it is known ready, and returns what
// it found: a call that needs the desktop ready is not refused on a
// watch's stale answer.
func (t *Tracker) Check(ctx context.Context, d *desktop.Desktop) Status {
	if st := t.Status(d.ID); st.Ready || d.State != desktop.StateRunning {
		return st
	}
	t.Follow(d)
	st, _ := t.check(ctx, d.ID, d.DomainName())
	return st
}

// Wait blocks until the desktop is ready, it is no longer followed, or
// ctx ends, and returns its status then.
func (t *Tracker) Wait(ctx context.Context, id string) Status {
	for {
		t.mu.Lock()
		e := t.m[id]
		if e == nil || e.st.Ready {
			var st Status
			if e != nil {
				st = e.st
			}
			t.mu.Unlock()
			return st
		}
		changed := e.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return t.Status(id)
		}
	}
}

// watch asks e's guest every t.Every until it is ready or forgotten.
// Called with t.mu held.
func (t *Tracker) watch(id string, e *entry) {
	wctx, stop := context.WithCancel(t.base)
	e.stop = stop
	domain := e.domain
	go func() {
		tick := time.NewTicker(t.Every)
		defer tick.Stop()
		for {
			// Watched until the guest answers ready: a ready desktop kept
			// ready while its agent is silent is asked again.
			if st, answered := t.check(wctx, id, domain); st.Ready && answered || wctx.Err() != nil {
				t.mu.Lock()
				if t.m[id] == e {
					e.stop = nil
				}
				t.mu.Unlock()
				stop()
				return
			}
			select {
			case <-tick.C:
			case <-wctx.Done():
			}
		}
	}()
}

// check asks the guest once and records the answer; answered says
// whether the guest did answer.
func (t *Tracker) check(ctx context.Context, id, domain string) (Status, bool) {
	cctx, cancel := context.WithTimeout(ctx, t.Within)
	p, err := t.probe.Probe(cctx, domain)
	cancel()
	st := Status{Up: UpBooting, Waiting: guest.WaitAgent}
	if err == nil {
		st = Status{Up: UpAgent, Waiting: p.Waiting, Via: p.Via}
		if p.Ready() {
			st = Status{Ready: true, ReadyAt: time.Now().UTC(), Up: UpSession, Via: p.Via}
		}
	} else if ctx.Err() != nil {
		return t.Status(id), false
	}
	t.mu.Lock()
	e := t.m[id]
	if e == nil || e.domain != domain {
		t.mu.Unlock()
		return st, err == nil
	}
	// A ready desktop stays ready until its guest answers otherwise: no
	// answer right after a resume from hibernation, a move or an agent's
	// new session (Recheck) says nothing about its session, which the
	// guest's memory kept. A desktop whose guest starts over is forgotten.
	if err != nil && e.st.Ready {
		st = e.st
		t.mu.Unlock()
		if t.log != nil {
			t.log.Debug("ready desktop not answering for now", "desktop", id, "err", err)
		}
		return st, false
	}
	if e.st.Ready && st.Ready {
		st.ReadyAt = e.st.ReadyAt
	}
	was := e.st
	e.st = st
	took := time.Since(e.since)
	announce := st.Ready && !was.Ready && !e.adopted
	if st.Ready {
		e.adopted = false // a later start over is news
	}
	var wake chan struct{}
	if was != st {
		wake, e.changed = e.changed, make(chan struct{})
	}
	t.mu.Unlock()
	// Waiters wake after Changed has run: one that waited for the desktop
	// finds it ready in its history too.
	if announce && t.Changed != nil {
		t.Changed(ctx, id, st, took)
	}
	if wake != nil {
		close(wake)
	}
	if err != nil && t.log != nil {
		t.log.Debug("desktop not answering yet", "desktop", id, "err", err)
	}
	return st, err == nil
}
