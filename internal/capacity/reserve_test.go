package capacity

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReserveOnARealFileSystem: the reserve takes real blocks, frees them
// when released, and is made again only once there is room.
func TestReserveOnARealFileSystem(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2200m"); err != nil {
		t.Skipf("mount a tmpfs (needs root): %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	free := func() int64 {
		var st syscall.Statfs_t
		syscall.Statfs(dir, &st)
		return int64(st.Bavail) * st.Bsize
	}
	r := Reserve{Path: filepath.Join(dir, "reserve"), Size: 64 << 20}
	// 2200 MiB holds the reserve plus the 2 GiB kept free: it is made.
	before := free()
	if err := r.Ensure(); err != nil {
		t.Fatal(err)
	}
	if got := before - free(); got < r.Size {
		t.Fatalf("the reserve took %d bytes, want %d", got, r.Size)
	}
	// Fill the rest: a write now fails for space.
	filler := filepath.Join(dir, "filler")
	f, _ := os.Create(filler)
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, free()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "state"), make([]byte, 1<<20), 0o644); err == nil {
		t.Fatal("a write on the full file system succeeded")
	}
	if ok, err := r.Release(); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatalf("a write after the release: %v", err)
	}
	if ok, _ := r.Release(); ok {
		t.Error("released twice")
	}
	// Still full: not made again, so the space stays usable.
	if err := r.Ensure(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Path); err == nil {
		t.Error("the reserve came back on a full file system")
	}
	os.Remove(filler)
	if err := r.Ensure(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Path); err != nil {
		t.Errorf("the reserve did not come back with room: %v", err)
	}
}
