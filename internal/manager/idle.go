package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

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

// Touch records use of a desktop (an API action): its quiet period restarts.
func (m *Manager) Touch(id string) {
	m.idleMu.Lock()
	defer m.idleMu.Unlock()
	if st, ok := m.idle[id]; ok {
		st.since, st.noSleep = time.Now(), false
	}
}

// AddViewer counts a console viewer of a desktop until the returned func is
// called; a desktop with viewers is never idle.
func (m *Manager) AddViewer(id string) (done func()) {
	m.idleMu.Lock()
	st := m.idleEntry(id)
	st.viewers++
	m.idleMu.Unlock()
	return func() {
		m.idleMu.Lock()
		defer m.idleMu.Unlock()
		if st, ok := m.idle[id]; ok {
			st.viewers--
			st.since = time.Now()
		}
	}
}

func (m *Manager) idleEntry(id string) *idleState {
	st, ok := m.idle[id]
	if !ok {
		st = &idleState{since: time.Now()}
		m.idle[id] = st
	}
	return st
}

// SetRestartOnCrash sets whether a desktop is started again when its QEMU
// process dies.
func (m *Manager) SetRestartOnCrash(ctx context.Context, id string, on bool, actor string) (*desktop.Desktop, error) {
	d, err := m.changeSettings(ctx, id, func(_ context.Context, d *desktop.Desktop) error {
		d.RestartOnCrash = on
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.event(ctx, id, "restart_policy_set", actor, "restart on crash: %t", on)
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
	d, err := m.changeSettings(ctx, id, func(_ context.Context, d *desktop.Desktop) error {
		if err := t.Check(*d); err != nil {
			return err
		}
		t.Apply(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.event(ctx, id, "idle_timeout_set", actor, "when idle: %s", tiersText(d))
	return d, nil
}

// changeSettings applies change to a desktop's settings under its row lock
// and writes them alone (an operation may be saving its state at the same
// time: the store keeps the two apart), then returns the desktop as it now
// is. The change may act (apply firewall rules) before it is recorded; it
// finishes even if the caller goes away.
func (m *Manager) changeSettings(ctx context.Context, id string, change func(context.Context, *desktop.Desktop) error) (*desktop.Desktop, error) {
	ctx, cancel := m.detach(ctx)
	defer cancel()
	mu := m.row(id)
	mu.Lock()
	defer mu.Unlock()
	d, err := m.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := change(ctx, d); err != nil {
		return nil, err
	}
	if err := m.store.UpdateDesktopSettings(ctx, d); err != nil {
		return nil, err
	}
	cur, err := m.store.GetDesktop(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	m.Publish(Change{Owner: cur.Owner, Desktop: cur})
	return cur, nil
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

// watchIdle checks awake and napping desktops every interval and moves
// those quiet long enough down their idle tiers (nap, sleep, hibernate):
// no console viewers, no API actions and guest CPU below the configured
// share of one host CPU.
func (m *Manager) watchIdle(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(m.ctx, interval)
			m.checkIdle(ctx, time.Now())
			cancel()
			m.ensureReserve()
		}
	}
}

func (m *Manager) checkIdle(ctx context.Context, now time.Time) {
	desktops, err := m.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		m.log.Warn("idle check", "err", err)
		return
	}
	watched := map[string]bool{}
	var cands []candidate // what memory pressure may move down
	for _, d := range desktops {
		cur, ok := tierOf(d.State)
		if !ok || m.isBusy(d.ID) {
			continue
		}
		watched[d.ID] = true
		var cpu time.Duration
		if cur == tierAwake {
			if cpu, err = m.hv.CPUTime(ctx, d.DomainName()); err != nil {
				continue
			}
		}
		m.idleMu.Lock()
		st := m.idleEntry(d.ID)
		if cur == tierAwake {
			if !st.checked.IsZero() {
				share := float64(cpu-st.cpu) / float64(now.Sub(st.checked))
				if share > m.cfg.IdleCPU {
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
		trim := due <= cur && cur == tierAwake && st.viewers == 0 && m.cfg.TrimAfter > 0 && quiet >= m.cfg.TrimAfter && st.trimmed.Before(st.since)
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
		m.idleMu.Unlock()
		if due > cur {
			m.lower(d, cur, due, quiet, since)
		}
		if trim {
			m.trimIdle(d)
		}
	}
	m.relieve(cands)
	m.idleMu.Lock()
	for id, st := range m.idle {
		if !watched[id] && st.viewers == 0 && !st.lowering {
			delete(m.idle, id) // quiet periods start afresh when it runs again
		}
	}
	m.idleMu.Unlock()
}

// ensureReserve makes the disk reserve again once there is room for it.
func (m *Manager) ensureReserve() {
	if m.cfg.Reserve == nil {
		return
	}
	if err := m.cfg.Reserve.Ensure(); err != nil {
		m.log.Warn("disk reserve", "err", err)
	}
}

// trim runs trimScript in a guest.
func (m *Manager) trim(ctx context.Context, name string) error {
	res, err := m.hv.GuestExec(ctx, name, desktop.Exec{Argv: []string{"/bin/sh", "-c", trimScript}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	return err
}

// trimIdle returns a quiet desktop's page cache to the host, in the
// background: the guest agent may be slow and a missed trim costs nothing.
func (m *Manager) trimIdle(d *desktop.Desktop) {
	name, id := d.DomainName(), d.ID
	m.spawn(time.Minute, func(ctx context.Context) {
		if err := m.trim(ctx, name); err != nil {
			m.log.Warn("trim of an idle desktop's page cache", "desktop", id, "err", err)
			return
		}
		m.log.Info("idle desktop's page cache returned to the host", "desktop", id)
	})
}

// Viewers returns the console viewers connected to each desktop now.
func (m *Manager) Viewers() map[string]int {
	m.idleMu.Lock()
	defer m.idleMu.Unlock()
	out := map[string]int{}
	for id, st := range m.idle {
		if st.viewers > 0 {
			out[id] = st.viewers
		}
	}
	return out
}
