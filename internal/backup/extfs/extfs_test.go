package extfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// image builds a 64 MiB raw disk with one partition (table "gpt", "dos" or
// "" for none) holding an ext4 file system made of a small tree.
func image(t *testing.T, table string) string {
	t.Helper()
	for _, p := range []string{"sfdisk", "mkfs.ext4", "debugfs"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed", p)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	must(t, os.MkdirAll(filepath.Join(src, "agent", "my dir", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "agent", "notes.txt"), []byte("hello notes\n"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "agent", "my dir", "a b.txt"), []byte("spaced"), 0o600))
	must(t, os.WriteFile(filepath.Join(src, "agent", "my dir", "deep", "x"), bytes.Repeat([]byte("x"), 100000), 0o755))
	must(t, os.Symlink("notes.txt", filepath.Join(src, "agent", "latest")))
	must(t, os.Symlink(strings.Repeat("long/", 30)+"target", filepath.Join(src, "agent", "far")))
	must(t, exec.Command("mkfifo", filepath.Join(src, "agent", "my dir", "pipe")).Run())
	when := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	must(t, os.Chtimes(filepath.Join(src, "agent", "notes.txt"), when, when))
	img := filepath.Join(dir, "d.raw")
	must(t, os.WriteFile(img, nil, 0o600))
	must(t, os.Truncate(img, 64<<20))
	offset := "0"
	if table != "" {
		cmd := exec.Command("sfdisk", "-q", img)
		cmd.Stdin = strings.NewReader("label: " + table + "\n,,L\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sfdisk: %v: %s", err, out)
		}
		offset = "1048576"
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-d", src, "-E", "offset="+offset, img, "60M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	return img
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, table string) *FS {
	t.Helper()
	f, err := Open(context.Background(), image(t, table), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTables(t *testing.T) {
	for table, want := range map[string]int64{"gpt": 1 << 20, "dos": 1 << 20, "": 0} {
		f := open(t, table)
		if f.Offset() != want {
			t.Errorf("table %q: offset %d, want %d", table, f.Offset(), want)
		}
		if _, err := f.Stat(context.Background(), "/agent/notes.txt"); err != nil {
			t.Errorf("table %q: %v", table, err)
		}
	}
}

func TestNotExt(t *testing.T) {
	img := filepath.Join(t.TempDir(), "zero.raw")
	must(t, os.WriteFile(img, nil, 0o600))
	must(t, os.Truncate(img, 4<<20))
	if _, err := Open(context.Background(), img, ""); err == nil {
		t.Fatal("an empty disk opened")
	}
}

func TestListAndStat(t *testing.T) {
	ctx := context.Background()
	f := open(t, "gpt")
	list, truncated, err := f.List(ctx, "/agent", 0)
	if err != nil || truncated {
		t.Fatal(err, truncated)
	}
	var names []string
	by := map[string]Entry{}
	for _, e := range list {
		names = append(names, e.Name)
		by[e.Name] = e
	}
	if got := strings.Join(names, ","); got != "far,latest,my dir,notes.txt" {
		t.Fatalf("names %s", got)
	}
	n := by["notes.txt"]
	if n.Type != TypeFile || n.Size != 12 || n.Mode != 0o640 || !n.ModTime.Equal(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("notes.txt: %+v", n)
	}
	if l := by["latest"]; l.Type != TypeSymlink || l.LinkTarget != "notes.txt" || l.Size != 9 {
		t.Errorf("latest: %+v", l)
	}
	if l := by["far"]; l.Type != TypeSymlink || l.LinkTarget != strings.Repeat("long/", 30)+"target" {
		t.Errorf("far (a slow symlink): %+v", l)
	}
	if d := by["my dir"]; d.Type != TypeDir {
		t.Errorf("my dir: %+v", d)
	}
	sub, _, err := f.List(ctx, "/agent/my dir", 0)
	if err != nil || len(sub) != 3 || sub[0].Name != "a b.txt" || sub[2].Name != "pipe" || sub[2].Type != TypeOther {
		t.Fatalf("my dir: %+v %v", sub, err)
	}
	first, truncated, err := f.List(ctx, "/agent", 2)
	if err != nil || !truncated || len(first) != 2 || first[1].Name != "latest" {
		t.Fatalf("limit 2: %+v %v %v", first, truncated, err)
	}
	root, _, err := f.List(ctx, "/", 0)
	if err != nil || len(root) != 2 || root[0].Name != "agent" {
		t.Fatalf("root: %+v %v", root, err)
	}
	if e, err := f.Stat(ctx, "/agent/my dir/a b.txt"); err != nil || e.Size != 6 || e.Name != "a b.txt" || e.Mode != 0o600 {
		t.Fatalf("stat a b.txt: %+v %v", e, err)
	}
	if _, _, err := f.List(ctx, "/agent/notes.txt", 0); !errors.Is(err, ErrBadPath) {
		t.Errorf("list of a file: %v", err)
	}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	f := open(t, "dos")
	if _, err := f.Stat(ctx, "/agent/nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stat: %v", err)
	}
	if _, _, err := f.List(ctx, "/nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("list: %v", err)
	}
	if err := f.Read(ctx, "/agent/nope", io.Discard); !errors.Is(err, ErrNotFound) {
		t.Errorf("read: %v", err)
	}
	if _, err := f.Tar(ctx, "/nope", io.Discard); !errors.Is(err, ErrNotFound) {
		t.Errorf("tar: %v", err)
	}
}

func TestRefusesPaths(t *testing.T) {
	ctx := context.Background()
	f := &FS{image: "/nonexistent", debugfs: "/bin/false"}
	for _, p := range []string{"agent", "", `/agent/"x`, "/agent/a\nb", "/agent/../etc", "/a\x7f", "/" + strings.Repeat("a", 4096)} {
		if _, err := f.Stat(ctx, p); !errors.Is(err, ErrBadPath) {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestRead(t *testing.T) {
	ctx := context.Background()
	f := open(t, "gpt")
	var b bytes.Buffer
	if err := f.Read(ctx, "/agent/notes.txt", &b); err != nil || b.String() != "hello notes\n" {
		t.Fatalf("%q %v", b.String(), err)
	}
	b.Reset()
	if err := f.Read(ctx, "/agent/my dir/deep/x", &b); err != nil || b.Len() != 100000 {
		t.Fatalf("%d %v", b.Len(), err)
	}
	if err := f.Read(ctx, "/agent/my dir", io.Discard); !errors.Is(err, ErrBadPath) {
		t.Errorf("read of a folder: %v", err)
	}
}

func TestTar(t *testing.T) {
	ctx := context.Background()
	f := open(t, "gpt")
	var b bytes.Buffer
	n, err := f.Tar(ctx, "/agent", &b)
	if err != nil {
		t.Fatal(err)
	}
	if n.Files != 3 || n.Bytes != 12+6+100000 {
		t.Errorf("count %+v", n)
	}
	members := map[string]*tar.Header{}
	tr := tar.NewReader(&b)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		members[h.Name] = h
	}
	for _, name := range []string{"notes.txt", "latest", "my dir/", "my dir/a b.txt", "my dir/deep/", "my dir/deep/x", "far"} {
		if members[name] == nil {
			t.Errorf("no member %q in %v", name, members)
		}
	}
	if members["my dir/pipe"] != nil {
		t.Error("the fifo was tarred")
	}
	if h := members["latest"]; h != nil && (h.Typeflag != tar.TypeSymlink || h.Linkname != "notes.txt") {
		t.Errorf("latest: %+v", h)
	}
	if h := members["notes.txt"]; h != nil && (h.Mode&0o777 != 0o640 || !h.ModTime.Equal(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))) {
		t.Errorf("notes.txt: mode %o time %v", h.Mode, h.ModTime)
	}
	var whole bytes.Buffer
	if _, err := f.Tar(ctx, "/", &whole); err != nil || !bytes.Contains(whole.Bytes(), []byte("agent/notes.txt")) {
		t.Errorf("tar of the root: %v", err)
	}
}
