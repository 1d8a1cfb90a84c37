package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// HostDrains marks hosts draining: placement passes a draining host over.
type HostDrains interface {
	SetHostDraining(ctx context.Context, name string, on bool) error
}

// DrainStatus is a drain of one host, as it goes.
type DrainStatus struct {
	Host      string
	StartedAt time.Time
	// Done: every desktop was tried; EndedAt says when.
	Done    bool
	EndedAt *time.Time
	// Moving is the desktop being moved now ("" for none).
	Moving string
	// Moved counts the desktops moved off; Left those still there that
	// could not be, each with why (by desktop id).
	Moved int
	Left  map[string]string
}

// drains holds the drains under way and the last one of each host.
type drains struct {
	mu sync.Mutex
	m  map[string]*drainRun
}

type drainRun struct {
	status DrainStatus
	cancel context.CancelFunc
}

// drainSettle is how long a drain waits for a desktop busy with another
// operation to settle before it leaves it; drainPoll how often it looks.
var (
	drainSettle = 10 * time.Minute
	drainPoll   = time.Second
)

// Drain marks host draining and moves every desktop off it (Moves.Drain;
// bureau serve takes up the drains a restart cut short through it).
func (m *Manager) Drain(ctx context.Context, host, actor string) (*DrainStatus, error) {
	return m.moves.Drain(ctx, host, actor)
}

// Drain marks host draining (placement places nothing there) and moves
// every desktop off it in the background, one at a time, each to the host
// placement chooses among the others: running ones live (cold when they
// have snapshots), stopped and hibernated ones cold. Desktops that cannot
// move (no host has room, a failed move, a broken VM) stay and are named
// in the status with why. Draining a host already draining returns its
// drain under way.
func (mv *Moves) Drain(ctx context.Context, host, actor string) (*DrainStatus, error) {
	if mv.marks == nil || mv.placement.Hosts == nil || mv.live == nil || mv.cold == nil {
		return nil, &desktop.ConflictError{Message: "this bureau does not move desktops between hosts, so it cannot drain one"}
	}
	if _, err := mv.place.candidate(ctx, host); err != nil {
		return nil, err
	}
	mv.drains.mu.Lock()
	defer mv.drains.mu.Unlock()
	if mv.drains.m == nil {
		mv.drains.m = map[string]*drainRun{}
	}
	if r := mv.drains.m[host]; r != nil && !r.status.Done {
		st := r.status
		return &st, nil
	}
	if err := mv.marks.SetHostDraining(ctx, host, true); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(mv.ops.ctx)
	r := &drainRun{status: DrainStatus{Host: host, StartedAt: time.Now().UTC(), Left: map[string]string{}}, cancel: cancel}
	mv.drains.m[host] = r
	mv.log.Info("host draining", "host", host, "actor", actor)
	mv.ops.goUntilClose(func() {
		defer cancel()
		mv.drain(ctx, r, actor)
	})
	st := r.status
	return &st, nil
}

// Undrain ends a host's drain: placement may use it again. A move under
// way finishes; no other starts.
func (mv *Moves) Undrain(ctx context.Context, host, actor string) error {
	if mv.marks == nil {
		return &desktop.ConflictError{Message: "this bureau does not drain hosts"}
	}
	if err := mv.marks.SetHostDraining(ctx, host, false); err != nil {
		return err
	}
	mv.drains.mu.Lock()
	if r := mv.drains.m[host]; r != nil {
		r.cancel()
	}
	mv.drains.mu.Unlock()
	mv.log.Info("host no longer draining", "host", host, "actor", actor)
	return nil
}

// DrainOf is the drain under way on host, or its last one since bureau
// started (nil: none).
func (mv *Moves) DrainOf(host string) *DrainStatus {
	mv.drains.mu.Lock()
	defer mv.drains.mu.Unlock()
	r := mv.drains.m[host]
	if r == nil {
		return nil
	}
	st := r.status
	st.Left = make(map[string]string, len(r.status.Left))
	for id, why := range r.status.Left {
		st.Left[id] = why
	}
	return &st
}

// update changes a drain's status under the lock.
func (mv *Moves) update(r *drainRun, fn func(*DrainStatus)) {
	mv.drains.mu.Lock()
	defer mv.drains.mu.Unlock()
	fn(&r.status)
}

// drain moves each desktop off r's host until none is left to try.
func (mv *Moves) drain(ctx context.Context, r *drainRun, actor string) {
	host := r.status.Host
	tried := map[string]bool{}
	for ctx.Err() == nil {
		ds, err := mv.store.ListDesktops(ctx, desktop.Filter{Host: host})
		if err != nil {
			mv.log.Error("drain: listing the host's desktops", "host", host, "err", err)
			break
		}
		i := slices.IndexFunc(ds, func(d *desktop.Desktop) bool { return !tried[d.ID] })
		if i < 0 {
			break
		}
		d := ds[i]
		tried[d.ID] = true
		mv.update(r, func(s *DrainStatus) { s.Moving = d.ID })
		err = mv.drainOne(ctx, d, actor)
		mv.update(r, func(s *DrainStatus) {
			s.Moving = ""
			if err != nil {
				s.Left[d.ID] = err.Error()
			} else {
				s.Moved++
			}
		})
		if err != nil {
			mv.log.Warn("drain: desktop left on the host", "host", host, "desktop", d.ID, "err", err)
		}
	}
	now := time.Now().UTC()
	mv.update(r, func(s *DrainStatus) { s.Done, s.EndedAt = true, &now })
	st := mv.DrainOf(host)
	mv.log.Info("host drained", "host", host, "moved", st.Moved, "left", len(st.Left), "cancelled", ctx.Err() != nil)
}

// drainOne moves d off its host to the one placement chooses, and waits
// for the move to end.
func (mv *Moves) drainOne(ctx context.Context, d *desktop.Desktop, actor string) error {
	d, err := mv.settled(ctx, d.ID)
	if err != nil {
		return err
	}
	if _, err := desktop.Begin(desktop.OpMigrate, d.State); err != nil {
		return fmt.Errorf("it is %s: start or delete it, then drain again", d.State)
	}
	hosts, err := mv.placement.Hosts.Candidates(ctx)
	if err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	// The host being drained is passed over: it is marked draining.
	var req placement.Request
	if d.State == desktop.StateRunning {
		req.MemoryMiB = int64(d.MemoryMiB)
	}
	to, err := mv.placement.Policy.Choose(hosts, req)
	if err != nil {
		return err
	}
	if _, err := mv.Migrate(ctx, d.ID, to.Name, actor); err != nil {
		return fmt.Errorf("move to host %s: %w", to.Name, err)
	}
	d, err = mv.settled(ctx, d.ID)
	if err != nil {
		return err
	}
	if d.Host != to.Name {
		return fmt.Errorf("move to host %s: %s", to.Name, d.LastError)
	}
	return nil
}

// settled waits until no operation holds desktop id and returns it.
func (mv *Moves) settled(ctx context.Context, id string) (*desktop.Desktop, error) {
	deadline := time.Now().Add(drainSettle)
	for {
		d, err := mv.store.GetDesktop(ctx, id)
		if err != nil {
			return nil, err
		}
		if !mv.ops.isBusy(id) && d.State.Settled() {
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("it was still %s after %s", d.State, drainSettle)
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("the drain was ended")
		case <-time.After(drainPoll):
		}
	}
}
