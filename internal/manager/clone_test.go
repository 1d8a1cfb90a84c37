package manager

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

func TestCloneFromSnapshot(t *testing.T) {
	var ops []string
	h := newHarness(t, &fakeDisks{snaps: &ops})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	h.m.Snapshots().CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "golden"})
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "copy", From: &CloneSource{DesktopID: src.ID, Snapshot: "golden"},
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateRunning || got.Image != src.Image || got.DataDiskGiB != src.DataDiskGiB {
		t.Fatalf("clone: %+v", got)
	}
	want := []string{"copy data.qcow2@golden base=. data.qcow2 ", "copy os.qcow2@golden base=base.qcow2 os.qcow2 "}
	if !slices.Equal(ops, want) {
		t.Errorf("disk operations %q, want %q", ops, want)
	}
	b, _ := os.ReadFile(got.DataDiskPath)
	if !strings.Contains(string(b), src.DataDiskPath+"@golden") {
		t.Errorf("clone's data disk = %q", b)
	}
	if h.seeds.last.DesktopID != d.ID || h.seeds.last.Hostname != "copy" {
		t.Errorf("clone seed %+v: it needs its own identity", h.seeds.last)
	}
}

func TestCloneOfDataSnapshotGetsFreshOS(t *testing.T) {
	var ops []string
	h := newHarness(t, &fakeDisks{snaps: &ops})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	h.m.Snapshots().CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData})
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "copy", From: &CloneSource{DesktopID: src.ID, Snapshot: "ws"},
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 40}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settle(t, d.ID)
	if got.DataDiskGiB != 40 || !slices.Contains(ops, "resize data.qcow2 40") || len(ops) != 2 {
		t.Errorf("clone %+v, disk operations %q", got, ops)
	}
}

func TestCloneRefusals(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	h.m.Snapshots().CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "s"})
	spec := desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}
	for field, from := range map[string]*CloneSource{"from.desktop": {DesktopID: "nope", Snapshot: "s"}, "from.snapshot": {DesktopID: src.ID, Snapshot: "nope"}} {
		var ve *desktop.ValidationError
		if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "c", From: from, Spec: spec}); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	spec.Image = "imported"
	var ve *desktop.ValidationError
	if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "c", From: &CloneSource{DesktopID: src.ID, Snapshot: "s"}, Spec: spec}); !errors.As(err, &ve) || ve.Field != "image" {
		t.Errorf("other image: %v", err)
	}
}

// TestCloneWithAFailingCopy: a clone whose OS disk cannot be copied fails
// with why and leaves nothing of itself (its data disk copy goes too);
// its source keeps its snapshot.
func TestCloneWithAFailingCopy(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "golden"}); err != nil {
		t.Fatal(err)
	}
	h.disks.failOn("CopySnapshot os.qcow2", errors.New("Input/output error"))
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "copy", From: &CloneSource{DesktopID: src.ID, Snapshot: "golden"},
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateError || !strings.Contains(got.LastError, "OS disk: ") || !strings.Contains(got.LastError, "Input/output error") {
		t.Fatalf("clone: %s (%q)", got.State, got.LastError)
	}
	if exists(got.Dir) {
		t.Errorf("the failed clone's files are left in %s", got.Dir)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, src.ID); len(list) != 1 || !h.disks.has(src.DataDiskPath, "golden") {
		t.Errorf("the source's snapshot after a failed clone: %v", list)
	}
}

// TestCloneOfASnapshotTheDisksLack: a listed snapshot the source's disks do
// not hold cannot be cloned; the clone says so.
func TestCloneOfASnapshotTheDisksLack(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData}); err != nil {
		t.Fatal(err)
	}
	h.disks.snapshots().remove(src.DataDiskPath, "ws")
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "copy", From: &CloneSource{DesktopID: src.ID, Snapshot: "ws"},
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateError || !strings.Contains(got.LastError, desktop.ErrNoSnapshot.Error()) {
		t.Fatalf("clone of a snapshot the disk lacks: %s (%q)", got.State, got.LastError)
	}
}
