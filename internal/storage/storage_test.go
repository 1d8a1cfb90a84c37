package storage

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func needQemuImg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed (scripts/host-setup.sh installs it)")
	}
}

func TestOverlayAndDataDisk(t *testing.T) {
	needQemuImg(t)
	ctx, dir, d := context.Background(), t.TempDir(), Disks{}
	base := filepath.Join(dir, "base.qcow2")
	if err := d.CreateDataDisk(ctx, base, 2); err != nil {
		t.Fatal(err)
	}
	os1 := filepath.Join(dir, "os.qcow2")
	if err := d.CreateOverlay(ctx, base, os1, 10); err != nil {
		t.Fatal(err)
	}
	info, err := d.Info(ctx, os1)
	if err != nil {
		t.Fatal(err)
	}
	if info.Format != "qcow2" || info.BackingFile != base || info.VirtualSize != 10*gib {
		t.Fatalf("overlay info = %+v", info)
	}
	// An overlay never shrinks below its base.
	os2 := filepath.Join(dir, "os2.qcow2")
	if err := d.CreateOverlay(ctx, base, os2, 1); err != nil {
		t.Fatal(err)
	}
	if info, _ := d.Info(ctx, os2); info.VirtualSize != 2*gib {
		t.Fatalf("small overlay size = %d, want base size", info.VirtualSize)
	}
	if err := d.Check(ctx, os1); err != nil {
		t.Fatal(err)
	}
}

func TestCreateNeverReplacesExistingDisk(t *testing.T) {
	needQemuImg(t)
	ctx, d := context.Background(), Disks{}
	path := filepath.Join(t.TempDir(), "data.qcow2")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateDataDisk(ctx, path, 1); !errors.Is(err, ErrExists) {
		t.Fatalf("got %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Fatal("existing file was changed")
	}
}

func TestMissingBaseIsAnError(t *testing.T) {
	needQemuImg(t)
	dir := t.TempDir()
	err := Disks{}.CreateOverlay(context.Background(), filepath.Join(dir, "none.qcow2"), filepath.Join(dir, "os.qcow2"), 10)
	if err == nil {
		t.Fatal("overlay over a missing base succeeded")
	}
	if _, statErr := os.Stat(filepath.Join(dir, "os.qcow2")); !os.IsNotExist(statErr) {
		t.Error("failed create left a file behind")
	}
}

func TestSnapshotsAndResize(t *testing.T) {
	needQemuImg(t)
	ctx := context.Background()
	d := Disks{}
	path := filepath.Join(t.TempDir(), "data.qcow2")
	if err := d.CreateDataDisk(ctx, path, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Snapshot(ctx, path, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := d.RevertSnapshot(ctx, path, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := d.RevertSnapshot(ctx, path, "nope"); err == nil {
		t.Error("reverting to a missing snapshot succeeded")
	}
	if err := d.DeleteSnapshot(ctx, path, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Resize(ctx, path, 2); err != nil {
		t.Fatal(err)
	}
	if info, _ := d.Info(ctx, path); info.VirtualSize != 2*gib {
		t.Errorf("after resize: %d bytes", info.VirtualSize)
	}
	if err := d.Resize(ctx, path, 1); err == nil {
		t.Error("shrinking was accepted")
	}
}

func TestCopySnapshot(t *testing.T) {
	needQemuImg(t)
	ctx := context.Background()
	d := Disks{}
	dir := t.TempDir()
	base, overlay := filepath.Join(dir, "base.qcow2"), filepath.Join(dir, "os.qcow2")
	if err := d.CreateDataDisk(ctx, base, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateOverlay(ctx, base, overlay, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Snapshot(ctx, overlay, "s1"); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(dir, "clone.qcow2")
	if err := d.CopySnapshot(ctx, overlay, "s1", clone, base); err != nil {
		t.Fatal(err)
	}
	info, err := d.Info(ctx, clone)
	if err != nil || info.BackingFile != base || info.VirtualSize != 1<<30 {
		t.Fatalf("clone: %v %+v", err, info)
	}
	if err := d.CopySnapshot(ctx, overlay, "s1", clone, ""); !errors.Is(err, ErrExists) {
		t.Errorf("copy over an existing file: %v", err)
	}
	if err := d.CopySnapshot(ctx, overlay, "nope", filepath.Join(dir, "x.qcow2"), ""); err == nil {
		t.Error("copy of a missing snapshot succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.qcow2")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed copy left its file")
	}
}

func TestQemuImgMessagesAreTyped(t *testing.T) {
	dir := t.TempDir()
	disk := filepath.Join(dir, "d.qcow2")
	var d Disks
	ctx := context.Background()
	if err := d.CreateDataDisk(ctx, disk, 1); err != nil {
		t.Fatalf("qemu-img: %v", err)
	}
	err := d.DeleteSnapshot(ctx, disk, "never-taken")
	if !errors.Is(err, desktop.ErrNoSnapshot) {
		t.Fatalf("deleting a snapshot that does not exist: %v, want ErrNoSnapshot", err)
	}
	if !errors.Is(classify([]byte("qemu-img: error while writing: No space left on device")), syscall.ENOSPC) {
		t.Error("a full disk is not ENOSPC")
	}
	if classify([]byte("qemu-img: Could not open 'x': Permission denied")) != nil {
		t.Error("an unrelated message was given a type")
	}
}
