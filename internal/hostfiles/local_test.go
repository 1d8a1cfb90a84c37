package hostfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fakeDisks writes small placeholder files where qemu-img would, never
// over an existing file, and records the calls it does not make files
// for.
type fakeDisks struct {
	mu    sync.Mutex
	calls []string
}

var errExists = errors.New("disk file already exists")

func (f *fakeDisks) make(path, what string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s: %w", path, errExists)
	}
	return os.WriteFile(path, []byte(what), 0o644)
}

func (f *fakeDisks) note(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return nil
}

func (f *fakeDisks) CreateOverlay(_ context.Context, base, path string, sizeGiB int) error {
	return f.make(path, fmt.Sprintf("overlay of %s, %d GiB", base, sizeGiB))
}
func (f *fakeDisks) CreateDataDisk(_ context.Context, path string, sizeGiB int) error {
	return f.make(path, fmt.Sprintf("data, %d GiB", sizeGiB))
}
func (f *fakeDisks) Snapshot(_ context.Context, path, name string) error {
	return f.note("Snapshot " + path + " " + name)
}
func (f *fakeDisks) RevertSnapshot(_ context.Context, path, name string) error {
	return f.note("RevertSnapshot " + path + " " + name)
}
func (f *fakeDisks) DeleteSnapshot(_ context.Context, path, name string) error {
	return f.note("DeleteSnapshot " + path + " " + name)
}
func (f *fakeDisks) Resize(_ context.Context, path string, sizeGiB int) error {
	return f.note(fmt.Sprint("Resize ", path, " ", sizeGiB))
}

// me is the user and group the test runs as: files can be given to them
// without root.
func me() (int, int) { return os.Getuid(), os.Getgid() }

// owned checks path's owner and mode.
func owned(t *testing.T, path string, uid, gid int, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid || fi.Mode().Perm() != mode {
		t.Errorf("%s: %d:%d %v, want %d:%d %v", path, st.Uid, st.Gid, fi.Mode().Perm(), uid, gid, mode)
	}
}

