package manager

import (
	"context"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Prewake restores a hibernated desktop paused ahead of a likely use (its
// console link was made or opened), and returns at once (idler.prewake).
func (m *Manager) Prewake(ctx context.Context, id, actor, why string) {
	m.idle.prewake(ctx, id, actor, why)
}

// prewake restores a hibernated desktop paused, ahead of a use that is
// likely soon (its console link was made or opened): the restore runs while
// the browser loads the console page, and the use then only resumes the VM,
// in milliseconds. It returns at once. A desktop in any other state is left
// as it is, and so is one the host has no memory for (the use restores it
// as usual, or says why not). Once restored the desktop naps; the idle
// tiers take it down again if nobody comes.
func (i *idler) prewake(ctx context.Context, id, actor, why string) {
	cur, err := i.ops.live(ctx, id)
	if err != nil || cur.State != desktop.StateHibernated || cur.LastError == IOErrorPause {
		return
	}
	if err := i.room.roomOn(ctx, cur, cur.MemoryMiB); err != nil {
		i.log.Info("not restoring ahead of use", "desktop", id, "why", err)
		return
	}
	d, err := i.ops.begin(ctx, id, desktop.OpPrewake, desktop.StateNapping, actor)
	if err != nil {
		return // another operation holds it; the use wakes it as usual
	}
	cp := *d
	i.ops.background(id, func(ctx context.Context) { i.restoreAhead(ctx, &cp, actor, why) })
}

// restoreAhead does the prewake; the caller holds d.
func (i *idler) restoreAhead(ctx context.Context, d *desktop.Desktop, actor, why string) {
	begun := time.Now()
	i.ops.step(ctx, d, "restore paused")
	err := i.vms.StartPaused(ctx, d.DomainName())
	i.ops.observe("prewake", begun, err)
	if err != nil {
		if st, _ := i.vms.State(ctx, d.DomainName()); st == desktop.VMSaved {
			// Nothing changed: its RAM is still saved, and a use restores
			// it the usual way (and reports why if that fails too).
			i.ops.end(ctx, d, desktop.OpPrewake, false, observedAs(st), d.LastError)
			i.ops.event(ctx, d.ID, "prewake_failed", "bureau", "could not restore it ahead of use (%v); it stays hibernated", err)
			return
		}
		i.ops.fail(ctx, d, string(desktop.OpPrewake), err)
		return
	}
	i.touch(d.ID) // a new quiet period: it naps until used or idle again
	i.ops.end(ctx, d, desktop.OpPrewake, true, "", "")
	i.ops.event(ctx, d.ID, "napping", actor, "restored paused ahead of use (%s) in %s: the next use wakes it in milliseconds",
		why, time.Since(begun).Round(time.Millisecond))
}
