package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/recording"
	"github.com/bureau/bureau/migrations"
	"github.com/pressly/goose/v3"
)

func TestRecordingsKeptAndOwned(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			d := newDesktop("d1", "alice", "work")
			if err := s.CreateDesktop(ctx, d); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Millisecond)
			for i, r := range []*recording.Recording{
				{ID: "rec_a", DesktopID: "d1", Owner: "alice", DesktopName: "work", State: recording.StateDone, FPS: 2, MaxSeconds: 60, StartedAt: now},
				{ID: "rec_b", DesktopID: "d1", Owner: "alice", DesktopName: "work", State: recording.StateDone, FPS: 2, MaxSeconds: 60, StartedAt: now.Add(time.Second)},
				{ID: "rec_c", DesktopID: "gone", Owner: "bob", DesktopName: "old", State: recording.StateDone, FPS: 2, MaxSeconds: 60, StartedAt: now.Add(2 * time.Second), Kept: true},
			} {
				if err := s.InsertRecording(ctx, r); err != nil {
					t.Fatalf("insert %d: %v", i, err)
				}
			}
			if err := s.SetRecordingKept(ctx, "rec_b", true); err != nil {
				t.Fatal(err)
			}
			if err := s.SetRecordingKept(ctx, "rec_x", true); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("keep no recording: %v", err)
			}
			// UpdateRecording leaves kept alone.
			b, _ := s.GetRecording(ctx, "d1", "rec_b")
			b.Kept, b.Frames = false, 7
			s.UpdateRecording(ctx, b)
			if b, _ = s.GetRecording(ctx, "d1", "rec_b"); !b.Kept || b.Frames != 7 || b.Owner != "alice" || b.DesktopName != "work" || b.DesktopDeleted {
				t.Errorf("rec_b: %+v", b)
			}
			// The desktop deleted (its row stays) or never there: the
			// recordings keep their owner and name.
			d.State, d.DeletedAt = desktop.StateDeleted, &now
			if err := s.UpdateDesktop(ctx, d); err != nil {
				t.Fatal(err)
			}
			alice, err := s.OwnerRecordings(ctx, "alice")
			if err != nil || len(alice) != 2 || alice[0].ID != "rec_a" || alice[0].Kept || !alice[1].Kept || !alice[0].DesktopDeleted {
				t.Fatalf("alice's: %+v %v", alice, err)
			}
			c, err := s.FindRecording(ctx, "rec_c")
			if err != nil || c.Owner != "bob" || c.DesktopName != "old" || !c.DesktopDeleted || !c.Kept {
				t.Errorf("a recording whose desktop row is gone: %+v %v", c, err)
			}
			if all, _ := s.OwnerRecordings(ctx, ""); len(all) != 3 {
				t.Errorf("everyone's: %+v", all)
			}
			if _, err := s.FindRecording(ctx, "rec_x"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("find no recording: %v", err)
			}
		})
	}
}

// Recordings made before 00021 get their desktop's owner and name.
func TestRecordingsOwnerBackfill(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := goose.NewProvider(goose.DialectSQLite3, s.db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
	// As the schema was then: today's CreateDesktop writes later columns.
	if _, err := s.exec(ctx, `INSERT INTO desktops (id, owner, name, image, vcpus, memory_mib, data_disk_gib, state, desired_state, accelerator, dir, created_at, updated_at)
VALUES ('d1', 'alice', 'work', 'debian', 2, 2048, 10, 'running', 'running', 'tcg', '/d/d1', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for _, desk := range []string{"d1", "gone"} {
		if _, err := s.exec(ctx, `INSERT INTO recordings (id, desktop_id, state, fps, max_seconds, started_at) VALUES (?,?,?,?,?,?)`,
			"rec_"+desk, desk, recording.StateDone, 2, 60, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := s.FindRecording(ctx, "rec_d1"); err != nil || r.Owner != "alice" || r.DesktopName != "work" || r.Kept {
		t.Errorf("backfilled: %+v %v", r, err)
	}
	if r, err := s.FindRecording(ctx, "rec_gone"); err != nil || r.Owner != "" || !r.DesktopDeleted {
		t.Errorf("no desktop to take an owner from: %+v %v", r, err)
	}
	// And back down.
	if _, err := p.DownTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
}
