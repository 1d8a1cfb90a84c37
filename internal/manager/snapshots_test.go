package manager

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestSnapshotRunningWithMemoryAndRevert(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "clean", Description: "fresh", Actor: "alice"})
	if err != nil || !sn.Memory || sn.Scope != desktop.ScopeAll || sn.Parent != "" {
		t.Fatalf("snapshot: %v %+v", err, sn)
	}
	_, err = h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "clean"})
	if !errors.Is(err, desktop.ErrNameTaken) {
		t.Errorf("duplicate name: %v", err)
	}
	second, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "later"})
	if err != nil || second.Parent != "clean" {
		t.Fatalf("second snapshot: %v %+v", err, second)
	}
	r, err := h.m.Snapshots().RevertSnapshot(ctx, d.ID, "clean", "alice")
	if err != nil || r.State != desktop.StateReverting {
		t.Fatalf("revert: %v %+v", err, r)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("after revert: %+v", got)
	}
	if !slices.Contains(h.hv.callList(), "RevertSnapshot "+d.DomainName()+"/clean") {
		t.Errorf("calls %v", h.hv.callList())
	}
	third, _ := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "after-revert"})
	if third.Parent != "clean" {
		t.Errorf("parent after revert = %q, want clean", third.Parent)
	}
	if _, err := h.m.Snapshots().RevertSnapshot(ctx, d.ID, "nope", "alice"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("revert to missing: %v", err)
	}
}

func TestDataSnapshotRevertRestartsRunningDesktop(t *testing.T) {
	var snaps []string
	h := newHarness(t, &fakeDisks{snaps: &snaps})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData})
	if err != nil || sn.Memory {
		t.Fatalf("data snapshot: %v %+v", err, sn)
	}
	if !slices.Contains(h.hv.callList(), "LiveDiskSnapshot "+d.DomainName()+"/ws 1") {
		t.Errorf("calls %v", h.hv.callList())
	}
	h.m.Snapshots().RevertSnapshot(ctx, d.ID, "ws", "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("after revert: %+v", got)
	}
	if !slices.Equal(snaps, []string{"revert data.qcow2 ws"}) {
		t.Errorf("file operations %v, want only the data disk reverted", snaps)
	}
	if i, j := slices.Index(h.hv.callList(), "Shutdown "+d.DomainName()), slices.Index(h.hv.callList(), "Start "+d.DomainName()); i < 0 || j < 0 {
		t.Errorf("running desktop not stopped and started around the revert: %v", h.hv.callList())
	}
}

func TestSnapshotStoppedDesktop(t *testing.T) {
	var snaps []string
	h := newHarness(t, &fakeDisks{snaps: &snaps})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	yes := true
	var ve *desktop.ValidationError
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "m", Memory: &yes}); !errors.As(err, &ve) || ve.Field != "memory" {
		t.Errorf("memory snapshot of a stopped desktop: %v", err)
	}
	sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "cold"})
	if err != nil || sn.Memory {
		t.Fatalf("stopped snapshot: %v %+v", err, sn)
	}
	if !slices.Equal(snaps, []string{"snapshot os.qcow2 cold", "snapshot data.qcow2 cold"}) {
		t.Errorf("file operations %v", snaps)
	}
	h.m.Snapshots().RevertSnapshot(ctx, d.ID, "cold", "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped {
		t.Errorf("a stopped desktop reverted to a disk snapshot should stay stopped: %+v", got)
	}
	if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, "cold", "alice"); err != nil {
		t.Fatal(err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("after delete: %v", list)
	}
	if !strings.Contains(strings.Join(snaps, ","), "delete data.qcow2 cold") {
		t.Errorf("file operations %v", snaps)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	var ve *desktop.ValidationError
	for _, req := range []SnapshotRequest{{Name: ""}, {Name: "../x"}, {Name: "ok", Scope: "home"}} {
		if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, req); !errors.As(err, &ve) {
			t.Errorf("%+v: %v", req, err)
		}
	}
	yes := true
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "x", Scope: desktop.ScopeData, Memory: &yes}); !errors.As(err, &ve) {
		t.Errorf("memory with data scope: %v", err)
	}
	h.m.Hibernate(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	var te *desktop.TransitionError
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "x"}); !errors.As(err, &te) {
		t.Errorf("snapshot of a hibernated desktop: %v", err)
	}
	// A failing hypervisor records nothing.
	h.m.Resume(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	h.hv.fail("SnapshotWithMemory")
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "x"}); err == nil {
		t.Error("a failed snapshot succeeded")
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("failed snapshot recorded: %v", list)
	}
	if calls := strings.Join(h.hv.callList(), ","); !strings.Contains(calls, "DeleteSnapshot "+d.DomainName()+"/x") {
		t.Errorf("a failed snapshot was not removed from the disks (a call cut off by a libvirtd restart may have been carried out): %s", calls)
	}
	// Busy desktops refuse.
	h.hv.fail("")
	h.m.ops.lock(d.ID, "test")
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "y"}); !errors.Is(err, desktop.ErrBusy) {
		t.Errorf("snapshot while busy: %v", err)
	}
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "y", Wait: 20 * time.Millisecond}); !errors.Is(err, desktop.ErrBusy) {
		t.Errorf("snapshot while busy for longer than it waits: %v", err)
	}
	// One that may wait is taken once the other operation ends.
	go func() {
		time.Sleep(50 * time.Millisecond)
		h.m.ops.unlock(d.ID)
	}()
	if sn, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "y", Wait: 5 * time.Second}); err != nil || sn.Name != "y" {
		t.Errorf("a snapshot waiting for an operation: %v %+v", err, sn)
	}
}

