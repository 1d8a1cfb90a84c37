package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Mover moves running VMs between hosts with their disks (the
// hypervisor's live migration).
type Mover interface {
	// Migrate moves VM name, running, to dest; it reports progress and,
	// when ctx ends first, cancels, leaving the VM running where it was.
	Migrate(ctx context.Context, name string, dest Destination, progress func(MoveProgress)) (*MoveResult, error)
	// DiskSizes is each disk's virtual size in bytes, by target (vda, vdb).
	DiskSizes(ctx context.Context, name string) (map[string]int64, error)
	// BounceLink takes VM name's NIC down and up again: the guest then
	// asks DHCP for its address anew (its new host's).
	BounceLink(ctx context.Context, name string) error
}

// Destination is where a VM moves to.
type Destination struct {
	Host string
	// Address is the host's address the migration stream connects to.
	Address string
	// Tap is the NIC's device name there.
	Tap string
}

// MoveProgress is a migration under way.
type MoveProgress struct {
	// Phase: "disks" while the disks are mirrored, then "memory".
	Phase string
	// Percent of the data to send that was sent.
	Percent int
	// Iteration is the memory pass (RAM the guest dirtied is sent again).
	Iteration uint64
}

// MoveResult is a finished migration.
type MoveResult struct {
	Took, Downtime time.Duration
	Bytes          uint64
}

// Migrate moves a desktop to another host in the background. A running
// one moves live with its disks: its files are made there, its network (a
// new address on that host's subnet, its firewall rules, DHCP) is readied,
// its memory and disks are copied while it runs, and it continues there.
// One that does not run, or runs with snapshots, moves cold (coldmove.go).
// Its files and rules on the old host go. CancelMigration stops it (the
// desktop stays as it was where it was).
func (mv *Moves) Migrate(ctx context.Context, id, to, actor string) (*desktop.Desktop, error) {
	d, err := mv.ops.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if mv.live == nil {
		return nil, &desktop.ConflictError{Message: "this bureau does not move desktops between hosts"}
	}
	if to == "" {
		return nil, &desktop.ValidationError{Field: "host", Message: "name the host to move the desktop to (see GET /api/v1/hosts)"}
	}
	if to == d.Host {
		return nil, &desktop.ValidationError{Field: "host", Message: fmt.Sprintf("desktop %s is already on host %s", d.Name, to)}
	}
	if _, err := desktop.Begin(desktop.OpMigrate, d.State); err != nil {
		return nil, err
	}
	snaps, err := mv.store.ListSnapshots(ctx, id)
	if err != nil {
		return nil, err
	}
	was, cold := d.State, coldReason(d.State, len(snaps))
	if cold != "" && mv.cold == nil {
		return nil, &desktop.ConflictError{Message: fmt.Sprintf("desktop %s is %s: this bureau moves running desktops without snapshots only", d.Name, cold)}
	}
	dest, err := mv.destination(ctx, d, to, cold == "")
	if err != nil {
		return nil, err
	}
	img, err := mv.store.GetImage(ctx, d.Image)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", d.Image, err)
	}
	if err := mv.hosts.sameBase(ctx, d, img.Path); err != nil {
		return nil, err
	}
	desired := was
	if was.Frozen() {
		desired = desktop.StateHibernated
	}
	d, err = mv.ops.begin(ctx, id, desktop.OpMigrate, desired, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	mv.ops.background(id, func(ctx context.Context) {
		defer mv.endMove(ctx, id)
		if cold != "" {
			mv.coldMove(ctx, &cp, dest, was, cold, actor)
		} else {
			mv.migrate(ctx, &cp, dest, actor)
		}
	})
	return d, nil
}

// reserveMove counts d, running before its move (was), on the host it
// moves to (d's memory held there from now on), if that host has room for
// it with what its desktops take at this moment: destination's check,
// made again under that host's lock in the store, so moves and creates
// racing for one host never overfill it. A desktop that arrives stopped or
// hibernated holds no memory there and reserves none.
func (mv *Moves) reserveMove(ctx context.Context, d *desktop.Desktop, to string, was desktop.State) error {
	if was != desktop.StateRunning {
		return nil
	}
	there := *d
	there.Host = to
	fits, err := mv.place.fitsOn(ctx, &there, false)
	if err != nil {
		return err
	}
	return mv.store.ReserveMove(ctx, d.ID, to, fits)
}

// endMove ends d's move reservation, whichever way its move ended (a
// finished move's record ended it already).
func (mv *Moves) endMove(ctx context.Context, id string) {
	if err := mv.store.EndMove(context.WithoutCancel(ctx), id); err != nil {
		mv.log.Error("a move's reservation not ended: its memory still counts on the host it was moving to", "desktop", id, "err", err)
	}
}

// CancelMigration stops a desktop's migration under way; the desktop
// keeps running where it was.
func (mv *Moves) CancelMigration(ctx context.Context, id, actor string) error {
	if _, err := mv.ops.live(ctx, id); err != nil {
		return err
	}
	cancel := mv.ops.cancellable(id, string(desktop.OpMigrate))
	if cancel == nil {
		return &desktop.ConflictError{Message: "the desktop is not migrating"}
	}
	mv.ops.event(ctx, id, "migrate_cancel_requested", actor, "migration cancel requested")
	cancel()
	return nil
}

// destination checks that d may move to host to and says how it is
// reached there: a live move needs the host's address for the migration
// stream, and memory there for the desktop.
func (mv *Moves) destination(ctx context.Context, d *desktop.Desktop, to string, live bool) (Destination, error) {
	dest := Destination{Host: to, Tap: desktop.TapNameOn(d.ID, to)}
	if to == desktop.LocalHost {
		if live && mv.hostAddress == "" {
			return dest, &desktop.ConflictError{Message: "this host's address for migrations is not set (BUREAU_HOST_ADDRESS)"}
		}
		dest.Address = mv.hostAddress
	} else {
		s, err := mv.hosts.named(ctx, to)
		if err != nil {
			return dest, err
		}
		if live && s.Address == "" {
			return dest, &desktop.ConflictError{Message: fmt.Sprintf("host %s has no address for migrations", to)}
		}
		dest.Address = s.Address
	}
	if d.State != desktop.StateRunning {
		return dest, nil // it holds no memory there until it wakes
	}
	there := *d
	there.Host = to
	if err := mv.room.roomOn(ctx, &there, d.MemoryMiB); err != nil {
		return dest, err
	}
	return dest, nil
}

// migrate moves d to dest; the caller holds d.
func (mv *Moves) migrate(ctx context.Context, d *desktop.Desktop, dest Destination, actor string) {
	begun := time.Now()
	from := *d
	there := *d
	there.Host = dest.Host
	var undo reverter
	// Steps are recorded even once a cancel ended ctx.
	steps := context.WithoutCancel(ctx)
	res, err := func() (*MoveResult, error) {
		if err := mv.reserveMove(ctx, d, dest.Host, desktop.StateRunning); err != nil {
			return nil, err
		}
		if err := mv.filesThere(ctx, d, &there, &undo); err != nil {
			return nil, err
		}
		if err := mv.networkThere(ctx, d, &there, &undo); err != nil {
			return nil, err
		}
		mv.ops.step(steps, d, migrateStep(dest.Host, "copying"))
		last := time.Time{}
		return mv.live.Migrate(ctx, d.DomainName(), dest, func(p MoveProgress) {
			if time.Since(last) > time.Second {
				last = time.Now()
				mv.ops.step(steps, d, migrateStep(dest.Host, fmt.Sprintf("%s %d%%", p.Phase, p.Percent)))
			}
		})
	}()
	mv.ops.observe("migrate", begun, err)
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		undo.run(cleanup)
		why := err.Error()
		if errors.Is(err, context.Canceled) {
			why = "cancelled"
		}
		// Still running where it was.
		mv.ops.end(cleanup, d, desktop.OpMigrate, false, desktop.StateRunning, "migrate failed: "+why)
		mv.ops.event(cleanup, d.ID, "migrate_failed", "bureau", "migration to host %s failed after %s, still running on host %s: %s",
			dest.Host, time.Since(begun).Round(time.Millisecond), from.Host, why)
		return
	}
	// It moved, even if a cancel came too late to stop it: recorded in full.
	after, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	mv.moved(after, d, &from, &there, res, actor)
}

