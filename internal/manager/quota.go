package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// Capacity checks that the host has room for a desktop.
type Capacity interface {
	Check(memMiB, diskMiB int) error
	// CheckSave refuses a hibernation whose RAM image would not fit.
	CheckSave(memMiB int) error
}

// quotas keeps owners within their quotas and hosts within their room:
// what a desktop, a snapshot or a bigger data disk adds is recorded only
// if both allow it (recordNew, recordSnapshot, reserveDataDisk), and a
// desktop is woken or hibernated only where its host has room for it.
type quotas struct {
	store QuotaStore
	place hostFit
	log   *slog.Logger
	// From Config: this host's room (Capacity) and the quota plan of
	// owners without their own (DefaultPlan).
	capacity    Capacity
	defaultPlan string
}

// hostFit says whether a desktop fits on its host as placement sees it:
// as it is recorded there, or woken on a remote host (placer, place.go).
type hostFit interface {
	fitsOn(ctx context.Context, d *desktop.Desktop, memHeld bool) (func(placement.Load) error, error)
	roomOnRemote(ctx context.Context, d *desktop.Desktop, memMiB int) error
}

// newDesktopDiskMiB is the host space a new desktop takes at once: its OS
// overlay and seed grow from about this; data disks are sparse.
const newDesktopDiskMiB = 1024

// roomFor refuses to run a desktop the host has no memory for.
func (qs *quotas) roomFor(memMiB, diskMiB int) error {
	if qs.capacity == nil {
		return nil
	}
	return qs.capacity.Check(memMiB, diskMiB)
}

// roomOn refuses to run d where its host has no memory for it: this
// host's own check, or placement's for a remote host (what it last
// reported free, and what bureau's desktops hold there).
func (qs *quotas) roomOn(ctx context.Context, d *desktop.Desktop, memMiB int) error {
	if !d.Remote() {
		return qs.roomFor(memMiB, 0)
	}
	return qs.place.roomOnRemote(ctx, d, memMiB)
}

// roomToSaveOn refuses to hibernate a desktop of this host whose RAM would
// not fit on its disk (a remote host's disk is not measured yet).
func (qs *quotas) roomToSaveOn(d *desktop.Desktop) error {
	if d.Remote() {
		return nil
	}
	return qs.roomToSave(d.MemoryMiB)
}

// roomToSave refuses to hibernate a desktop whose RAM would not fit on disk.
func (qs *quotas) roomToSave(memMiB int) error {
	if qs.capacity == nil {
		return nil
	}
	return qs.capacity.CheckSave(memMiB)
}

// Quota returns an owner's limits (its own, or the default plan's) and
// what it uses now (quotas.Quota).
func (m *Manager) Quota(ctx context.Context, owner string) (desktop.Quota, desktop.Usage, error) {
	return m.quota.Quota(ctx, owner)
}

// SetQuota sets an owner's plan or custom limits (quotas.SetQuota).
func (m *Manager) SetQuota(ctx context.Context, q desktop.Quota, actor string) (*desktop.Quota, error) {
	return m.quota.SetQuota(ctx, q, actor)
}

// Quota returns an owner's limits (its own, or the default plan's) and
// what it uses now.
func (qs *quotas) Quota(ctx context.Context, owner string) (desktop.Quota, desktop.Usage, error) {
	q, err := qs.store.GetQuota(ctx, owner)
	if errors.Is(err, desktop.ErrNotFound) {
		q, err = nil, nil
	}
	if err != nil {
		return desktop.Quota{}, desktop.Usage{}, err
	}
	u, err := qs.store.Usage(ctx, owner)
	return qs.effective(owner, q), u, err
}

// effective is the quota that applies to owner: its own (stored, when not
// nil) or the default plan's.
func (qs *quotas) effective(owner string, stored *desktop.Quota) desktop.Quota {
	if stored != nil {
		return *stored
	}
	plan, ok := desktop.Plans[qs.defaultPlan]
	if !ok {
		plan = desktop.Plans["free"]
	}
	plan.Owner = owner
	return plan
}

// CheckQuota says whether add would take owner past its quota now. It is a
// preview: another request may use the room before this one does; the
// writes that add usage check again atomically (admit).
func (qs *quotas) CheckQuota(ctx context.Context, owner string, add desktop.Usage) error {
	q, u, err := qs.Quota(ctx, owner)
	if err != nil {
		return err
	}
	return q.Check(u.Plus(add))
}

// admit is the rule the store applies inside the transaction that adds
// usage for owner (see Store.CreateDesktopChecked): owner's quota with add
// on top of what it uses then, unless unlimited (admins), and then room, if
// given (the host's capacity, checked after the quota so refusals come in
// the order a caller fixes them). room runs inside the transaction too, so
// it must be quick and not use the store.
func (qs *quotas) admit(owner string, add desktop.Usage, unlimited bool, room func() error) func(*desktop.Quota, desktop.Usage) error {
	return func(stored *desktop.Quota, u desktop.Usage) error {
		if !unlimited {
			if err := qs.effective(owner, stored).Check(u.Plus(add)); err != nil {
				return err
			}
		}
		if room != nil {
			return room()
		}
		return nil
	}
}

