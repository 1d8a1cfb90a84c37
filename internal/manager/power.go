package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Pause freezes a running desktop at once (lifecycle.Pause).
func (m *Manager) Pause(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	return m.life.Pause(ctx, id, actor)
}

// Resume brings a paused or hibernated desktop back (lifecycle.Resume).
func (m *Manager) Resume(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	return m.life.Resume(ctx, id, actor)
}

// Hibernate saves a desktop's RAM to disk and stops its VM in the
// background (lifecycle.Hibernate).
func (m *Manager) Hibernate(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	return m.life.Hibernate(ctx, id, actor)
}

// Wake makes sure a desktop is running before it is used
// (lifecycle.Wake).
func (m *Manager) Wake(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	return m.life.Wake(ctx, id, actor)
}

// Pause freezes a running desktop at once; its RAM stays in host memory.
// It finishes (and records its result) even if the caller goes away.
func (l *lifecycle) Pause(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	ctx, cancel := l.ops.detach(ctx)
	defer cancel()
	d, err := l.ops.begin(ctx, id, desktop.OpPause, desktop.StatePaused, actor)
	if err != nil {
		return nil, err
	}
	defer l.ops.unlock(id)
	if err := l.pause(ctx, d, actor); err != nil {
		return nil, err
	}
	return d, nil
}

func (l *lifecycle) pause(ctx context.Context, d *desktop.Desktop, actor string) error {
	if err := l.vms.Suspend(ctx, d.DomainName()); err != nil {
		// The VM is as it was, running: say so instead of marking the
		// desktop broken.
		l.ops.end(ctx, d, desktop.OpPause, false, desktop.StateRunning, d.LastError)
		return fmt.Errorf("pause: %w", err)
	}
	l.ops.end(ctx, d, desktop.OpPause, true, "", "")
	l.ops.event(ctx, d.ID, "paused", actor, "paused")
	return nil
}

// Resume brings a paused desktop back at once, or a hibernated one in the
// background (202: it is "resuming" until its RAM is restored).
func (l *lifecycle) Resume(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	var from desktop.State
	if cur, err := l.ops.live(ctx, id); err == nil {
		from = cur.State
		if cur.State == desktop.StateHibernated {
			if err := l.room.roomOn(ctx, cur, cur.MemoryMiB); err != nil {
				return nil, err
			}
		}
	}
	ctx, cancel := l.ops.detach(ctx)
	defer cancel()
	d, err := l.ops.begin(ctx, id, desktop.OpResume, desktop.StateRunning, actor)
	if err != nil {
		return nil, err
	}
	st, err := l.vms.State(ctx, d.DomainName())
	if err == nil && st == desktop.VMPaused {
		defer l.ops.unlock(id)
		begun := time.Now()
		if err := l.vms.Resume(ctx, d.DomainName()); err != nil {
			// The VM is as it was, paused: the desktop stays frozen.
			l.ops.end(ctx, d, desktop.OpResume, false, observedAs(st), d.LastError)
			return nil, fmt.Errorf("resume: %w", err)
		}
		l.ops.observe("wake_"+string(from), begun, nil)
		l.idle.touch(id) // a new quiet period: the idle tiers start again
		if d.RenewAddress {
			l.moves.renewAddress(ctx, d)
		}
		l.syncClock(d)
		l.ops.end(ctx, d, desktop.OpResume, true, "", "")
		l.ops.event(ctx, id, "resumed", actor, "resumed from %s in %s", resumedFrom[from], time.Since(begun).Round(time.Millisecond))
		return d, nil
	}
	// A VM whose state could not be read is resumed by start, which reads
	// it again (and records why if it fails): never left "resuming".
	cp := *d
	l.ops.background(id, func(ctx context.Context) { l.start(ctx, &cp) })
	return d, nil
}

// resumedFrom says what a frozen desktop was, in the resume event.
var resumedFrom = map[desktop.State]string{
	desktop.StatePaused: "pause", desktop.StateNapping: "a nap", desktop.StateSleeping: "sleep",
}

// restore starts a hibernated VM from its saved RAM.
func (l *lifecycle) restore(ctx context.Context, d *desktop.Desktop, op string) {
	begun := time.Now()
	l.ops.step(ctx, d, "restore")
	err := l.vms.Start(ctx, d.DomainName())
	l.ops.observe("resume", begun, err)
	if err != nil {
		l.ops.fail(ctx, d, op, err)
		return
	}
	if d.RenewAddress {
		l.moves.renewAddress(ctx, d)
	}
	l.ops.end(ctx, d, desktop.Op(op), true, "", "")
	l.ops.event(ctx, d.ID, "resumed", "bureau", "resumed from hibernation in %s", time.Since(begun).Round(time.Millisecond))
	l.syncClock(d)
}

