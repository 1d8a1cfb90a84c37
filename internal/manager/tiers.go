package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// A quiet desktop walks down idle tiers, each cheaper to keep and slower
// to wake: awake (running) → nap (paused, RAM resident) → sleep (paused,
// RAM pushed out to the host's compressed swap) → hibernation (RAM on
// disk). Any use wakes it from any tier (Wake).
type tier int

const (
	tierAwake tier = iota
	tierNap
	tierSleep
	tierHibernate
)

var tierNames = [...]string{"awake", "napping", "sleeping", "hibernating"}

// tierOf is the tier of a desktop in state s; ok is false for states the
// idle monitor leaves alone (stopped, paused by a caller, hibernated, on
// its way somewhere).
func tierOf(s desktop.State) (t tier, ok bool) {
	switch s {
	case desktop.StateRunning:
		return tierAwake, true
	case desktop.StateNapping:
		return tierNap, true
	case desktop.StateSleeping:
		return tierSleep, true
	}
	return 0, false
}

// dueTier is the deepest tier d's idle settings reach after quiet.
func dueTier(d *desktop.Desktop, quiet time.Duration) tier {
	after := func(s int) bool { return s > 0 && quiet >= time.Duration(s)*time.Second }
	switch {
	case after(d.IdleTimeoutSeconds):
		return tierHibernate
	case after(d.SleepAfterSeconds):
		return tierSleep
	case after(d.NapAfterSeconds):
		return tierNap
	}
	return tierAwake
}

// lower moves a quiet desktop from tier cur down to due, in the
// background; since is the start of the quiet period that earned it, so a
// use meanwhile calls it off.
func (i *idler) lower(d *desktop.Desktop, cur, due tier, quiet time.Duration, since time.Time) {
	why := fmt.Sprintf("idle for %s (no console viewers, no API actions, guest CPU under %.0f%% of a host CPU); %s",
		quiet.Round(time.Second), i.cpuShare*100, tierNames[due])
	i.lowerFor(d, cur, due, since, "idle", why)
}

// lowerFor moves d from cur down to due, recording an event of type typ
// that says why.
func (i *idler) lowerFor(d *desktop.Desktop, cur, due tier, since time.Time, typ, why string) {
	id := d.ID
	if !i.claimLowering(id) {
		return
	}
	i.ops.spawn(i.ops.opTimeout, func(ctx context.Context) {
		defer i.releaseLowering(id)
		if due == tierHibernate {
			i.ops.event(ctx, id, typ, "bureau", "%s", why)
			if _, err := i.power.Hibernate(ctx, id, "bureau ("+typ+")"); err != nil {
				i.log.Warn(typ+" hibernation", "desktop", id, "err", err)
			}
			return
		}
		if cur == tierAwake {
			// Give the guest's page cache back before freezing it: a nap
			// then holds less, and a sleep has less to push out.
			i.trimGuest(ctx, d)
			if !i.stillQuiet(id, since) {
				return
			}
		}
		i.ops.event(ctx, id, typ, "bureau", "%s", why)
		op := desktop.OpNap
		if due == tierSleep {
			op = desktop.OpSleep
		}
		if _, err := i.freeze(ctx, id, op, cur == tierAwake, "bureau ("+typ+")"); err != nil {
			i.log.Warn(typ+" "+string(op), "desktop", id, "err", err)
		}
	})
}

// freeze naps or sleeps a desktop: pauses its VM (when running) and, to
// sleep, pushes its memory out to swap. A sleep that cannot push memory
// out leaves the desktop napping and says why.
func (i *idler) freeze(ctx context.Context, id string, op desktop.Op, running bool, actor string) (*desktop.Desktop, error) {
	d, err := i.ops.begin(ctx, id, op, desktop.Target(op), actor)
	if err != nil {
		return nil, err
	}
	defer i.ops.unlock(id)
	begun := time.Now()
	if running {
		if err := i.vms.Suspend(ctx, d.DomainName()); err != nil {
			// The VM is as it was, running.
			i.ops.end(ctx, d, op, false, desktop.StateRunning, d.LastError)
			return nil, fmt.Errorf("%s: pause: %w", op, err)
		}
	}
	if op == desktop.OpNap {
		i.ops.end(ctx, d, op, true, "", "")
		i.ops.event(ctx, id, "napping", "bureau", "napping: paused with its memory resident")
		return d, nil
	}
	i.ops.step(ctx, d, "push memory to swap")
	rss, err := i.vms.Reclaim(ctx, d.DomainName())
	i.ops.observe("sleep", begun, err)
	if err != nil {
		i.noSleep(id)
		// Its VM is paused, its memory resident: it naps.
		i.ops.end(ctx, d, op, false, desktop.StatePaused, d.LastError)
		i.ops.event(ctx, id, "sleep_failed", "bureau", "could not push its memory out (%v); napping instead", err)
		return d, nil
	}
	i.ops.end(ctx, d, op, true, "", "")
	i.ops.event(ctx, id, "sleeping", "bureau", "sleeping: paused, memory pushed to swap in %s (%d MiB left resident that no other desktop shares)",
		time.Since(begun).Round(time.Millisecond), rss/1024)
	return d, nil
}

// trimGuest drops a running guest's page cache and waits a moment for free
// page reporting to hand the pages back. A guest that does not answer is
// frozen as it is.
func (i *idler) trimGuest(ctx context.Context, d *desktop.Desktop) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := trim(ctx, i.vms, d.DomainName()); err != nil {
		i.log.Warn("trim before an idle tier", "desktop", d.ID, "err", err)
		return
	}
	sleep(ctx, i.trimSettle)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// claimLowering marks a desktop as being moved down a tier, so later checks
// leave it alone meanwhile; false if it already is.
func (i *idler) claimLowering(id string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	st := i.entry(id)
	if st.lowering {
		return false
	}
	st.lowering = true
	return true
}

func (i *idler) releaseLowering(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if st, ok := i.quiet[id]; ok {
		st.lowering = false
	}
}

// stillQuiet reports that nothing used the desktop since its quiet period
// began and no viewer came.
func (i *idler) stillQuiet(id string, since time.Time) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	st, ok := i.quiet[id]
	return ok && st.since.Equal(since) && st.viewers == 0
}

// noSleep records that a desktop could not sleep, so it stays napping
// until its next use instead of trying again at every check.
func (i *idler) noSleep(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.entry(id).noSleep = true
}
