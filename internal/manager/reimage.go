package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Reimage replaces a desktop's OS disk with a fresh overlay of image and
// keeps its data disk (diskMaker.Reimage).
func (m *Manager) Reimage(ctx context.Context, id, image, actor string) (*desktop.Desktop, error) {
	return m.diskMaker.Reimage(ctx, id, image, actor)
}

// ResizeDataDisk grows a desktop's data disk (diskMaker.ResizeDataDisk).
func (m *Manager) ResizeDataDisk(ctx context.Context, id string, req ResizeRequest) (*desktop.Desktop, error) {
	return m.diskMaker.ResizeDataDisk(ctx, id, req)
}

// Reimage replaces a desktop's OS disk with a fresh overlay of image (the
// same or a newer one) and keeps its data disk, the user's /home. A running
// desktop is shut down first and started again after. Snapshots that hold
// the old OS disk are deleted; data-only snapshots stay.
func (dm *diskMaker) Reimage(ctx context.Context, id, image, actor string) (*desktop.Desktop, error) {
	d, err := dm.ops.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if image == "" {
		image = d.Image
	}
	img, err := dm.store.GetImage(ctx, image)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, &desktop.ValidationError{Field: "image", Message: fmt.Sprintf("no image %q is registered", image)}
	}
	if err != nil {
		return nil, err
	}
	wasRunning := d.State == desktop.StateRunning
	desired := desktop.StateStopped
	if wasRunning {
		desired = desktop.StateRunning
	}
	d, err = dm.ops.begin(ctx, id, desktop.OpReimage, desired, actor)
	if err != nil {
		return nil, err
	}
	cp := *d
	dm.ops.background(id, func(ctx context.Context) { dm.reimage(ctx, &cp, img, wasRunning, actor) })
	return d, nil
}

func (dm *diskMaker) reimage(ctx context.Context, d *desktop.Desktop, img *desktop.Image, wasRunning bool, actor string) {
	begun := time.Now()
	name := d.DomainName()
	vm := dm.defs.VMConfig(d, "")
	err := func() error {
		if _, err := dm.power.powerOff(ctx, name, StopOptions{Timeout: dm.stopTimeout}); err != nil {
			return err
		}
		snaps, err := dm.store.ListSnapshots(ctx, d.ID)
		if err != nil {
			return err
		}
		for _, sn := range snaps {
			if sn.Scope == desktop.ScopeData {
				continue
			}
			if err := dm.snaps.drop(ctx, d, sn); err != nil {
				return fmt.Errorf("snapshot %q holds the old OS disk and could not be deleted: %w", sn.Name, err)
			}
			if err := dm.store.DeleteSnapshot(ctx, sn.ID); err != nil {
				return err
			}
		}
		// A new instance id makes cloud-init set the system up again on the
		// fresh disk; the data disk is only formatted when it has no
		// filesystem, so /home is kept.
		seed := Seed{DesktopID: d.ID, InstanceID: d.ID + "-" + newID(), Hostname: d.Name, InstallDesktop: img.RecipeHash == "",
			KeyboardLayout: d.KeyboardLayout}
		// Bureau's own host swaps a complete new disk in; a remote host's
		// pool cannot rename, and gets the image and seed sent first.
		replace := dm.replaceOSDisk
		if d.Remote() {
			replace = dm.replaceOSDiskThere
		}
		if err := replace(ctx, d, vm, img, seed); err != nil {
			return err
		}
		d.Image = img.Name
		if wasRunning {
			return dm.vms.Start(ctx, name)
		}
		return nil
	}()
	dm.ops.observe("reimage", begun, err)
	if err != nil {
		dm.ops.fail(ctx, d, "reimage", err)
		return
	}
	left := desktop.StateStopped // what the reimage leaves its VM
	if wasRunning {
		left = desktop.StateRunning
	}
	dm.ops.end(ctx, d, desktop.OpReimage, true, left, "")
	dm.ops.event(ctx, d.ID, "reimaged", actor, "OS disk replaced with a fresh copy of %s in %s; data disk kept", img.Name,
		time.Since(begun).Round(time.Millisecond))
}

