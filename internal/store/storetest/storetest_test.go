package storetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// TestCopyIsAMigratedEmptyDatabase: a copy opens, needs no migration, is
// empty, takes writes of its own; a database already at the path is kept.
func TestCopyIsAMigratedEmptyDatabase(t *testing.T) {
	ctx := context.Background()
	a := filepath.Join(t.TempDir(), "sub", "a.db")
	st := Open(t, a)
	if list, err := st.ListDesktops(ctx, desktop.Filter{}); err != nil || len(list) != 0 {
		t.Fatalf("a new copy lists %d desktops (%v), want none", len(list), err)
	}
	d := &desktop.Desktop{ID: "d1", Owner: "o", Name: "one", State: desktop.StateStopped, Dir: "/d/d1"}
	if err := st.CreateDesktop(ctx, d); err != nil {
		t.Fatalf("write to a copy: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Copying again onto the same path keeps what is there.
	again := Open(t, a)
	if got, err := again.GetDesktop(ctx, "d1"); err != nil || got.Name != "one" {
		t.Fatalf("reopened database: %+v %v, want desktop one kept", got, err)
	}
	// Another copy starts empty.
	b := Open(t, filepath.Join(t.TempDir(), "b.db"))
	if list, _ := b.ListDesktops(ctx, desktop.Filter{}); len(list) != 0 {
		t.Errorf("a second copy lists %d desktops, want none", len(list))
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("copy's mode: %v %v, want 0600", fi.Mode().Perm(), err)
	}
}
