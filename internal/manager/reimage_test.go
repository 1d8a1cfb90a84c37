package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestReimageKeepsDataAndDataSnapshots(t *testing.T) {
	var snaps []string
	h := newHarness(t, &fakeDisks{snaps: &snaps})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "r").ID)
	os.WriteFile(d.DataDiskPath, []byte("precious"), 0o600)
	h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "ws", Scope: desktop.ScopeData})
	h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "full"})
	h.store.PutImage(ctx, &desktop.Image{Name: "newer", Path: filepath.Join(h.dir, "newer.qcow2"), RecipeHash: "def", CreatedAt: time.Now()})

	r, err := h.m.Reimage(ctx, d.ID, "newer", "alice")
	if err != nil || r.State != desktop.StateReimaging {
		t.Fatalf("reimage: %v %+v", err, r)
	}
	got := h.settle(t, d.ID)
	if got.State != desktop.StateRunning || got.Image != "newer" || got.LastError != "" {
		t.Fatalf("after reimage: %+v", got)
	}
	if b, _ := os.ReadFile(d.DataDiskPath); string(b) != "precious" {
		t.Errorf("data disk = %q after reimage", b)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 1 || list[0].Name != "ws" {
		t.Errorf("snapshots after reimage: %v (want only the data snapshot)", list)
	}
	if !slices.Contains(h.hv.callList(), "DeleteSnapshot "+d.DomainName()+"/full") {
		t.Errorf("the memory snapshot was not deleted: %v", h.hv.callList())
	}
	if h.seeds.last.InstanceID == "" || h.seeds.last.InstanceID == d.ID {
		t.Errorf("reimage kept the cloud-init instance id %q", h.seeds.last.InstanceID)
	}
	if _, err := os.Stat(filepath.Join(d.Dir, "os.qcow2.new")); !errors.Is(err, os.ErrNotExist) {
		t.Error("temporary OS disk left behind")
	}
	var ve *desktop.ValidationError
	if _, err := h.m.Reimage(ctx, d.ID, "nope", "alice"); !errors.As(err, &ve) || ve.Field != "image" {
		t.Errorf("unknown image: %v", err)
	}
}

func TestReimageStoppedStaysStopped(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "r").ID)
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	h.m.Reimage(ctx, d.ID, "", "alice")
	if got := h.settle(t, d.ID); got.State != desktop.StateStopped || got.Image != "base" {
		t.Fatalf("after reimage of a stopped desktop: %+v", got)
	}
}

func TestResizeDataDisk(t *testing.T) {
	var ops []string
	h := newHarness(t, &fakeDisks{snaps: &ops})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "g").ID) // 20 GiB data disk
	var ve *desktop.ValidationError
	if _, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 0, Actor: "alice"}); !errors.As(err, &ve) {
		t.Errorf("size 0: %v", err)
	}
	got, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 30, Actor: "alice"})
	if err != nil || got.DataDiskGiB != 30 {
		t.Fatalf("live resize: %v %+v", err, got)
	}
	if !slices.Contains(h.hv.callList(), "ResizeDisk "+d.DomainName()+" data.qcow2 32212254720") || !slices.Contains(h.hv.callList(), "GuestExec "+d.DomainName()) {
		t.Errorf("calls %v", h.hv.callList())
	}
	if _, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 25, Actor: "alice"}); !errors.As(err, &ve) || ve.Field != "size_gib" {
		t.Errorf("shrink: %v", err)
	}
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	if got, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 40, Actor: "alice"}); err != nil || got.DataDiskGiB != 40 || !slices.Contains(ops, "resize data.qcow2 40") {
		t.Fatalf("offline resize: %v %+v %v", err, got, ops)
	}
}

func TestReconcileRemovesUnfinishedReimageDisk(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.settle(t, h.create(t, "r").ID)
	half := filepath.Join(d.Dir, "os.qcow2.new")
	os.WriteFile(half, []byte("half"), 0o600)
	if err := h.m.recon.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(half); !errors.Is(err, os.ErrNotExist) {
		t.Error("unfinished OS disk left after reconcile")
	}
	if _, err := os.Stat(filepath.Join(d.Dir, "os.qcow2")); err != nil {
		t.Errorf("the desktop's OS disk: %v", err)
	}
}

// TestLiveResizeWhenTheGuestCannotGrowHome: the disk grows and the resize
// counts even when the guest fails to grow its filesystem now (it does at
// its next boot).
func TestLiveResizeWhenTheGuestCannotGrowHome(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "g").ID)
	h.hv.onExec(growHome, desktop.ExecResult{ExitCode: 1, Stderr: []byte("sfdisk: cannot open /dev/vdb")}, nil)
	got, err := h.m.ResizeDataDisk(ctx, d.ID, ResizeRequest{SizeGiB: 30, Actor: "alice"})
	if err != nil || got.DataDiskGiB != 30 {
		t.Fatalf("live resize with the guest failing to grow /home: %v %+v", err, got)
	}
	if !slices.Contains(h.hv.callList(), "ResizeDisk "+d.DomainName()+" data.qcow2 32212254720") {
		t.Errorf("calls %v", h.hv.callList())
	}
}
