package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// targetContract checks the Target behaviour the repository relies on.
func targetContract(t *testing.T, tg Target) {
	ctx := context.Background()
	if _, err := tg.Get(ctx, "backups/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get of a missing key: %v", err)
	}
	if ok, err := tg.Exists(ctx, "backups/none"); ok || err != nil {
		t.Errorf("exists of a missing key: %v, %v", ok, err)
	}
	for _, k := range []string{"chunks/ab/abc", "chunks/ab/abd", "chunks/cd/cde", "backups/b1", "config"} {
		if err := tg.Put(ctx, k, []byte("value of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tg.Put(ctx, "config", []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if b, err := tg.Get(ctx, "config"); err != nil || string(b) != "replaced" {
		t.Errorf("get config: %q, %v", b, err)
	}
	if ok, err := tg.Exists(ctx, "chunks/ab/abc"); !ok || err != nil {
		t.Errorf("exists: %v, %v", ok, err)
	}
	for prefix, want := range map[string][]string{
		"chunks/":    {"chunks/ab/abc", "chunks/ab/abd", "chunks/cd/cde"},
		"chunks/ab/": {"chunks/ab/abc", "chunks/ab/abd"},
		"chunks/c":   {"chunks/cd/cde"},
		"backups/":   {"backups/b1"},
		"nothing/":   nil,
		"":           {"backups/b1", "chunks/ab/abc", "chunks/ab/abd", "chunks/cd/cde", "config"},
	} {
		if got, err := tg.List(ctx, prefix); err != nil || !slices.Equal(got, want) {
			t.Errorf("list %q: %q, %v; want %q", prefix, got, err, want)
		}
	}
	if err := tg.Delete(ctx, "chunks/ab/abc"); err != nil {
		t.Error(err)
	}
	if err := tg.Delete(ctx, "chunks/ab/abc"); err != nil {
		t.Errorf("delete of a missing key: %v", err)
	}
	if ok, _ := tg.Exists(ctx, "chunks/ab/abc"); ok {
		t.Error("deleted, yet it exists")
	}
	for _, k := range []string{"", "../x", "/etc/passwd", "a/../../b", "a/./b", "a//b", "chunks/..", ".tmp-x", "a/", `a\..\b`} {
		if err := tg.Put(ctx, k, []byte("x")); err == nil {
			t.Errorf("put %q was taken", k)
		}
		if _, err := tg.Get(ctx, k); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("get %q: %v", k, err)
		}
		if _, err := tg.Exists(ctx, k); err == nil {
			t.Errorf("exists %q was taken", k)
		}
		if err := tg.Delete(ctx, k); err == nil {
			t.Errorf("delete %q was taken", k)
		}
	}
	for _, p := range []string{"../", "/", "/etc/", "a/../../"} {
		if _, err := tg.List(ctx, p); err == nil {
			t.Errorf("list %q was taken", p)
		}
	}
}

func TestDirTarget(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "target")
	tg, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("target directory: %v, %v", fi, err)
	}
	targetContract(t, tg)
	// Nothing was written outside the root, and no temporary file is left.
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "x")); err == nil {
		t.Error("a key escaped the root")
	}
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && filepath.Base(p)[0] == '.' && p != root {
			t.Errorf("left over: %s", p)
		}
		return nil
	})
	if _, err := NewDir("relative/path"); err == nil {
		t.Error("a relative directory was taken")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := NewDir(f); err == nil {
		t.Error("a file was taken as a directory")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tg.Put(ctx, "config", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("put with a cancelled ctx: %v", err)
	}
}
