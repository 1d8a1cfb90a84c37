// Package storetest gives tests a migrated SQLite database quickly. Running
// the migrations costs about a second a database under the race detector
// (the SQLite driver is Go, instrumented like the rest), and the API's and
// the manager's tests each open one per test; so the migrations run once,
// into a template file named by a hash of the migrations, which each test
// copies.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/migrations"
)

var tmpl struct {
	once sync.Once
	path string
	err  error
}

// CopyTo writes a migrated, empty SQLite database at path (its directory
// made if missing), for store.Open: its Migrate then finds nothing to do.
// A database already at path (a test reopening its own) is left as it is.
func CopyTo(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	tmpl.once.Do(func() { tmpl.path, tmpl.err = makeTemplate() })
	if tmpl.err != nil {
		t.Fatalf("storetest: %v", tmpl.err)
	}
	b, err := os.ReadFile(tmpl.path)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("storetest: %v", err)
	}
}

// Open opens a migrated SQLite store at path (a copy of the template, or
// the database already there), closed when the test ends.
func Open(t testing.TB, path string) *store.Store {
	t.Helper()
	CopyTo(t, path)
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("storetest: migrate %s: %v", path, err)
	}
	return st
}

// makeTemplate returns the template for these migrations, migrating a new
// one when the temporary directory has none (test binaries run in
// parallel: each writes its own file and renames it into place).
func makeTemplate() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("hash the migrations: %w", err)
	}
	path := filepath.Join(os.TempDir(), "bureau-storetest-"+hex.EncodeToString(h.Sum(nil))[:16]+".db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	dir, err := os.MkdirTemp(os.TempDir(), "bureau-storetest-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	tmp := filepath.Join(dir, "t.db")
	st, err := store.Open(ctx, tmp)
	if err != nil {
		return "", err
	}
	if err := st.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		st.Close()
		return "", err
	}
	if err := st.Close(); err != nil {
		return "", err
	}
	// Closing the last connection checkpoints the write-ahead log into
	// the file: a log left with content would be lost by copying the file.
	if fi, err := os.Stat(tmp + "-wal"); err == nil && fi.Size() > 0 {
		return "", fmt.Errorf("template %s: its write-ahead log was not checkpointed (%d bytes)", tmp, fi.Size())
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return path, nil
}
