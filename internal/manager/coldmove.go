package manager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// ColdMover moves a VM that does not run between hosts: its files, then
// its definition with what the hypervisor keeps beside it (its
// hibernation image, its snapshots' metadata). Hosts are named as in the
// store ("local" is bureau's own).
type ColdMover interface {
	// CopyFile copies path on host from to the same path on host to, its
	// holes kept, owned by uid:gid; a file already there is an error, and a
	// copy that fails leaves none.
	CopyFile(ctx context.Context, from, to, path string, uid, gid int, progress func(done, total int64)) error
	// DefineOn defines VM name on host to as it is on host from, its NIC
	// named tap there, with its hibernation image and snapshots' metadata;
	// host from keeps everything.
	DefineOn(ctx context.Context, name, from, to, tap string, progress func(done, total int64)) error
	// UndefineOn removes VM name from host with its hibernation image and
	// snapshots' metadata, never its disks.
	UndefineOn(ctx context.Context, name, host string) error
}

// coldReason says why a desktop moves cold rather than live, "" when it
// moves live: it does not run, or runs with snapshots (libvirt refuses to
// move those live, and a live move would not carry its internal
// snapshots), or is frozen (moved hibernated).
func coldReason(st desktop.State, snapshots int) string {
	switch {
	case st == desktop.StateStopped, st == desktop.StateHibernated:
		return string(st)
	case st.Frozen():
		return string(st) + ", so hibernated first"
	case snapshots > 0:
		return fmt.Sprintf("with %d snapshots, so hibernated first", snapshots)
	}
	return ""
}

// coldMove moves d, which was in state was, to dest with its files: a
// running or frozen desktop is hibernated first; its disks, seed and
// hibernation image are copied, its definition and snapshots are made on
// the new host, then removed from the old one with its files. A running
// desktop is woken there; a hibernated one gets the new host's address
// after its next wake. The caller holds d.
func (mv *Moves) coldMove(ctx context.Context, d *desktop.Desktop, dest Destination, was desktop.State, why, actor string) {
	begun := time.Now()
	from, there := *d, *d
	there.Host = dest.Host
	name := d.DomainName()
	label := func(step string) string { return migrateStep(dest.Host, step) }
	// Steps are recorded even once a cancel ended ctx.
	steps := context.WithoutCancel(ctx)
	now := was // where the desktop is, should the move fail
	var undo reverter
	copied, err := func() (int64, error) {
		if err := mv.reserveMove(ctx, d, dest.Host, was); err != nil {
			return 0, err
		}
		if was == desktop.StateRunning || was.Frozen() {
			mv.ops.step(steps, d, label("hibernating"))
			if err := mv.vms.Hibernate(ctx, name); err != nil {
				return 0, fmt.Errorf("hibernate: %w", err)
			}
			now = desktop.StateHibernated
			if was == desktop.StateRunning {
				undo.add(func(ctx context.Context) {
					if err := mv.vms.Start(ctx, name); err == nil {
						now = desktop.StateRunning
					}
				})
			}
		}
		copied, err := mv.copyFilesThere(ctx, d, &there, &undo)
		if err != nil {
			return 0, err
		}
		mv.ops.step(steps, d, label("definition"))
		if err := mv.cold.DefineOn(ctx, name, from.Host, there.Host, dest.Tap, mv.copyProgress(steps, d, label, "memory")); err != nil {
			return 0, fmt.Errorf("define on host %s: %w", there.Host, err)
		}
		undo.add(func(ctx context.Context) { mv.cold.UndefineOn(ctx, name, there.Host) })
		if err := mv.networkThere(ctx, d, &there, &undo); err != nil {
			return 0, err
		}
		// The point of no return: the old host forgets the VM.
		if err := mv.cold.UndefineOn(ctx, name, from.Host); err != nil {
			return 0, fmt.Errorf("remove from host %s: %w", from.Host, err)
		}
		return copied, nil
	}()
	mv.ops.observe("migrate_cold", begun, err)
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		undo.run(cleanup)
		reason := err.Error()
		if errors.Is(err, context.Canceled) {
			reason = "cancelled"
		}
		mv.ops.end(cleanup, d, desktop.OpMigrate, false, now, "migrate failed: "+reason)
		mv.ops.event(cleanup, d.ID, "migrate_failed", "bureau", "move to host %s failed after %s, %s on host %s: %s",
			dest.Host, time.Since(begun).Round(time.Millisecond), now, from.Host, reason)
		return
	}
	after, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	mv.coldMoved(after, d, &from, &there, was, fmt.Sprintf("moved cold (%s) from host %s to host %s in %s (%d MiB copied)",
		why, from.Host, there.Host, time.Since(begun).Round(time.Millisecond), copied>>20), actor)
}

