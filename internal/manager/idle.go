package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// idler watches running desktops for use and moves quiet ones down their
// idle tiers (tiers.go), the longest-idle one further when the host runs
// short of memory (pressure.go), and restores hibernated ones ahead of a
// likely use (prewake.go). It holds the operation core and what the tiers
// need beside it, each by the role it plays here.
type idler struct {
	ops    *runner
	store  idleStore
	vms    idleVMs
	power  hibernator
	room   hostRoom
	spares spareRelief // set once the warm pool is made
	log    *slog.Logger

	// From Config: the share of a host CPU under which a guest is quiet
	// (IdleCPU), when a quiet guest's page cache is dropped and how long
	// that is given to settle, and the host memory read and its margin.
	cpuShare              float64
	trimAfter, trimSettle time.Duration
	memory                HostMemory
	lowMiB                int

	mu    sync.Mutex
	quiet map[string]*idleState // by desktop id
}

// idleStore lists the desktops the idle check looks at.
type idleStore interface {
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
}

// idleVMs reads how busy a guest is, freezes and restores VMs, and runs
// commands in guests (a trim).
type idleVMs interface {
	CPUTime(ctx context.Context, name string) (time.Duration, error)
	State(ctx context.Context, name string) (desktop.VMState, error)
	Suspend(ctx context.Context, name string) error
	StartPaused(ctx context.Context, name string) error
	Reclaim(ctx context.Context, name string) (residentKiB int64, err error)
	guestExec
}

// hibernator hibernates a desktop, the deepest tier (lifecycle.Hibernate,
// power.go).
type hibernator interface {
	Hibernate(ctx context.Context, id, actor string) (*desktop.Desktop, error)
}

// hostRoom refuses to run a desktop where its host has no memory for it
// (quotas.roomOn, quota.go).
type hostRoom interface {
	roomOn(ctx context.Context, d *desktop.Desktop, memMiB int) error
}

// spareRelief drops a warm spare when the host runs short of memory, and
// says whether it did (WarmPool.relieve, spares.go).
type spareRelief interface {
	relieve(avail int) bool
}

// Touch records use of a desktop (an API action): its quiet period restarts.
func (m *Manager) Touch(id string) { m.idle.touch(id) }

// AddViewer counts a console viewer of a desktop until the returned func is
// called; a desktop with viewers is never idle.
func (m *Manager) AddViewer(id string) (done func()) { return m.idle.addViewer(id) }

// Viewers returns the console viewers connected to each desktop now.
func (m *Manager) Viewers() map[string]int { return m.idle.viewers() }

// idleState is what the idle monitor knows about one running desktop.
type idleState struct {
	since   time.Time     // start of the current quiet period
	cpu     time.Duration // guest CPU time at the last check
	checked time.Time
	viewers int
	trimmed time.Time // when the guest's caches were last dropped
	// lowering: a move down a tier is under way; noSleep: the last sleep
	// could not push memory out, so the desktop naps until used.
	lowering, noSleep bool
}

// trimScript drops the guest's clean page cache and compacts its free
// memory; free page reporting then hands those pages back to the host.
const trimScript = "sync; echo 3 > /proc/sys/vm/drop_caches; echo 1 > /proc/sys/vm/compact_memory"

// touch records use of a desktop: its quiet period restarts.
func (i *idler) touch(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if st, ok := i.quiet[id]; ok {
		st.since, st.noSleep = time.Now(), false
	}
}

// addViewer counts a console viewer of a desktop until the returned func is
// called; a desktop with viewers is never idle.
func (i *idler) addViewer(id string) (done func()) {
	i.mu.Lock()
	st := i.entry(id)
	st.viewers++
	i.mu.Unlock()
	return func() {
		i.mu.Lock()
		defer i.mu.Unlock()
		if st, ok := i.quiet[id]; ok {
			st.viewers--
			st.since = time.Now()
		}
	}
}

// entry is what is known of desktop id, made afresh if nothing is; the
// caller holds i.mu.
func (i *idler) entry(id string) *idleState {
	st, ok := i.quiet[id]
	if !ok {
		st = &idleState{since: time.Now()}
		i.quiet[id] = st
	}
	return st
}

