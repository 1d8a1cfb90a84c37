package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/readiness"
)

// followReadiness follows whether running desktops are ready: those
// running now from the start (not announced again), later ones as they
// start (followDesktops).
// A desktop that becomes ready says so in its history, with how long it
// took.
func followReadiness(ctx context.Context, m *manager.Manager, gs *guest.Service, log *slog.Logger) *readiness.Tracker {
	t := readiness.New(ctx, gs, log)
	t.Changed = func(ctx context.Context, id string, st readiness.Status, took time.Duration) {
		m.Note(ctx, id, "ready", "desktop ready: its session is up (%s after bureau saw it running; through %s)", took.Round(time.Second), st.Via)
	}
	ds, err := m.List(ctx, desktop.Filter{})
	if err != nil {
		log.Warn("listing desktops to follow their readiness", "err", err)
		return t
	}
	for _, d := range ds {
		t.Adopt(d)
	}
	return t
}
