package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// TestBackupRestoreOnto: a backup written over a stopped desktop's data
// disk leaves the disk as it was at the backup's mark, keeps what it held
// before in a data snapshot (and the backup marks), and is refused without
// the caller's say-so or on a desktop that is not stopped.
func TestBackupRestoreOnto(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	bks := h.m.Backups()
	addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M", "write -P 0x22 7M 100k")
	bk := takeBackup(t, h, d.ID, BackupRequest{})
	qemuIO(t, d.DataDiskPath, "write -P 0x44 0 1M", "write -P 0x55 40M 1M") // after the backup

	var te *desktop.TransitionError
	if _, err := bks.RestoreOnto(ctx, bk.ID, RestoreOntoRequest{Desktop: d.ID, ReplaceDataDisk: true}); !errors.As(err, &te) {
		t.Errorf("restore onto a running desktop: %v, want a transition error", err)
	}
	if _, err := h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	var ve *desktop.ValidationError
	if _, err := bks.RestoreOnto(ctx, bk.ID, RestoreOntoRequest{Desktop: d.ID}); !errors.As(err, &ve) || ve.Field != "replace_data_disk" {
		t.Errorf("restore onto a desktop without replace_data_disk: %v", err)
	}
	if snaps, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(snaps) != 0 {
		t.Fatalf("a refused restore took snapshots: %+v", snaps)
	}
	before := filepath.Join(t.TempDir(), "before.raw")
	qemu(t, "qemu-img", "convert", "-f", "qcow2", "-O", "raw", d.DataDiskPath, before)

	r, err := bks.RestoreOnto(ctx, bk.ID, RestoreOntoRequest{Desktop: d.ID, ReplaceDataDisk: true, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != desktop.StateReverting || r.Operation != string(desktop.OpRestoreData) {
		t.Errorf("desktop while restoring: %s (%s)", r.State, r.Operation)
	}
	r = h.settle(t, d.ID)
	if r.State != desktop.StateStopped || r.LastError != "" {
		t.Fatalf("after the restore: %s (%s)", r.State, r.LastError)
	}
	atMark := filepath.Join(t.TempDir(), "mark.raw")
	qemu(t, "qemu-img", "convert", "-f", "qcow2", "-l", "snapshot.name="+bk.Mark, "-O", "raw", d.DataDiskPath, atMark)
	qemu(t, "qemu-img", "compare", "-f", "raw", "-F", "qcow2", atMark, d.DataDiskPath)
	name := beforeRestore + bk.ID
	sn, err := h.store.GetSnapshot(ctx, d.ID, name)
	if err != nil || sn.Scope != desktop.ScopeData {
		t.Fatalf("snapshot %s: %+v, %v", name, sn, err)
	}
	kept := filepath.Join(t.TempDir(), "kept.raw")
	qemu(t, "qemu-img", "convert", "-f", "qcow2", "-l", "snapshot.name="+name, "-O", "raw", d.DataDiskPath, kept)
	qemu(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", before, kept)
	if m := marks(t, d.DataDiskPath); !slices.Contains(m, bk.Mark) {
		t.Errorf("the backup's mark is gone from the disk: %v", m)
	}
	if !saidEvent(t, h, d.ID, "restore_requested", bk.ID) || !saidEvent(t, h, d.ID, "data_disk_restored", name) {
		t.Errorf("the desktop's events do not tell of the restore")
	}
	if _, err := os.Stat(d.DataDiskPath + ".restoring.raw"); !os.IsNotExist(err) {
		t.Errorf("the restore's scratch file is left: %v", err)
	}
}

// A restore whose backup cannot be read leaves the disk as it was, the
// desktop stopped with the reason, and the snapshot it kept.
func TestBackupRestoreOntoFailsBack(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	bks := h.m.Backups()
	_, dir := addDirTarget(t, h, "nas")
	qemuIO(t, d.DataDiskPath, "write -P 0x11 0 1M")
	bk := takeBackup(t, h, d.ID, BackupRequest{})
	qemuIO(t, d.DataDiskPath, "write -P 0x44 0 1M")
	if _, err := h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	for _, f := range chunkFiles(t, dir) {
		flipByte(t, f)
	}
	before := filepath.Join(t.TempDir(), "before.raw")
	qemu(t, "qemu-img", "convert", "-f", "qcow2", "-O", "raw", d.DataDiskPath, before)

	if _, err := bks.RestoreOnto(ctx, bk.ID, RestoreOntoRequest{Desktop: d.ID, ReplaceDataDisk: true}); err != nil {
		t.Fatal(err)
	}
	r := h.settle(t, d.ID)
	if r.State != desktop.StateStopped || !strings.Contains(r.LastError, "the data disk is as it was") {
		t.Fatalf("after a failed restore: %s (%q)", r.State, r.LastError)
	}
	qemu(t, "qemu-img", "compare", "-f", "raw", "-F", "qcow2", before, d.DataDiskPath)
	if !saidEvent(t, h, d.ID, "restore_data_failed", bk.ID) {
		t.Errorf("no restore_data_failed event")
	}
	// Again: the snapshot it keeps takes a free name.
	if _, err := bks.RestoreOnto(ctx, bk.ID, RestoreOntoRequest{Desktop: d.ID, ReplaceDataDisk: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	if _, err := h.store.GetSnapshot(ctx, d.ID, beforeRestore+bk.ID+"-2"); err != nil {
		t.Errorf("the second restore's snapshot: %v", err)
	}
}

// A backup of a larger disk than the desktop's is refused, naming the size
// to grow to.
func TestBackupRestoreOntoSmallerDisk(t *testing.T) {
	h, d := newBackupHarness(t)
	ctx := context.Background()
	addDirTarget(t, h, "nas")
	bk := takeBackup(t, h, d.ID, BackupRequest{})
	if _, err := h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	small := *h.settle(t, d.ID)
	small.DataDiskGiB = 0
	if err := h.store.UpdateDesktop(ctx, &small); err != nil {
		t.Fatal(err)
	}
	_, err := h.m.Backups().RestoreOnto(ctx, bk.ID, RestoreOntoRequest{Desktop: d.ID, ReplaceDataDisk: true})
	if !isConflict(err) || !strings.Contains(err.Error(), "grow its data disk to at least 1 GiB") {
		t.Errorf("restore onto a smaller disk: %v", err)
	}
}