// TestRevertToMissingSnapshot: a name the desktop never had is not found
// at once and changes nothing; a listed snapshot libvirt does not have (a
// bureau killed while taking it) fails the revert visibly, leaves the VM
// untouched and stays listed, so it can be deleted.
func TestRevertToMissingSnapshot(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	name := d.DomainName()
	calls := len(h.hv.callList())
	if _, err := h.m.Snapshots().RevertSnapshot(ctx, d.ID, "nope", "alice"); !errors.Is(err, desktop.ErrNotFound) {
		t.Fatalf("revert to a name never taken: %v, want not found", err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning || got.Operation != "" || got.LastError != "" {
		t.Errorf("after a revert to a name never taken: %s (op %q, error %q), want running as before", got.State, got.Operation, got.LastError)
	}
	if later := h.hv.callList()[calls:]; len(later) != 0 {
		t.Errorf("a revert to a name never taken reached the hypervisor: %v", later)
	}

	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	h.hv.loseSnapshot(name, "gone")
	calls = len(h.hv.callList())
	if _, err := h.m.Snapshots().RevertSnapshot(ctx, d.ID, "gone", "alice"); err != nil {
		t.Fatalf("revert: %v", err)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateError || !strings.Contains(got.LastError, desktop.ErrNoSnapshot.Error()) {
		t.Errorf("revert to a snapshot libvirt lacks: %s (%q), want error saying %q", got.State, got.LastError, desktop.ErrNoSnapshot)
	}
	if st := h.hv.vm(name); st != desktop.VMRunning {
		t.Errorf("VM %s after the failed revert, want running as it was", st)
	}
	for _, c := range h.hv.callList()[calls:] {
		if !strings.HasPrefix(c, "RevertSnapshot ") {
			t.Errorf("a failed revert did %q", c)
		}
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 1 || list[0].Name != "gone" {
		t.Fatalf("snapshots after the failed revert: %v, want it still listed", list)
	}
	if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, "gone", "alice"); err != nil {
		t.Fatalf("deleting the snapshot libvirt lacks: %v", err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("after delete: %v", list)
	}
	// The desktop runs: a reconcile says so again.
	h.m.recon.Reconcile(ctx)
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Errorf("after reconcile: %s (%q), want running", got.State, got.LastError)
	}
}

// TestSnapshotsLiveInTheFiles: what the hypervisor and qemu-img take ends
// up in the disk files, and deleting a snapshot takes it out of them,
// whichever way it was taken.
func TestSnapshotsLiveInTheFiles(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	osDisk := filepath.Join(d.Dir, "os.qcow2")
	in := func(file, snap string) bool { return h.disks.has(file, snap) }
	h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "ram"})
	h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "live", Scope: desktop.ScopeData})
	if !h.hv.hasSnapshot(d.DomainName(), "ram") || !in(osDisk, "ram") || !in(d.DataDiskPath, "ram") {
		t.Error("a memory snapshot is not in libvirt and both disks")
	}
	if !in(d.DataDiskPath, "live") || in(osDisk, "live") || h.hv.hasSnapshot(d.DomainName(), "live") {
		t.Error("a live data snapshot is not in the data disk alone")
	}
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "cold", Scope: desktop.ScopeOS})
	if !in(osDisk, "cold") || in(d.DataDiskPath, "cold") {
		t.Error("a stopped OS snapshot is not in the OS disk alone")
	}
	for _, n := range []string{"ram", "live", "cold"} {
		if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, n, "alice"); err != nil {
			t.Fatalf("delete %s: %v", n, err)
		}
		if in(osDisk, n) || in(d.DataDiskPath, n) || h.hv.hasSnapshot(d.DomainName(), n) {
			t.Errorf("snapshot %s left in the disks after delete", n)
		}
	}
}

