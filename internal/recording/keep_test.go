package recording

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// finished puts finished recordings of desktop d1, with files, in s's store.
func finished(t *testing.T, s *Service, st *memStore, sizes ...int64) []*Recording {
	t.Helper()
	now := time.Now().UTC()
	var out []*Recording
	for i, size := range sizes {
		r := &Recording{ID: "r" + strconv.Itoa(i), DesktopID: "d1", Owner: "alice", State: StateDone, SizeBytes: size, StartedAt: now.Add(time.Duration(i) * time.Minute)}
		st.InsertRecording(context.Background(), r)
		if err := os.MkdirAll(filepath.Dir(s.path(r)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.path(r), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestForgetLeavesKeptRecordings(t *testing.T) {
	ctx := context.Background()
	s, _, st, _ := newService(t, 60, 0)
	recs := finished(t, s, st, 10, 20, 30)
	if _, err := s.SetKept(ctx, "d1", "r1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetKept(ctx, "d2", "r0", true); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("keeping another desktop's recording: %v", err)
	}
	if _, err := s.SetKept(ctx, "d1", "nope", true); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("keeping no recording: %v", err)
	}
	if err := s.Forget(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	list, _ := st.ListRecordings(ctx, "d1")
	if len(list) != 1 || list[0].ID != "r1" || !list[0].Kept {
		t.Fatalf("after the desktop was deleted: %+v", list)
	}
	if _, err := os.Stat(s.path(recs[1])); err != nil {
		t.Errorf("the kept recording's file: %v", err)
	}
	for _, r := range []*Recording{recs[0], recs[2]} {
		if _, err := os.Stat(s.path(r)); !os.IsNotExist(err) {
			t.Errorf("%s's file left: %v", r.ID, err)
		}
	}
	if r, err := s.Find(ctx, "r1"); err != nil || r.Owner != "alice" {
		t.Errorf("find the kept one: %+v %v", r, err)
	}
	// Unkept, it goes at the next Forget, and the folder with it.
	if _, err := s.SetKept(ctx, "d1", "r1", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.Dir, "d1")); !os.IsNotExist(err) {
		t.Errorf("the desktop's recordings folder is left: %v", err)
	}
}

func TestKeepAllAndUnkeep(t *testing.T) {
	ctx := context.Background()
	s, _, st, _ := newService(t, 60, 0)
	finished(t, s, st, 10, 20, 30)
	s.SetKept(ctx, "d1", "r0", true)
	changed, err := s.KeepAll(ctx, "d1")
	if err != nil || len(changed) != 2 || changed[0] != "r1" || changed[1] != "r2" {
		t.Fatalf("keep all changed %v, %v", changed, err)
	}
	if err := s.Unkeep(ctx, "d1", changed); err != nil {
		t.Fatal(err)
	}
	kept := 0
	list, _ := st.ListRecordings(ctx, "d1")
	for _, r := range list {
		if r.Kept {
			kept++
		}
	}
	if kept != 1 || !list[0].Kept {
		t.Errorf("after unkeep, the one kept before must be the only one kept: %+v", list)
	}
}

func TestPruneSparesKept(t *testing.T) {
	ctx := context.Background()
	s, _, st, _ := newService(t, 60, 100)
	recs := finished(t, s, st, 500, 60, 60, 30)
	s.SetKept(ctx, "d1", "r0", true)
	s.prune(ctx, "d1")
	list, _ := st.ListRecordings(ctx, "d1")
	if len(list) != 3 || list[0].ID != "r0" || list[1].ID != "r2" || list[2].ID != "r3" {
		t.Errorf("after pruning to 100 bytes (the kept one neither counted nor removed): %+v", list)
	}
	if _, err := os.Stat(s.path(recs[0])); err != nil {
		t.Errorf("the kept recording's file: %v", err)
	}
}