// syncClock sets the guest clock after a resume, in the background: the
// guest agent needs a moment to come back and a late clock is not fatal.
func (l *lifecycle) syncClock(d *desktop.Desktop) {
	name, id := d.DomainName(), d.ID
	l.ops.spawn(time.Minute, func(ctx context.Context) {
		var err error
		for ctx.Err() == nil {
			if err = l.vms.SyncGuestClock(ctx, name); err == nil {
				return
			}
			time.Sleep(time.Second)
		}
		l.log.Warn("guest clock not synced after resume", "desktop", id, "err", err)
	})
}

// Hibernate saves a desktop's RAM to disk and stops its VM in the
// background; resume or start brings its programs back.
func (l *lifecycle) Hibernate(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	running := false
	if cur, err := l.ops.live(ctx, id); err == nil && (cur.State == desktop.StateRunning || cur.State.Frozen()) {
		if err := l.room.roomToSaveOn(cur); err != nil {
			return nil, err
		}
		running = cur.State == desktop.StateRunning && !l.saveAsIs
	}
	d, err := l.ops.begin(ctx, id, desktop.OpHibernate, desktop.StateHibernated, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	l.ops.background(id, func(ctx context.Context) {
		if running {
			// A smaller save image is written and restored faster: the
			// guest's page cache is dropped first, and the pages it frees
			// go back to the host (saved as zero pages).
			l.ops.step(ctx, &cp, "shrink guest memory")
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			l.idle.trimGuest(tctx, &cp)
			cancel()
		}
		l.hibernate(ctx, &cp, actor)
	})
	return d, nil
}

// hibernate saves d's RAM; a save that fails on a paused VM leaves the
// desktop frozen (paused, napping or sleeping, as it was).
func (l *lifecycle) hibernate(ctx context.Context, d *desktop.Desktop, actor string) {
	begun := time.Now()
	err := l.vms.Hibernate(ctx, d.DomainName())
	l.ops.observe("hibernate", begun, err)
	if err != nil {
		// A failed save leaves the VM running (libvirt only stops it once the
		// image is complete): report it without losing the desktop.
		st, _ := l.vms.State(ctx, d.DomainName())
		l.ops.end(ctx, d, desktop.OpHibernate, false, observedAs(st), fmt.Sprintf("hibernate failed: %v", err))
		l.ops.event(ctx, d.ID, "hibernate_failed", "bureau", "%s", d.LastError)
		return
	}
	l.ops.failpoint("hibernate:after-save")
	l.ops.end(ctx, d, desktop.OpHibernate, true, "", "")
	l.ops.event(ctx, d.ID, "hibernated", actor, "hibernated in %s", time.Since(begun).Round(time.Millisecond))
}

// WakeTimeout bounds how long Wake waits for a hibernated desktop.
const WakeTimeout = 3 * time.Minute

// Wake makes sure a desktop is running before it is used: a paused,
// napping, sleeping or hibernated desktop is resumed ("wake on use") and
// Wake waits for it; one on its way into a tier is woken once it gets
// there. A running desktop returns at once; any other state is a
// TransitionError.
func (l *lifecycle) Wake(ctx context.Context, id, actor string) (*desktop.Desktop, error) {
	deadline := time.Now().Add(WakeTimeout)
	asked := false
	for time.Now().Before(deadline) {
		d, err := l.store.GetDesktop(ctx, id)
		if err != nil {
			return nil, err
		}
		switch {
		case d.State == desktop.StateRunning:
			// Running, and (once woken here) the resume has let go of
			// the desktop, so the caller's next operation is not refused
			// as busy.
			if !asked || !l.ops.isBusy(id) {
				return d, nil
			}
		case d.State.Wakeable() && !asked:
			if d.LastError == IOErrorPause {
				// Resuming would only fail the same write again: say why.
				return nil, fmt.Errorf("desktop %s is %s: %w", id, IOErrorPause, desktop.ErrCapacity)
			}
			_, err := l.Resume(ctx, id, actor)
			if err != nil && !errors.Is(err, desktop.ErrBusy) {
				return nil, err
			}
			asked = err == nil // busy: moving into a tier; ask again once there
		case d.State.Settled(), d.State != desktop.StateResuming && !intoTier(d):
			return nil, &desktop.TransitionError{Op: "use", State: d.State}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("desktop %s did not wake within %s: %w", id, WakeTimeout, desktop.ErrUnavailable)
}

// intoTier reports a desktop on its way into an idle tier or hibernation,
// or being restored paused ahead of use: use waits for it to get there,
// then wakes it.
func intoTier(d *desktop.Desktop) bool {
	switch desktop.Op(d.Operation) {
	case desktop.OpNap, desktop.OpSleep, desktop.OpHibernate, desktop.OpPause, desktop.OpPrewake:
		return true
	}
	return false
}
