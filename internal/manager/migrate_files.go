package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
)

// filesThere makes d's files on the host it moves to (there.Host) at the
// same paths, as the migration needs them: its OS disk an empty overlay of
// the same base image, its data disk an empty qcow2, both of the sizes
// they have now (the migration fills them), and its cloud-init seed (the
// same instance, so nothing runs again). A data disk already there is
// never replaced: the move is refused.
func (mv *Moves) filesThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) error {
	mv.ops.step(ctx, d, migrateStep(there.Host, "disks"))
	sizes, err := mv.live.DiskSizes(ctx, d.DomainName())
	if err != nil {
		return fmt.Errorf("disk sizes: %w", err)
	}
	osGiB, err := wholeGiB(sizes, "vda")
	if err != nil {
		return err
	}
	dataGiB, err := wholeGiB(sizes, "vdb")
	if err != nil {
		return err
	}
	img, err := mv.store.GetImage(ctx, d.Image)
	if err != nil {
		return fmt.Errorf("image %s: %w", d.Image, err)
	}
	vm := mv.defs.VMConfig(there, "")
	seed := Seed{DesktopID: d.ID, Hostname: d.Name, KeyboardLayout: d.KeyboardLayout}
	uid, gid := d.VMUID, vm.GID
	files, err := mv.folderThere(ctx, d, there, undo)
	if err != nil {
		return err
	}
	label := func(step string) string { return migrateStep(there.Host, step) }
	if err := mv.hosts.imageOn(ctx, files, d, there.Host, img.Path, label); err != nil {
		return err
	}
	if err := files.CreateDataDisk(ctx, d.DataDiskPath, dataGiB, uid, gid); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	if err := files.CreateOverlay(ctx, img.Path, vm.OSDisk, osGiB, uid, gid); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	return mv.hosts.uploadSeed(ctx, files, vm.SeedISO, seed, uid, gid)
}

// folderThere makes d's folder on the host it moves to (there.Host),
// owned by its QEMU user and empty of the files a move makes: stale ones
// (an OS disk, a seed) are removed, but a data disk already there is
// never replaced: the move is refused. It returns that host's files.
func (mv *Moves) folderThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) (HostFiles, error) {
	vm := mv.defs.VMConfig(there, "")
	on, err := mv.hosts.filesOf(ctx, there)
	if err != nil {
		return nil, err
	}
	files := on.Files
	if ok, err := files.Exists(ctx, d.DataDiskPath); err != nil {
		return nil, err
	} else if ok {
		return nil, &desktop.ConflictError{Message: fmt.Sprintf("a data disk is already at %s on host %s: it is not replaced", d.DataDiskPath, there.Host)}
	}
	if err := files.MakeDir(ctx, d.Dir, d.VMUID, vm.GID); err != nil {
		return nil, fmt.Errorf("desktop folder on host %s: %w", there.Host, err)
	}
	undo.add(func(ctx context.Context) { files.RemoveAllBut(ctx, d.Dir, "") })
	// Fresh files only: a live move mirrors the clusters the source
	// holds, so old ones left there would show through.
	for _, stale := range []string{vm.OSDisk, vm.SeedISO} {
		if err := files.Remove(ctx, stale); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// wholeGiB is disk dev's size in GiB, which bureau's disks always are.
func wholeGiB(sizes map[string]int64, dev string) (int, error) {
	b, ok := sizes[dev]
	if !ok || b <= 0 || b%(1<<30) != 0 {
		return 0, fmt.Errorf("disk %s is %d bytes, not whole GiB: not a disk bureau made", dev, b)
	}
	return int(b >> 30), nil
}

// networkThere gives the desktop an address on its new host's subnet
// (there.NetIP), reserved in that host's DHCP, with its firewall rules
// there, before it moves.
func (mv *Moves) networkThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) error {
	mv.ops.step(ctx, d, migrateStep(there.Host, "network"))
	subnet, err := mv.net.subnetOf(ctx, there)
	if err != nil {
		return err
	}
	ds, err := mv.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, o := range ds {
		taken[o.NetIP] = true
	}
	ip := ""
	for try := 0; try < 8 && (ip == "" || taken[ip]); try++ {
		ip = netIPOn(subnet)
	}
	if ip == "" || taken[ip] {
		return errors.New("no free address on the new host's subnet")
	}
	there.NetIP = ip
	undo.add(func(ctx context.Context) { mv.net.dropAddressAndRules(ctx, there) })
	return mv.net.armNetwork(ctx, there, false)
}

// removeFilesOn removes a moved desktop's files from its old host.
func (mv *Moves) removeFilesOn(ctx context.Context, from *desktop.Desktop) error {
	files, err := mv.hosts.filesOf(ctx, from)
	if err != nil {
		return err
	}
	_, err = files.Files.RemoveAllBut(ctx, from.Dir, "")
	return err
}
