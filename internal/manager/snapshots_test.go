package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestSnapshotRunningWithMemoryAndRevert(t *testing.T) {
	h := newHarness(t, fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	sn, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "clean", Description: "fresh", Actor: "alice"})
	if err != nil || !sn.Memory || sn.Scope != desktop.ScopeAll || sn.Parent != "" {
		t.Fatalf("snapshot: %v %+v", err, sn)
	}
	_, err = h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "clean"})
	if !errors.Is(err, desktop.ErrNameTaken) {
		t.Errorf("duplicate name: %v", err)
	}
	second, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "later"})
	if err != nil || second.Parent != "clean" {
		t.Fatalf("second snapshot: %v %+v", err, second)
	}
	r, err := h.m.RevertSnapshot(ctx, d.ID, "clean", "alice")
	if err != nil || r.State != desktop.StateReverting {
		t.Fatalf("revert: %v %+v", err, r)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateRunning {
		t.Fatalf("after revert: %+v", got)
	}
	if !slices.Contains(h.hv.callList(), "RevertSnapshot "+d.DomainName()+"/clean") {
		t.Errorf("calls %v", h.hv.callList())
	}
	third, _ := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "after-revert"})
	if third.Parent != "clean" {
		t.Errorf("parent after revert = %q, want clean", third.Parent)
	}
	if _, err := h.m.RevertSnapshot(ctx, d.ID, "nope", "alice"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("revert to missing: %v", err)
	}
}

func TestDataSnapshotRevertRestartsRunningDesktop(t *testing.T) {
	var snaps []string
	h := newHarness(t, fakeDisks{snaps: &snaps})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	sn, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData})
	if err != nil || sn.Memory {
		t.Fatalf("data snapshot: %v %+v", err, sn)
	}
	if !slices.Contains(h.hv.callList(), "LiveDiskSnapshot "+d.DomainName()+"/ws 1") {
		t.Errorf("calls %v", h.hv.callList())
	}
	h.m.RevertSnapshot(ctx, d.ID, "ws", "alice")
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
	h := newHarness(t, fakeDisks{snaps: &snaps})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	yes := true
	var ve *desktop.ValidationError
	if _, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "m", Memory: &yes}); !errors.As(err, &ve) || ve.Field != "memory" {
		t.Errorf("memory snapshot of a stopped desktop: %v", err)
	}
	sn, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "cold"})
	if err != nil || sn.Memory {
		t.Fatalf("stopped snapshot: %v %+v", err, sn)
	}
	if !slices.Equal(snaps, []string{"snapshot os.qcow2 cold", "snapshot data.qcow2 cold"}) {
		t.Errorf("file operations %v", snaps)
	}
	h.m.RevertSnapshot(ctx, d.ID, "cold", "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped {
		t.Errorf("a stopped desktop reverted to a disk snapshot should stay stopped: %+v", got)
	}
	if err := h.m.DeleteSnapshot(ctx, d.ID, "cold", "alice"); err != nil {
		t.Fatal(err)
	}
	if list, _ := h.m.ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("after delete: %v", list)
	}
	if !strings.Contains(strings.Join(snaps, ","), "delete data.qcow2 cold") {
		t.Errorf("file operations %v", snaps)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	h := newHarness(t, fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "s").ID)
	var ve *desktop.ValidationError
	for _, req := range []SnapshotRequest{{Name: ""}, {Name: "../x"}, {Name: "ok", Scope: "home"}} {
		if _, err := h.m.CreateSnapshot(ctx, d.ID, req); !errors.As(err, &ve) {
			t.Errorf("%+v: %v", req, err)
		}
	}
	yes := true
	if _, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "x", Scope: desktop.ScopeData, Memory: &yes}); !errors.As(err, &ve) {
		t.Errorf("memory with data scope: %v", err)
	}
	h.m.Hibernate(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	var te *desktop.TransitionError
	if _, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "x"}); !errors.As(err, &te) {
		t.Errorf("snapshot of a hibernated desktop: %v", err)
	}
	// A failing hypervisor records nothing.
	h.m.Resume(ctx, d.ID, "alice")
	h.settle(t, d.ID)
	h.hv.fail("SnapshotWithMemory")
	if _, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "x"}); err == nil {
		t.Error("a failed snapshot succeeded")
	}
	if list, _ := h.m.ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("failed snapshot recorded: %v", list)
	}
	if calls := strings.Join(h.hv.callList(), ","); !strings.Contains(calls, "DeleteSnapshot "+d.DomainName()+"/x") {
		t.Errorf("a failed snapshot was not removed from the disks (a call cut off by a libvirtd restart may have been carried out): %s", calls)
	}
	// Busy desktops refuse.
	h.hv.fail("")
	h.m.lock(d.ID, "test")
	if _, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "y"}); !errors.Is(err, desktop.ErrBusy) {
		t.Errorf("snapshot while busy: %v", err)
	}
	if _, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "y", Wait: 20 * time.Millisecond}); !errors.Is(err, desktop.ErrBusy) {
		t.Errorf("snapshot while busy for longer than it waits: %v", err)
	}
	// One that may wait is taken once the other operation ends.
	go func() {
		time.Sleep(50 * time.Millisecond)
		h.m.unlock(d.ID)
	}()
	if sn, err := h.m.CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "y", Wait: 5 * time.Second}); err != nil || sn.Name != "y" {
		t.Errorf("a snapshot waiting for an operation: %v %+v", err, sn)
	}
}
