package capacity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "meminfo")
	os.WriteFile(mem, []byte("MemTotal:       24000000 kB\nMemAvailable:    3145728 kB\n"), 0o644) // 3 GiB
	c := Capacity{MemInfo: mem, DataDir: dir}
	if err := c.Check(2048, 0); err != nil {
		t.Errorf("2 GiB on a host with 3 GiB free: %v", err)
	}
	err := c.Check(4096, 0)
	if !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), "3072 MiB of memory available") {
		t.Errorf("4 GiB on a host with 3 GiB free: %v", err)
	}
	if err := c.Check(0, 1<<40); !errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("a petabyte of disk: %v", err)
	}
	if total, avail, err := c.MemoryMiB(); total != 23437 || avail != 3072 || err != nil {
		t.Errorf("MemoryMiB: %d, %d, %v", total, avail, err)
	}
	os.WriteFile(mem, []byte("MemTotal: 1 kB\n"), 0o644)
	if _, _, err := c.MemoryMiB(); err == nil || !strings.Contains(err.Error(), "no MemAvailable") {
		t.Errorf("MemoryMiB without MemAvailable: %v", err)
	}
	if err := c.Check(1, 0); err == nil || errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("unreadable meminfo: %v", err)
	}
}

// TestCheckOnASmallDisk: a real 16 MiB file system has no room for a
// desktop's disks, and says how much there is.
func TestCheckOnASmallDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("mount a tmpfs (needs root): %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	mem := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(mem, []byte("MemAvailable: 8388608 kB\n"), 0o644)
	err := Capacity{MemInfo: mem, DataDir: dir}.Check(1024, 1)
	if !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), dir) {
		t.Errorf("1 MiB of disk on a 16 MiB file system, with the host reserve: %v", err)
	}
}

// TestCheckSaveOnASmallDisk: a hibernation needs room for the whole RAM in
// the save directory, here a real 128 MiB file system.
func TestCheckSaveOnASmallDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=128m"); err != nil {
		t.Skipf("mount a tmpfs (needs root): %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	c := Capacity{SaveDir: dir}
	err := c.CheckSave(1024)
	if !errors.Is(err, desktop.ErrCapacity) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "1088 MiB") {
		t.Errorf("1 GiB of RAM into 128 MiB: %v", err)
	}
	if err := c.CheckSave(64); err != nil {
		t.Errorf("64 MiB of RAM (+%d MiB) into 128 MiB: %v", SaveOverheadMiB, err)
	}
	if err := (Capacity{SaveDir: filepath.Join(dir, "missing")}).CheckSave(1); err == nil || errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("a missing save dir: %v", err)
	}
}