// copyFilesThere copies d's disks and seed to the host it moves to
// (there.Host), the base image of its OS disk first when that host lacks
// it, and says how many bytes it copied.
func (mv *Moves) copyFilesThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) (int64, error) {
	steps := context.WithoutCancel(ctx)
	label := func(step string) string { return migrateStep(there.Host, step) }
	mv.ops.step(steps, d, label("disks"))
	files, err := mv.folderThere(ctx, d, there, undo)
	if err != nil {
		return 0, err
	}
	img, err := mv.store.GetImage(ctx, d.Image)
	if err != nil {
		return 0, fmt.Errorf("image %s: %w", d.Image, err)
	}
	if err := mv.hosts.imageOn(ctx, files, d, there.Host, img.Path, label); err != nil {
		return 0, err
	}
	vm := mv.defs.VMConfig(there, "")
	var copied int64
	for _, path := range []string{vm.OSDisk, d.DataDiskPath, vm.SeedISO} {
		var size int64
		progress := mv.copyProgress(steps, d, label, filepath.Base(path))
		err := mv.cold.CopyFile(ctx, d.Host, there.Host, path, d.VMUID, vm.GID, func(done, total int64) {
			size = total
			progress(done, total)
		})
		if err != nil {
			return copied, fmt.Errorf("copy %s to host %s: %w", filepath.Base(path), there.Host, err)
		}
		copied += size
	}
	return copied, nil
}

// copyProgress records a copy's progress as d's step ("to two: data.qcow2
// 40%") at most once a second.
func (mv *Moves) copyProgress(ctx context.Context, d *desktop.Desktop, label func(string) string, what string) func(done, total int64) {
	last := time.Time{}
	return func(done, total int64) {
		if total > 0 && time.Since(last) > time.Second {
			last = time.Now()
			mv.ops.step(ctx, d, label(fmt.Sprintf("%s %d%%", what, done*100/total)))
		}
	}
}

// coldMoved records d on its new host (there) after a cold move, wakes it
// there if it was running, and removes its address, rules and files from
// its old host (from).
func (mv *Moves) coldMoved(ctx context.Context, d, from, there *desktop.Desktop, was desktop.State, what, actor string) {
	final := was
	if was.Frozen() {
		final = desktop.StateHibernated
	}
	mv.recordMove(ctx, d, there, final == desktop.StateHibernated)
	mv.leaveHost(ctx, from)
	if final == desktop.StateRunning {
		// The move is over before the wake: a restart now must not take
		// it for a move cut short (that would undo it on the host it is
		// now on), so no operation is recorded while it wakes.
		d.Operation, d.LastError = "", ""
		mv.ops.step(ctx, d, migrateStep(there.Host, "restore"))
		if err := mv.vms.Start(ctx, d.DomainName()); err != nil {
			mv.ops.event(ctx, d.ID, "migrated", actor, "%s; address now %s", what, there.NetIP)
			mv.ops.end(ctx, d, desktop.OpMigrate, false, "", fmt.Sprintf("wake after the move failed: %v", err))
			mv.ops.event(ctx, d.ID, "wake after the move_failed", "bureau", "%s", d.LastError)
			return
		}
		mv.renewAddress(ctx, d)
		mv.clock.syncClock(d)
	}
	mv.ops.end(ctx, d, desktop.OpMigrate, true, final, "")
	mv.ops.event(ctx, d.ID, "migrated", actor, "%s; address now %s", what, there.NetIP)
}

// renewAddress makes a woken desktop's guest ask its host's DHCP for its
// address: its NIC goes down and up.
func (mv *Moves) renewAddress(ctx context.Context, d *desktop.Desktop) {
	if mv.live == nil {
		return
	}
	if err := mv.live.BounceLink(ctx, d.DomainName()); err != nil {
		mv.log.Warn("a moved desktop's NIC not bounced: it keeps its old address until its DHCP lease ends", "desktop", d.ID, "err", err)
		return
	}
	if d.RenewAddress {
		if err := mv.store.RenewedAddress(ctx, d.ID); err != nil {
			mv.log.Warn("a moved desktop's renewed address not recorded", "desktop", d.ID, "err", err)
		}
		d.RenewAddress = false
	}
}

// movedSince says whether desktop id moved to another host after t (its
// events say so).
func (mv *Moves) movedSince(ctx context.Context, id string, t time.Time) bool {
	evs, err := mv.store.ListEvents(ctx, id, 200)
	if err != nil {
		return false
	}
	for _, e := range evs {
		if e.Type == "migrated" && e.CreatedAt.After(t) {
			return true
		}
	}
	return false
}