// TestStoppedSnapshotFailingOnOneDisk: a snapshot of a stopped desktop
// that fails on its second disk is undone on the first, not recorded,
// and the error says why (a full disk is the host's capacity).
func TestStoppedSnapshotFailingOnOneDisk(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	osDisk := filepath.Join(d.Dir, "os.qcow2")
	h.disks.failOn("Snapshot data.qcow2", syscall.ENOSPC)
	_, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "cold"})
	if !errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("snapshot with the data disk full: %v, want ErrCapacity", err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("a failed snapshot is listed: %v", list)
	}
	if h.disks.has(osDisk, "cold") || h.disks.has(d.DataDiskPath, "cold") {
		t.Error("a failed snapshot was left inside a disk file")
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped {
		t.Errorf("after a failed snapshot: %s", got.State)
	}
	h.disks.heal("Snapshot data.qcow2")
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "cold"}); err != nil {
		t.Fatalf("the same snapshot once there is room: %v", err)
	}
	if !h.disks.has(osDisk, "cold") || !h.disks.has(d.DataDiskPath, "cold") {
		t.Error("the snapshot is not in both disks")
	}
}

// TestDeleteSnapshotFailingOnOneDisk: a delete that fails on a disk keeps
// the snapshot listed, and deleting it again finishes the job (the disk
// already done counts as deleted).
func TestDeleteSnapshotFailingOnOneDisk(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "cold"}); err != nil {
		t.Fatal(err)
	}
	h.disks.failOn("DeleteSnapshot data.qcow2", errors.New("Permission denied"))
	if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, "cold", "alice"); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("delete failing on the data disk: %v", err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 1 {
		t.Fatalf("a snapshot whose delete failed is no longer listed: %v", list)
	}
	h.disks.heal("DeleteSnapshot data.qcow2")
	if err := h.m.Snapshots().DeleteSnapshot(ctx, d.ID, "cold", "alice"); err != nil {
		t.Fatalf("deleting it again: %v", err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 || h.disks.has(d.DataDiskPath, "cold") {
		t.Errorf("after the second delete: %v", list)
	}
}

// TestRevertOfAStoppedDesktopFailingOnADisk: a revert qemu-img cannot do
// fails visibly and the desktop stays off.
func TestRevertOfAStoppedDesktopFailingOnADisk(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData}); err != nil {
		t.Fatal(err)
	}
	h.disks.failOn("RevertSnapshot", errors.New("Could not open 'data.qcow2': Permission denied"))
	h.m.Snapshots().RevertSnapshot(ctx, d.ID, "ws", "alice")
	got := h.settle(t, d.ID)
	if got.State != desktop.StateError || !strings.Contains(got.LastError, "Permission denied") {
		t.Errorf("failed revert: %s (%q)", got.State, got.LastError)
	}
	if st := h.hv.vm(d.DomainName()); st != desktop.VMShutoff {
		t.Errorf("VM %s after a failed revert of a stopped desktop", st)
	}
	if sn, _ := h.store.GetSnapshot(ctx, d.ID, "ws"); sn == nil || sn.RevertedAt != nil {
		t.Errorf("a failed revert was recorded as done: %+v", sn)
	}
}