// moved records d running on its new host (there), gives it its address
// there, and removes what it had on its old one (from).
func (mv *Moves) moved(ctx context.Context, d, from, there *desktop.Desktop, res *MoveResult, actor string) {
	mv.recordMove(ctx, d, there, false)
	if err := mv.live.BounceLink(ctx, d.DomainName()); err != nil {
		mv.log.Warn("a migrated desktop's NIC not bounced: it keeps its old address until its DHCP lease ends", "desktop", d.ID, "err", err)
	}
	mv.leaveHost(ctx, from)
	mv.ops.end(ctx, d, desktop.OpMigrate, true, desktop.StateRunning, "")
	if res == nil {
		mv.ops.event(ctx, d.ID, "migrated", actor, "moved live from host %s to host %s, finished after a bureau restart; address now %s", from.Host, there.Host, there.NetIP)
		return
	}
	mv.ops.event(ctx, d.ID, "migrated", actor, "moved live from host %s to host %s in %s (downtime %s, %d MiB sent); address now %s",
		from.Host, there.Host, res.Took.Round(time.Millisecond), res.Downtime.Round(time.Millisecond), res.Bytes>>20, there.NetIP)
}

// recordMove records d on its new host (there) with its address there
// (renew: its guest asks for it after its next wake), tells the routing,
// and reloads d.
func (mv *Moves) recordMove(ctx context.Context, d, there *desktop.Desktop, renew bool) {
	if err := mv.store.MoveDesktop(ctx, d.ID, there.Host, there.NetIP, renew); err != nil {
		mv.log.Error("a moved desktop's new host not recorded", "desktop", d.ID, "host", there.Host, "err", err)
	}
	if mv.onMoved != nil {
		mv.onMoved(d.ID, there.Host)
	}
	if cur, err := mv.store.GetDesktop(ctx, d.ID); err == nil {
		*d = *cur
	} else {
		d.Host, d.NetIP = there.Host, there.NetIP
	}
}

