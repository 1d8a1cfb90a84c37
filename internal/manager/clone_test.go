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
	h := newHarness(t, fakeDisks{snaps: &ops})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	h.m.CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "golden"})
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
	h := newHarness(t, fakeDisks{snaps: &ops})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	h.m.CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData})
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
	h := newHarness(t, fakeDisks{})
	ctx := context.Background()
	src := h.settle(t, h.create(t, "src").ID)
	h.m.CreateSnapshot(ctx, src.ID, SnapshotRequest{Name: "s"})
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