// recordNew records a new desktop (fresh, cloned or warm-created) if its
// owner's quota and the host have room for it, atomically with the owner's
// other requests: of 20 concurrent creates against room for 3, 3 are
// recorded. Placement's check of its host (fitsOn) runs in the same
// transaction with the host's row locked, so creates of different owners
// never overfill one host together either.
//
// A desktop taking a spare needs no more host memory: the spare's VM holds
// it already.
func (qs *quotas) recordNew(ctx context.Context, d *desktop.Desktop, unlimited, memHeld bool) error {
	add := desktop.Usage{Desktops: 1, VCPUs: d.VCPUs, MemoryMiB: d.MemoryMiB, DiskMiB: d.DataDiskGiB * 1024}
	mem := d.MemoryMiB
	if memHeld {
		mem = 0
	}
	var room func() error
	if !d.Remote() {
		room = func() error { return qs.roomFor(mem, newDesktopDiskMiB) }
	}
	fits, err := qs.place.fitsOn(ctx, d, memHeld)
	if err != nil {
		return err
	}
	return qs.store.CreateDesktopChecked(ctx, d, qs.admit(d.Owner, add, unlimited, room), fits)
}

// recordSnapshot records sn, a snapshot of d about to be taken, if the
// owner's quota has room for one more snapshot and for the space it is
// counted for, and, for one with memory, the host has room for its RAM.
//
// A snapshot's size is known only once it is taken, so until then it is
// counted for about the most it takes then: its RAM for a snapshot with
// memory (libvirt saves the RAM into the OS disk, skipping pages never
// used), nothing for a disk-only one (a qcow2 internal snapshot shares
// every cluster with its disk when it is taken). That estimate is stored as
// its size, so concurrent snapshots count each other's, and the growth of
// its disk files measured right after it was taken replaces it. The space a
// snapshot pins later, as its disk changes, is not counted.
func (qs *quotas) recordSnapshot(ctx context.Context, d *desktop.Desktop, sn *desktop.Snapshot, unlimited bool) error {
	add := desktop.Usage{Snapshots: 1}
	var room func() error
	if sn.Memory {
		sn.SizeBytes = int64(d.MemoryMiB) << 20
		add.DiskMiB = d.MemoryMiB
		// Its RAM goes into the OS disk: as much room as for a hibernation.
		room = func() error { return qs.roomFor(0, d.MemoryMiB) }
	}
	return qs.store.CreateSnapshotChecked(ctx, sn, d.Owner, qs.admit(d.Owner, add, unlimited, room))
}

// reserveDataDisk records d's data disk as sizeGiB before it grows, if the
// owner's disk quota has room for the added GiB, atomically with the
// owner's other requests; the caller records the old size again if growing
// fails.
func (qs *quotas) reserveDataDisk(ctx context.Context, d *desktop.Desktop, sizeGiB int, unlimited bool) error {
	add := desktop.Usage{DiskMiB: (sizeGiB - d.DataDiskGiB) * 1024}
	return qs.store.GrowDataDiskChecked(ctx, d.ID, d.Owner, sizeGiB, qs.admit(d.Owner, add, unlimited, nil))
}

// SetQuota sets an owner's plan or custom limits.
func (qs *quotas) SetQuota(ctx context.Context, q desktop.Quota, actor string) (*desktop.Quota, error) {
	// A plan named without limits of its own gets the plan's.
	if base, ok := desktop.Plans[q.Plan]; ok && q == (desktop.Quota{Owner: q.Owner, Plan: q.Plan}) {
		base.Owner = q.Owner
		q = base
	}
	if err := desktop.ValidateQuota(q); err != nil {
		return nil, err
	}
	if err := qs.store.PutQuota(ctx, &q); err != nil {
		return nil, err
	}
	qs.log.Info("quota set", "owner", q.Owner, "plan", q.Plan, "actor", actor, "at", time.Now().UTC())
	return &q, nil
}

// outOfSpace says whether err is a write that failed for lack of disk
// space: ENOSPC, which the disk tools, libvirt and the store all report
// typed (see storage.classify, the libvirt adapter and store.classify).
func outOfSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC)
}

// diskFull marks an error that says the host's disk is full as a capacity
// error (507) rather than an internal one; others pass unchanged.
func diskFull(err error) error {
	if err != nil && outOfSpace(err) && !errors.Is(err, desktop.ErrCapacity) {
		return fmt.Errorf("%w: %w", desktop.ErrCapacity, err)
	}
	return err
}
