package hostfiles

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRecordsAreReadAndWrittenWhole(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	uid, gid := me()
	root := filepath.Join(t.TempDir(), "templates")
	if names, err := l.ReadDir(ctx, root); err != nil || names != nil {
		t.Errorf("ReadDir of a folder not there: %v %v", names, err)
	}
	for _, key := range []string{"b", "a"} {
		if err := l.MkdirAll(ctx, filepath.Join(root, key), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	owned(t, filepath.Join(root, "a"), uid, gid, 0o750)
	if names, err := l.ReadDir(ctx, root); err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("ReadDir: %v %v", names, err)
	}
	tmp, meta := filepath.Join(root, "a", "template.json.tmp"), filepath.Join(root, "a", "template.json")
	if err := l.WriteFile(ctx, tmp, []byte(`{"key":"a"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Rename(ctx, tmp, meta); err != nil {
		t.Fatal(err)
	}
	owned(t, meta, uid, gid, 0o600)
	if b, err := l.ReadFile(ctx, meta); err != nil || string(b) != `{"key":"a"}` {
		t.Errorf("ReadFile: %q %v", b, err)
	}
	if ok, _ := l.Exists(ctx, tmp); ok {
		t.Error("the temporary record stays")
	}
	if err := l.Chmod(ctx, filepath.Join(root, "a"), 0o711); err != nil {
		t.Fatal(err)
	}
	owned(t, filepath.Join(root, "a"), uid, gid, 0o711)
}

func TestDisownGivesEverythingToRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving files to root needs root")
	}
	ctx := context.Background()
	l := New(&fakeDisks{})
	dir := filepath.Join(t.TempDir(), "tmpl")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "os.qcow2"), nil, 0o600)
	if err := l.MakeDir(ctx, dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(dir, "os.qcow2"), 4242, 4242)
	l.Disown(ctx, dir)
	owned(t, dir, 0, 0, 0o700)
	owned(t, filepath.Join(dir, "os.qcow2"), 0, 0, 0o600)
}

func TestASeedIsGrownAndOverwrittenInPlace(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	seed := filepath.Join(t.TempDir(), "seed.iso")
	os.WriteFile(seed, []byte("spare's seed"), 0o600)
	if err := l.Grow(ctx, seed, 100); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(seed); fi.Size() != int64(len("spare's seed"))+100 {
		t.Errorf("grown to %d", fi.Size())
	}
	// A process that has the file open reads what is written over it.
	open, err := os.Open(seed)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := l.Overwrite(ctx, seed, []byte("desktop's")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 112)
	if n, err := open.ReadAt(b, 0); n != len(b) || err != nil {
		t.Fatalf("read %d: %v", n, err)
	}
	want := append([]byte("desktop's"), make([]byte, 103)...)
	if !bytes.Equal(b, want) {
		t.Errorf("overwritten: %q", b)
	}
	if err := l.Overwrite(ctx, seed, make([]byte, 113)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("overwrite with more than the file holds: %v", err)
	}
	if fi, _ := os.Stat(seed); fi.Size() != 112 {
		t.Errorf("size after a refused overwrite: %d", fi.Size())
	}
	if err := l.Grow(ctx, seed+".missing", 1); err == nil {
		t.Error("grew a file that is not there")
	}
}

func TestTempFileIsEmptyAndOwn(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	a, err := l.TempFile(ctx, "bureau-seed-*.iso")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Remove(ctx, a)
	b, err := l.TempFile(ctx, "bureau-seed-*.iso")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Remove(ctx, b)
	if a == b || filepath.Dir(a) != filepath.Clean(os.TempDir()) || !strings.HasSuffix(a, ".iso") {
		t.Errorf("temporary files %s and %s", a, b)
	}
	if fi, err := os.Stat(a); err != nil || fi.Size() != 0 {
		t.Errorf("temporary file: %v %v", fi, err)
	}
}
