package manager

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

type fakeCapacity struct {
	memFree, saveFree int
	diskFree          int // 0: plenty
}

func (f fakeCapacity) CheckSave(mem int) error {
	if mem > f.saveFree {
		return fmt.Errorf("only %d MiB to save to: %w", f.saveFree, desktop.ErrCapacity)
	}
	return nil
}

func (f fakeCapacity) Check(mem, disk int) error {
	if mem > f.memFree {
		return fmt.Errorf("only %d MiB: %w", f.memFree, desktop.ErrCapacity)
	}
	if f.diskFree > 0 && disk > f.diskFree {
		return fmt.Errorf("only %d MiB of disk: %w", f.diskFree, desktop.ErrCapacity)
	}
	return nil
}

func TestQuotaDefaultsToTheFreeTierAndCountsSnapshots(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	h.m.quota.defaultPlan = "free"
	ctx := context.Background()
	q, u, err := h.m.Quota(ctx, "alice")
	if err != nil || q.Plan != "free" || q.MaxVCPUs != 2 || q.MaxMemoryMiB != 4096 || q.MaxDiskGiB != 20 || u.Desktops != 0 {
		t.Fatalf("default quota %+v usage %+v %v", q, u, err)
	}
	d := h.settle(t, h.createFor(t, "a")) // 2 vCPU, 2 GiB, 20 GiB data disk (the harness's size)
	var qe *desktop.QuotaError
	if err := h.m.quota.CheckQuota(ctx, "alice", desktop.Usage{Desktops: 1, VCPUs: 2, MemoryMiB: 1024}); !errors.As(err, &qe) || qe.Limit != "vcpus" {
		t.Errorf("a second 2-vCPU desktop on the free tier: %v", err)
	}
	h.store.CreateSnapshot(ctx, &desktop.Snapshot{ID: "s", DesktopID: d.ID, Name: "big", Scope: "all", SizeBytes: 2 << 30, CreatedAt: d.CreatedAt})
	if err := h.m.quota.CheckQuota(ctx, "alice", desktop.Usage{}); !errors.As(err, &qe) || qe.Limit != "disk_gib" {
		t.Errorf("2 GiB of snapshots over a 20 GiB data disk on the free tier: %v", err)
	}
	if _, err := h.m.SetQuota(ctx, desktop.Quota{Owner: "alice", Plan: "team"}, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := h.m.quota.CheckQuota(ctx, "alice", desktop.Usage{Desktops: 1, VCPUs: 4, MemoryMiB: 8192}); err != nil {
		t.Errorf("on the team plan: %v", err)
	}
	var ve *desktop.ValidationError
	if _, err := h.m.SetQuota(ctx, desktop.Quota{Owner: "alice", Plan: "gold"}, "admin"); !errors.As(err, &ve) {
		t.Errorf("unknown plan: %v", err)
	}
}

func (h *harness) createFor(t *testing.T, name string) string { return h.create(t, name).ID }

func TestCapacityRefusesCreateAndStart(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.createFor(t, "a"))
	h.m.Stop(ctx, d.ID, "alice", StopOptions{Force: true})
	h.settle(t, d.ID)
	h.m.quota.capacity = fakeCapacity{memFree: 100}
	if _, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "b", Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}}); !errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("create without memory: %v", err)
	}
	if _, err := h.m.Start(ctx, d.ID, "alice"); !errors.Is(err, desktop.ErrCapacity) {
		t.Errorf("start without memory: %v", err)
	}
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateStopped {
		t.Errorf("a refused start changed the desktop: %s", got.State)
	}
}

func TestFullDiskFailsSnapshotCleanly(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "full").ID)
	h.hv.fail("SnapshotWithMemory")
	h.hv.mu.Lock()
	h.hv.failErr = fmt.Errorf("domain x: Could not write: %w", syscall.ENOSPC) // as the libvirt adapter types it
	h.hv.mu.Unlock()
	_, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "s"})
	if !errors.Is(err, desktop.ErrCapacity) {
		t.Fatalf("snapshot on a full disk: %v", err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("failed snapshot listed: %v", list)
	}
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning {
		t.Errorf("desktop after a failed snapshot: %s", got.State)
	}
}

func TestHibernateRefusedWithoutRoomForTheRAM(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "h").ID)
	h.m.quota.capacity = fakeCapacity{memFree: 1 << 20, saveFree: d.MemoryMiB - 1}
	if _, err := h.m.Hibernate(ctx, d.ID, "alice"); !errors.Is(err, desktop.ErrCapacity) {
		t.Fatalf("hibernate with no room for the RAM: %v", err)
	}
	if got, _ := h.m.Get(ctx, d.ID); got.State != desktop.StateRunning || got.Operation != "" || h.hv.vm(d.DomainName()) != desktop.VMRunning {
		t.Errorf("a refused hibernate changed the desktop: %+v, vm %s", got, h.hv.vm(d.DomainName()))
	}
	h.m.quota.capacity = fakeCapacity{memFree: 1 << 20, saveFree: d.MemoryMiB + 64}
	if _, err := h.m.Hibernate(ctx, d.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := h.settle(t, d.ID); got.State != desktop.StateHibernated {
		t.Errorf("hibernate with room: %s", got.State)
	}
}

func TestMemorySnapshotRefusedWithoutRoomForTheRAM(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.settle(t, h.create(t, "m").ID)
	h.m.quota.capacity = fakeCapacity{memFree: 1 << 20, diskFree: d.MemoryMiB - 1}
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "with-ram"}); !errors.Is(err, desktop.ErrCapacity) {
		t.Fatalf("memory snapshot without room for the RAM: %v", err)
	}
	if list, _ := h.m.Snapshots().ListSnapshots(ctx, d.ID); len(list) != 0 {
		t.Errorf("refused snapshot listed: %v", list)
	}
	no := false
	if _, err := h.m.Snapshots().CreateSnapshot(ctx, d.ID, SnapshotRequest{Name: "disks", Memory: &no}); err != nil {
		t.Errorf("a snapshot of the disks alone needs no room for the RAM: %v", err)
	}
}