func TestMakeDirGivesTheFolderToItsUser(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	uid, gid := me()
	dir := filepath.Join(t.TempDir(), "desktops", "d1")
	if err := l.MakeDir(ctx, dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	owned(t, dir, uid, gid, 0o700)
	// One already there gets the owner and mode too.
	os.Chmod(dir, 0o755)
	if err := l.MakeDir(ctx, dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	owned(t, dir, uid, gid, 0o700)
	if ok, err := l.Exists(ctx, dir); !ok || err != nil {
		t.Errorf("Exists(folder): %v %v", ok, err)
	}
	if ok, err := l.Exists(ctx, filepath.Join(dir, "nothing")); ok || err != nil {
		t.Errorf("Exists(nothing): %v %v", ok, err)
	}
}

func TestDisksAreMadeForTheirUserAndNeverReplaced(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	uid, gid := me()
	dir := t.TempDir()
	osDisk, data := filepath.Join(dir, "os.qcow2"), filepath.Join(dir, "data.qcow2")
	if err := l.CreateOverlay(ctx, "/images/base.qcow2", osDisk, 10, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateDataDisk(ctx, data, 20, uid, gid); err != nil {
		t.Fatal(err)
	}
	owned(t, osDisk, uid, gid, 0o600)
	owned(t, data, uid, gid, 0o600)
	if b, _ := os.ReadFile(osDisk); string(b) != "overlay of /images/base.qcow2, 10 GiB" {
		t.Errorf("OS disk: %q", b)
	}
	os.WriteFile(data, []byte("precious"), 0o600)
	if err := l.CreateDataDisk(ctx, data, 20, uid, gid); !errors.Is(err, errExists) {
		t.Errorf("a data disk over another: %v", err)
	}
	if b, _ := os.ReadFile(data); string(b) != "precious" {
		t.Errorf("the data disk there was replaced: %q", b)
	}
}

func TestUploadReplacesTheFileWhole(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	uid, gid := me()
	dir := t.TempDir()
	src, seed := filepath.Join(dir, "seed.tmp"), filepath.Join(dir, "seed.iso")
	os.WriteFile(src, []byte("new seed"), 0o644)
	os.WriteFile(seed, []byte("old seed, longer"), 0o644)
	if err := l.Upload(ctx, src, seed, uid, gid); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(seed); string(b) != "new seed" {
		t.Errorf("uploaded: %q", b)
	}
	owned(t, seed, uid, gid, 0o600)
	// A source that is not there changes nothing.
	if err := l.Upload(ctx, filepath.Join(dir, "missing"), seed, uid, gid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("upload of nothing: %v", err)
	}
	if b, _ := os.ReadFile(seed); string(b) != "new seed" {
		t.Errorf("after a failed upload: %q", b)
	}
	if names := list(t, dir); !slices.Equal(names, []string{"seed.iso", "seed.tmp"}) {
		t.Errorf("left in the folder: %v", names)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, nil, 0o600)
	if err := l.Remove(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(ctx, p); err != nil {
		t.Errorf("removing nothing: %v", err)
	}
	if ok, _ := l.Exists(ctx, p); ok {
		t.Error("still there")
	}
}

func TestRemoveAllButKeepsOnlyTheDataDisk(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	dir := filepath.Join(t.TempDir(), "d1")
	data := filepath.Join(dir, "data.qcow2")
	fill := func() {
		os.MkdirAll(filepath.Join(dir, "screens"), 0o700)
		for _, f := range []string{"os.qcow2", "seed.iso", "serial.log", "restore.save", "screens/1.png", "data.qcow2"} {
			os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600)
		}
	}
	fill()
	kept, err := l.RemoveAllBut(ctx, dir, data)
	if err != nil || !kept {
		t.Fatalf("RemoveAllBut: %v %v", kept, err)
	}
	if names := list(t, dir); !slices.Equal(names, []string{"data.qcow2"}) {
		t.Errorf("left: %v", names)
	}
	if os.Getuid() == 0 {
		// What stays is root's: no desktop's QEMU opens it again.
		owned(t, data, 0, 0, 0o600)
	}
	// Nothing kept: the folder goes too.
	fill()
	if kept, err := l.RemoveAllBut(ctx, dir, ""); err != nil || kept {
		t.Fatalf("RemoveAllBut(nothing): %v %v", kept, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder stays: %v", err)
	}
	// A keep that is not there is not kept; a folder that is not there
	// holds nothing.
	os.MkdirAll(dir, 0o700)
	if kept, err := l.RemoveAllBut(ctx, dir, data); err != nil || kept {
		t.Errorf("RemoveAllBut(data disk gone): %v %v", kept, err)
	}
	if kept, err := l.RemoveAllBut(ctx, dir, data); err != nil || kept {
		t.Errorf("RemoveAllBut(no folder): %v %v", kept, err)
	}
	if _, err := l.RemoveAllBut(ctx, dir, "/elsewhere/data.qcow2"); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Errorf("keep outside the folder: %v", err)
	}
}

func TestStoppedDisksAreQemuImgs(t *testing.T) {
	ctx := context.Background()
	disks := &fakeDisks{}
	l := New(disks)
	l.Snapshot(ctx, "/d/os.qcow2", "s")
	l.RevertSnapshot(ctx, "/d/os.qcow2", "s")
	l.DeleteSnapshot(ctx, "/d/os.qcow2", "s")
	l.Resize(ctx, "/d/data.qcow2", 30)
	want := []string{"Snapshot /d/os.qcow2 s", "RevertSnapshot /d/os.qcow2 s", "DeleteSnapshot /d/os.qcow2 s", "Resize /d/data.qcow2 30"}
	if !slices.Equal(disks.calls, want) {
		t.Errorf("calls %v, want %v", disks.calls, want)
	}
	called := false
	if err := l.EnsureImage(ctx, "/images/base.qcow2", nil, func(int64, int64) { called = true }); err != nil || called {
		t.Errorf("EnsureImage here: %v, progress %v", err, called)
	}
}

func TestAllocatedIsTheSpaceTaken(t *testing.T) {
	ctx := context.Background()
	l := New(&fakeDisks{})
	dir := t.TempDir()
	sparse, full := filepath.Join(dir, "sparse"), filepath.Join(dir, "full")
	os.WriteFile(sparse, nil, 0o600)
	os.Truncate(sparse, 64<<20)
	os.WriteFile(full, make([]byte, 1<<20), 0o600)
	if n, err := l.Allocated(ctx, sparse); err != nil || n >= 1<<20 {
		t.Errorf("a sparse 64 MiB file takes %d: %v", n, err)
	}
	if n, err := l.Allocated(ctx, full); err != nil || n < 1<<20 {
		t.Errorf("a written 1 MiB file takes %d: %v", n, err)
	}
	if n, err := l.Allocated(ctx, filepath.Join(dir, "missing")); err != nil || n != 0 {
		t.Errorf("a file that is not there takes %d: %v", n, err)
	}
}

// list is the names in dir.
func list(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
