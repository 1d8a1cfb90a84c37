package manager

import (
	"context"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Prewake restores a hibernated desktop paused, ahead of a use that is
// likely soon (its console link was made or opened): the restore runs while
// the browser loads the console page, and the use then only resumes the VM,
// in milliseconds. It returns at once. A desktop in any other state is left
// as it is, and so is one the host has no memory for (the use restores it
// as usual, or says why not). Once restored the desktop naps; the idle
// tiers take it down again if nobody comes.
func (m *Manager) Prewake(ctx context.Context, id, actor, why string) {
	cur, err := m.live(ctx, id)
	if err != nil || cur.State != desktop.StateHibernated || cur.LastError == IOErrorPause {
		return
	}
	if err := m.roomOn(ctx, cur, cur.MemoryMiB); err != nil {
		m.log.Info("not restoring ahead of use", "desktop", id, "why", err)
		return
	}
	d, err := m.begin(ctx, id, desktop.OpPrewake, desktop.StateNapping, actor)
	if err != nil {
		return // another operation holds it; the use wakes it as usual
	}
	cp := *d
	m.background(id, func(ctx context.Context) { m.prewake(ctx, &cp, actor, why) })
}

func (m *Manager) prewake(ctx context.Context, d *desktop.Desktop, actor, why string) {
	begun := time.Now()
	m.step(ctx, d, "restore paused")
	err := m.hv.StartPaused(ctx, d.DomainName())
	m.observe("prewake", begun, err)
	if err != nil {
		if st, _ := m.hv.State(ctx, d.DomainName()); st == desktop.VMSaved {
			// Nothing changed: its RAM is still saved, and a use restores
			// it the usual way (and reports why if that fails too).
			m.end(ctx, d, desktop.OpPrewake, false, observedAs(st), d.LastError)
			m.event(ctx, d.ID, "prewake_failed", "bureau", "could not restore it ahead of use (%v); it stays hibernated", err)
			return
		}
		m.fail(ctx, d, string(desktop.OpPrewake), err)
		return
	}
	m.Touch(d.ID) // a new quiet period: it naps until used or idle again
	m.end(ctx, d, desktop.OpPrewake, true, "", "")
	m.event(ctx, d.ID, "napping", actor, "restored paused ahead of use (%s) in %s: the next use wakes it in milliseconds",
		why, time.Since(begun).Round(time.Millisecond))
}