// SetRestartOnCrash sets whether a desktop is started again when its QEMU
// process dies.
func (m *Manager) SetRestartOnCrash(ctx context.Context, id string, on bool, actor string) (*desktop.Desktop, error) {
	d, err := m.ops.changeSettings(ctx, id, func(_ context.Context, d *desktop.Desktop) error {
		d.RestartOnCrash = on
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.ops.event(ctx, id, "restart_policy_set", actor, "restart on crash: %t", on)
	return d, nil
}

// IdleTiers changes some of a desktop's idle tiers; nil leaves one as it
// is. Seconds, 0 = skip the tier (see desktop.ValidateIdleTiers).
type IdleTiers struct {
	NapAfter, SleepAfter, HibernateAfter *int
}

// Apply sets on d the tiers t names.
func (t IdleTiers) Apply(d *desktop.Desktop) {
	for _, f := range []struct{ to, from *int }{{&d.NapAfterSeconds, t.NapAfter}, {&d.SleepAfterSeconds, t.SleepAfter}, {&d.IdleTimeoutSeconds, t.HibernateAfter}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

// Check checks the tiers d would have with t applied, together.
func (t IdleTiers) Check(d desktop.Desktop) error {
	t.Apply(&d)
	return desktop.ValidateIdleTiers(d.NapAfterSeconds, d.SleepAfterSeconds, d.IdleTimeoutSeconds)
}

// SetIdleTiers changes when a quiet desktop naps, sleeps and hibernates;
// the tiers are checked together, as they will be.
func (m *Manager) SetIdleTiers(ctx context.Context, id string, t IdleTiers, actor string) (*desktop.Desktop, error) {
	d, err := m.ops.changeSettings(ctx, id, func(_ context.Context, d *desktop.Desktop) error {
		if err := t.Check(*d); err != nil {
			return err
		}
		t.Apply(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.ops.event(ctx, id, "idle_timeout_set", actor, "when idle: %s", tiersText(d))
	return d, nil
}

// tiersText says when a desktop naps, sleeps and hibernates.
func tiersText(d *desktop.Desktop) string {
	at := func(s int) string {
		if s == 0 {
			return "never"
		}
		return "after " + (time.Duration(s) * time.Second).String()
	}
	return fmt.Sprintf("nap %s, sleep %s, hibernate %s", at(d.NapAfterSeconds), at(d.SleepAfterSeconds), at(d.IdleTimeoutSeconds))
}

// watch checks awake and napping desktops every interval and moves
// those quiet long enough down their idle tiers (nap, sleep, hibernate):
// no console viewers, no API actions and guest CPU below the configured
// share of one host CPU.
func (i *idler) watch(interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-i.ops.ctx.Done():
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(i.ops.ctx, interval)
			i.check(ctx, time.Now())
			cancel()
			i.ops.ensureReserve()
		}
	}
}

// check looks at every awake and napping desktop once (see watch).
func (i *idler) check(ctx context.Context, now time.Time) {
	desktops, err := i.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		i.log.Warn("idle check", "err", err)
		return
	}
	watched := map[string]bool{}
	var cands []candidate // what memory pressure may move down
	for _, d := range desktops {
		cur, ok := tierOf(d.State)
		if !ok || i.ops.isBusy(d.ID) {
			continue
		}
		watched[d.ID] = true
		var cpu time.Duration
		if cur == tierAwake {
			if cpu, err = i.vms.CPUTime(ctx, d.DomainName()); err != nil {
				continue
			}
		}
		i.mu.Lock()
		st := i.entry(d.ID)
		if cur == tierAwake {
			if !st.checked.IsZero() {
				share := float64(cpu-st.cpu) / float64(now.Sub(st.checked))
				if share > i.cpuShare {
					st.since = now // the guest is working
				}
			}
			st.cpu, st.checked = cpu, now
		}
		quiet, since := now.Sub(st.since), st.since
		due := tierAwake
		if st.viewers == 0 && !st.lowering {
			due = dueTier(d, quiet)
		}
		if due == tierSleep && st.noSleep {
			due = tierNap
		}
		trim := due <= cur && cur == tierAwake && st.viewers == 0 && i.trimAfter > 0 && quiet >= i.trimAfter && st.trimmed.Before(st.since)
		if trim {
			// Once per quiet period; the trim's own CPU is not activity.
			st.trimmed, st.checked = now, time.Time{}
		}
		if due > cur && cur == tierAwake {
			st.checked = time.Time{} // the trim before a nap is not activity
		}
		if due <= cur && cur < tierHibernate && st.viewers == 0 && !st.lowering {
			cands = append(cands, candidate{d: d, cur: cur, quiet: quiet, since: since, noSleep: st.noSleep})
		}
		i.mu.Unlock()
		if due > cur {
			i.lower(d, cur, due, quiet, since)
		}
		if trim {
			i.trimIdle(d)
		}
	}
	i.relieve(cands)
	i.mu.Lock()
	for id, st := range i.quiet {
		if !watched[id] && st.viewers == 0 && !st.lowering {
			delete(i.quiet, id) // quiet periods start afresh when it runs again
		}
	}
	i.mu.Unlock()
}

// guestExec runs a command in a guest.
type guestExec interface {
	GuestExec(ctx context.Context, name string, e desktop.Exec) (*desktop.ExecResult, error)
}

// trim runs trimScript in guest name.
func trim(ctx context.Context, g guestExec, name string) error {
	res, err := g.GuestExec(ctx, name, desktop.Exec{Argv: []string{"/bin/sh", "-c", trimScript}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	return err
}

// trimIdle returns a quiet desktop's page cache to the host, in the
// background: the guest agent may be slow and a missed trim costs nothing.
func (i *idler) trimIdle(d *desktop.Desktop) {
	name, id := d.DomainName(), d.ID
	i.ops.spawn(time.Minute, func(ctx context.Context) {
		if err := trim(ctx, i.vms, name); err != nil {
			i.log.Warn("trim of an idle desktop's page cache", "desktop", id, "err", err)
			return
		}
		i.log.Info("idle desktop's page cache returned to the host", "desktop", id)
	})
}

// viewers returns the console viewers connected to each desktop now.
func (i *idler) viewers() map[string]int {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := map[string]int{}
	for id, st := range i.quiet {
		if st.viewers > 0 {
			out[id] = st.viewers
		}
	}
	return out
}