// replaceOSDisk gives a desktop on this host a fresh OS disk over img and
// its seed. The new disk is complete before it replaces the old one, so a
// failure or crash leaves one or the other, never half of either.
func (dm *diskMaker) replaceOSDisk(ctx context.Context, _ *desktop.Desktop, vm desktop.VMConfig, img *desktop.Image, seed Seed) error {
	fresh := vm.OSDisk + ".new"
	dm.local.Remove(ctx, fresh)
	if err := dm.disks.CreateOverlay(ctx, img.Path, fresh, dm.osDiskGiB); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	if err := dm.seeds.WriteSeed(ctx, vm.SeedISO, seed); err != nil {
		dm.local.Remove(ctx, fresh)
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	if err := dm.local.Rename(ctx, fresh, vm.OSDisk); err != nil {
		dm.local.Remove(ctx, fresh)
		return fmt.Errorf("replace OS disk: %w", err)
	}
	return nil
}

// replaceOSDiskThere does what replaceOSDisk does for a desktop on a
// remote host, through its storage pools: img is copied there first when
// it is not (its progress in the desktop's step). A pool has no rename, so
// the old disk is removed and the new one made in its place; an overlay
// is made at once, but should that fail the desktop is left in error
// without an OS disk, its data disk untouched, and a reimage again makes
// one.
func (dm *diskMaker) replaceOSDiskThere(ctx context.Context, d *desktop.Desktop, vm desktop.VMConfig, img *desktop.Image, seed Seed) error {
	there, err := dm.hosts.filesOf(ctx, d)
	if err != nil {
		return err
	}
	files := there.Files
	if err := dm.hosts.imageOn(ctx, files, d, d.Host, img.Path, func(step string) string { return step }); err != nil {
		return err
	}
	uid, gid := d.VMUID, vm.GID
	if err := dm.hosts.uploadSeed(ctx, files, vm.SeedISO, seed, uid, gid); err != nil {
		return err
	}
	if err := files.Remove(ctx, vm.OSDisk); err != nil {
		return fmt.Errorf("remove the old OS disk on host %s: %w", d.Host, err)
	}
	if err := files.CreateOverlay(ctx, img.Path, vm.OSDisk, dm.osDiskGiB, uid, gid); err != nil {
		return fmt.Errorf("OS disk on host %s: %w", d.Host, err)
	}
	return nil
}

// ResizeRequest asks for a bigger data disk.
type ResizeRequest struct {
	SizeGiB int
	Actor   string
	// Unlimited skips the owner's quota (admins).
	Unlimited bool
}

// ResizeDataDisk grows a desktop's data disk to req.SizeGiB. A running
// desktop's disk grows live and its filesystem is grown inside the guest; a
// stopped one's file grows now and the guest grows the filesystem at its
// next boot. The new size is recorded, against the owner's disk quota,
// before the disk grows.
func (dm *diskMaker) ResizeDataDisk(ctx context.Context, id string, req ResizeRequest) (*desktop.Desktop, error) {
	sizeGiB, actor := req.SizeGiB, req.Actor
	spec := desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: sizeGiB}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := dm.ops.detach(ctx)
	defer cancel()
	if err := dm.ops.lock(id, "resize"); err != nil {
		return nil, err
	}
	defer dm.ops.unlock(id)
	d, err := dm.ops.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if sizeGiB < d.DataDiskGiB {
		return nil, &desktop.ValidationError{Field: "size_gib", Message: fmt.Sprintf("shrinking is refused: the data disk is %d GiB", d.DataDiskGiB)}
	}
	if sizeGiB == d.DataDiskGiB {
		return d, nil
	}
	if d.State != desktop.StateRunning && d.State != desktop.StateStopped {
		return nil, &desktop.TransitionError{Op: "resize", State: d.State}
	}
	if err := dm.quota.reserveDataDisk(ctx, d, sizeGiB, req.Unlimited); err != nil {
		return nil, err
	}
	if err := dm.growDataDisk(ctx, d, sizeGiB); err != nil {
		// d still holds the old size: the space reserved is given back.
		dm.ops.save(ctx, d)
		return nil, err
	}
	old := d.DataDiskGiB
	d.DataDiskGiB = sizeGiB
	dm.ops.save(ctx, d)
	dm.ops.event(ctx, id, "data_disk_resized", actor, "data disk grown from %d to %d GiB", old, sizeGiB)
	return d, nil
}

// growDataDisk grows a running (live) or stopped desktop's data disk.
func (dm *diskMaker) growDataDisk(ctx context.Context, d *desktop.Desktop, sizeGiB int) error {
	if d.State == desktop.StateStopped {
		disks, err := dm.hosts.stoppedDisks(ctx, d)
		if err != nil {
			return err
		}
		if err := disks.Resize(ctx, d.DataDiskPath, sizeGiB); err != nil {
			return fmt.Errorf("resize data disk: %w", diskFull(err))
		}
		return nil
	}
	if err := dm.vms.ResizeDisk(ctx, d.DomainName(), d.DataDiskPath, int64(sizeGiB)<<30); err != nil {
		return fmt.Errorf("resize data disk: %w", diskFull(err))
	}
	res, err := dm.vms.GuestExec(ctx, d.DomainName(), desktop.Exec{Argv: []string{"/bin/sh", "-c", growHome}})
	if err != nil || res.ExitCode != 0 {
		// The disk is bigger; the filesystem follows at the next boot.
		dm.log.Warn("growing /home in the guest failed; it grows at the next boot", "desktop", d.ID, "err", err)
	}
	return nil
}

// growHome grows the data disk's partition and ext4 filesystem to the disk
// (the seed's bootcmd does the same with growpart at every boot).
const growHome = growHomeFn + `grow_home`

// growHomeFn defines grow_home: bureau's data disks have one DOS partition,
// which sfdisk moves to the disk's end and the kernel is told of in two
// programs (growpart, a script, takes ~1.2 s under emulation; it is the
// fallback for any other layout).
const growHomeFn = `grow_home() {
	read -r total < /sys/block/vdb/size && read -r start < /sys/block/vdb/vdb1/start && read -r cur < /sys/block/vdb/vdb1/size || return 1
	want=$((total - start))
	if [ "$cur" -lt "$want" ]; then
		{ echo "$start,$want" | sfdisk -q -N 1 --no-reread --no-tell-kernel /dev/vdb && resizepart /dev/vdb 1 "$want"; } || growpart /dev/vdb 1 || return 1
	fi
	resize2fs /dev/vdb1
}
`