// leaveHost removes a moved desktop's address, rules and files from its
// old host (from).
func (mv *Moves) leaveHost(ctx context.Context, from *desktop.Desktop) {
	mv.net.dropAddressAndRules(ctx, from)
	if err := mv.removeFilesOn(ctx, from); err != nil {
		mv.log.Error("a moved desktop's files on its old host not removed", "desktop", from.ID, "host", from.Host, "err", err)
	}
}

// migrateStep is a migration's step, naming where it goes: "to two:
// memory 40%". A restart that cuts the migration short reads the host
// back from it (migratingTo).
func migrateStep(to, step string) string { return "to " + to + ": " + step }

// migratingTo is the host a migration's step names ("" for none).
func migratingTo(step string) string {
	rest, ok := strings.CutPrefix(step, "to ")
	if !ok {
		return ""
	}
	host, _, ok := strings.Cut(rest, ": ")
	if !ok {
		return ""
	}
	return host
}

// resumeMigrate settles a desktop whose move a restart cut short (a live
// migration died with bureau's connections; a cold one stopped between
// two steps): where its VM is now, with what it has on the other host
// removed. The caller holds d.
func (mv *Moves) resumeMigrate(ctx context.Context, d *desktop.Desktop) {
	defer mv.ops.unlock(d.ID)
	defer mv.endMove(ctx, d.ID)
	to, from := migratingTo(d.Step), *d
	there := *d
	there.Host = to
	st, err := mv.vms.State(ctx, d.DomainName())
	if to == "" || err != nil || st != desktop.VMMissing {
		if to != "" {
			if mv.cold != nil {
				if err := mv.cold.UndefineOn(ctx, d.DomainName(), to); err != nil {
					mv.log.Error("definition of an interrupted move not removed", "desktop", d.ID, "host", to, "err", err)
				}
			}
			mv.net.dropAddressAndRules(ctx, &there)
			if err := mv.removeFilesOn(ctx, &there); err != nil {
				mv.log.Error("files of an interrupted migration not removed", "desktop", d.ID, "host", to, "err", err)
			}
		}
		mv.ops.end(ctx, d, desktop.OpMigrate, false, observedAs(st), fmt.Sprintf("migrate to host %s was interrupted by a bureau restart; the desktop stayed on host %s", to, d.Host))
		mv.ops.event(ctx, d.ID, "migrate_failed", "bureau", "%s", d.LastError)
		return
	}
	// Gone from its host: the move finished before bureau could record
	// it, and the VM is on the destination.
	if mv.onMoved != nil {
		mv.onMoved(d.ID, to)
	}
	var undo reverter
	err = mv.networkThere(ctx, d, &there, &undo)
	st, serr := mv.vms.State(ctx, d.DomainName())
	if err == nil && serr == nil && (st == desktop.VMSaved || st == desktop.VMShutoff) {
		// A cold move: left as it is there (one running before the move
		// stays hibernated until woken).
		mv.coldMoved(ctx, d, &from, &there, observedAs(st), fmt.Sprintf("moved cold from host %s to host %s, finished after a bureau restart", from.Host, to), "bureau")
		return
	}
	if err != nil || serr != nil || st != desktop.VMRunning {
		undo.run(ctx)
		if mv.onMoved != nil {
			mv.onMoved(d.ID, from.Host)
		}
		mv.ops.fail(ctx, d, "migrate", fmt.Errorf("interrupted by a bureau restart, and the VM is neither on host %s nor on host %s (%v %v)", from.Host, to, err, serr))
		return
	}
	mv.moved(ctx, d, &from, &there, nil, "bureau")
}
