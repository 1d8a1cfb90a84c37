package storage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallDisk mounts an 8 MiB tmpfs for the test (root only) so a full disk
// is real, not simulated.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill takes every free byte of the file system holding dir.
func fill(t *testing.T, dir string) {
	t.Helper()
	out, _ := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(dir, "ballast"), "bs=64k").CombinedOutput()
	if !strings.Contains(string(out), "No space left on device") {
		t.Fatalf("dd did not fill the disk: %s", out)
	}
}

// TestFullDiskSaysSo: on a really full file system, creating a disk and
// taking a snapshot fail with the words the manager turns into a capacity
// error (507 "insufficient_capacity"), and the existing disk stays readable.
func TestFullDiskSaysSo(t *testing.T) {
	needQemuImg(t)
	ctx, dir, d := context.Background(), smallDisk(t), Disks{}
	data := filepath.Join(dir, "data.qcow2")
	if err := d.CreateDataDisk(ctx, data, 1); err != nil {
		t.Fatal(err)
	}
	fill(t, dir)
	err := d.CreateDataDisk(ctx, filepath.Join(dir, "another.qcow2"), 1)
	if err == nil || !strings.Contains(err.Error(), "No space left on device") {
		t.Errorf("create on a full disk: %v", err)
	}
	err = d.Snapshot(ctx, data, "s1")
	if err == nil || !strings.Contains(err.Error(), "No space left on device") {
		t.Errorf("snapshot on a full disk: %v", err)
	}
	os.Remove(filepath.Join(dir, "ballast"))
	if err := d.Check(ctx, data); err != nil {
		t.Errorf("the data disk after the full disk: %v", err)
	}
}
