package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestStaleUpdateIsAConflict(t *testing.T) {
	for name, s := range openStores(t) {
		ctx := context.Background()
		d := newDesktop("cas1", "alice", "cas")
		if err := s.CreateDesktop(ctx, d); err != nil {
			t.Fatal(err)
		}
		a, _ := s.GetDesktop(ctx, d.ID)
		b, _ := s.GetDesktop(ctx, d.ID)
		a.State, a.Step = desktop.StateRunning, "x"
		if err := s.UpdateDesktop(ctx, a); err != nil || a.Version != b.Version+1 {
			t.Fatalf("%s: first write: %v (version %d)", name, err, a.Version)
		}
		b.State = desktop.StateError
		if err := s.UpdateDesktop(ctx, b); !errors.Is(err, desktop.ErrConflict) {
			t.Fatalf("%s: stale write: %v", name, err)
		}
		got, _ := s.GetDesktop(ctx, d.ID)
		if got.State != desktop.StateRunning || got.Step != "x" || got.Version != a.Version {
			t.Fatalf("%s: stored %s step %q version %d", name, got.State, got.Step, got.Version)
		}
		gone := newDesktop("nope", "alice", "nope")
		if err := s.UpdateDesktop(ctx, gone); !errors.Is(err, desktop.ErrNotFound) {
			t.Fatalf("%s: update of a missing desktop: %v", name, err)
		}
	}
}

// A full database is ENOSPC to callers: SQLite's SQLITE_FULL, caused here
// by a page limit.
func TestFullDatabaseIsNoSpace(t *testing.T) {
	s := openStores(t)["sqlite"]
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pages int
	conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		_, err := conn.ExecContext(ctx, "INSERT INTO events (id, desktop_id, type, message, actor, created_at) VALUES (?,?,?,?,?,?)",
			fmt.Sprint(i), "d", "t", strings.Repeat("x", 2000), "a", i)
		if err == nil {
			if i > 1000 {
				t.Fatal("the page limit never filled the database")
			}
			continue
		}
		if err := classify(err); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("full database: %v, want ENOSPC", err)
		}
		return
	}
}
