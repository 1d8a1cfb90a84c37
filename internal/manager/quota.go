package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Capacity checks that the host has room for a desktop.
type Capacity interface {
	Check(memMiB, diskMiB int) error
	// CheckSave refuses a hibernation whose RAM image would not fit.
	CheckSave(memMiB int) error
}

// newDesktopDiskMiB is the host space a new desktop takes at once: its OS
// overlay and seed grow from about this; data disks are sparse.
const newDesktopDiskMiB = 1024

// roomFor refuses to run a desktop the host has no memory for.
func (m *Manager) roomFor(memMiB, diskMiB int) error {
	if m.cfg.Capacity == nil {
		return nil
	}
	return m.cfg.Capacity.Check(memMiB, diskMiB)
}

// roomToSave refuses to hibernate a desktop whose RAM would not fit on disk.
func (m *Manager) roomToSave(memMiB int) error {
	if m.cfg.Capacity == nil {
		return nil
	}
	return m.cfg.Capacity.CheckSave(memMiB)
}

// Quota returns an owner's limits (its own, or the default plan's) and
// what it uses now.
func (m *Manager) Quota(ctx context.Context, owner string) (desktop.Quota, desktop.Usage, error) {
	q, err := m.store.GetQuota(ctx, owner)
	if errors.Is(err, desktop.ErrNotFound) {
		plan, ok := desktop.Plans[m.cfg.DefaultPlan]
		if !ok {
			plan = desktop.Plans["free"]
		}
		plan.Owner = owner
		q, err = &plan, nil
	}
	if err != nil {
		return desktop.Quota{}, desktop.Usage{}, err
	}
	u, err := m.store.Usage(ctx, owner)
	return *q, u, err
}

// CheckQuota refuses what would take owner past its quota: add is what the
// request adds to its current usage.
func (m *Manager) CheckQuota(ctx context.Context, owner string, add desktop.Usage) error {
	q, u, err := m.Quota(ctx, owner)
	if err != nil {
		return err
	}
	return q.Check(u.Plus(add))
}

// SetQuota sets an owner's plan or custom limits.
func (m *Manager) SetQuota(ctx context.Context, q desktop.Quota, actor string) (*desktop.Quota, error) {
	// A plan named without limits of its own gets the plan's.
	if base, ok := desktop.Plans[q.Plan]; ok && q == (desktop.Quota{Owner: q.Owner, Plan: q.Plan}) {
		base.Owner = q.Owner
		q = base
	}
	if err := desktop.ValidateQuota(q); err != nil {
		return nil, err
	}
	if err := m.store.PutQuota(ctx, &q); err != nil {
		return nil, err
	}
	m.log.Info("quota set", "owner", q.Owner, "plan", q.Plan, "actor", actor, "at", time.Now().UTC())
	return &q, nil
}

// outOfSpace says whether err is a write that failed for lack of disk
// space (the OS's ENOSPC, or SQLite's "database or disk is full").
func outOfSpace(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No space left on device") || strings.Contains(s, "disk is full")
}

// diskFull marks an error that says the host's disk is full as a capacity
// error (507) rather than an internal one; others pass unchanged.
func diskFull(err error) error {
	if err != nil && outOfSpace(err) && !errors.Is(err, desktop.ErrCapacity) {
		return fmt.Errorf("%w: %w", desktop.ErrCapacity, err)
	}
	return err
}
