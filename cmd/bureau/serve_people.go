package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/recording"
	"github.com/bureau/bureau/internal/steps"
	"github.com/bureau/bureau/internal/store"
)

// newPeople puts people in the loop of desktops (internal/loop): who holds
// their input, help requests and approval gates. What happens goes to the
// desktops' histories and live feed, and to their step logs (a person's
// input there says where it is in the recording being made).
func newPeople(ctx context.Context, dataDir string, st *store.Store, m *manager.Manager, stepLog *steps.Log, rec *recording.Service, log *slog.Logger) (*loop.Service, error) {
	return loop.New(ctx, loop.Config{
		Store: st, Dir: filepath.Join(dataDir, "requests"), Log: log,
		Note: m.NoteBy,
		Step: func(ctx context.Context, s *steps.Step) {
			if err := stepLog.Record(ctx, s, nil, nil); err != nil {
				log.Warn("recording a step of people in the loop", "desktop", s.DesktopID, "kind", s.Kind, "err", err)
			}
		},
		RecordingAt: func(id string, t time.Time) (string, int64, bool) {
			r := rec.Active(id)
			if r == nil || t.Before(r.StartedAt) {
				return "", 0, false
			}
			return r.ID, t.Sub(r.StartedAt).Milliseconds(), true
		},
		Changed: func(id string) {
			if d, err := m.Get(context.WithoutCancel(ctx), id); err == nil {
				m.Publish(manager.Change{Owner: d.Owner, Desktop: d})
			}
		},
	})
}
