package manager

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bureau/bureau/internal/desktop"
)

// filesThere makes d's files on the host it moves to (there.Host) at the
// same paths, as the migration needs them: its OS disk an empty overlay of
// the same base image, its data disk an empty qcow2, both of the sizes
// they have now (the migration fills them), and its cloud-init seed (the
// same instance, so nothing runs again). A data disk already there is
// never replaced: the move is refused.
func (m *Manager) filesThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) error {
	m.ops.step(ctx, d, migrateStep(there.Host, "disks"))
	sizes, err := m.cfg.Mover.DiskSizes(ctx, d.DomainName())
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
	img, err := m.store.GetImage(ctx, d.Image)
	if err != nil {
		return fmt.Errorf("image %s: %w", d.Image, err)
	}
	vm := m.VMConfig(there, "")
	seed := Seed{DesktopID: d.ID, Hostname: d.Name, KeyboardLayout: d.KeyboardLayout}
	uid, gid := d.VMUID, m.cfg.VMGroup
	s, err := m.folderThere(ctx, d, there, undo)
	if err != nil {
		return err
	}
	if s == nil {
		if err := m.disks.CreateDataDisk(ctx, d.DataDiskPath, dataGiB); err != nil {
			return fmt.Errorf("data disk: %w", err)
		}
		if err := m.disks.CreateOverlay(ctx, img.Path, vm.OSDisk, osGiB); err != nil {
			return fmt.Errorf("OS disk: %w", err)
		}
		if err := m.seeds.WriteSeed(ctx, vm.SeedISO, seed); err != nil {
			return fmt.Errorf("cloud-init seed: %w", err)
		}
		for _, path := range []string{d.DataDiskPath, vm.OSDisk, vm.SeedISO} {
			if err := ownFile(path, uid, gid, 0o600); err != nil {
				return err
			}
		}
		return nil
	}
	label := func(step string) string { return migrateStep(there.Host, step) }
	if err := m.imageOn(ctx, s, d, there.Host, img.Path, label); err != nil {
		return err
	}
	if err := s.Files.CreateDataDisk(ctx, d.DataDiskPath, dataGiB, uid, gid); err != nil {
		return fmt.Errorf("data disk: %w", err)
	}
	if err := s.Files.CreateOverlay(ctx, img.Path, vm.OSDisk, osGiB, uid, gid); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	return m.uploadSeed(ctx, s, vm.SeedISO, seed, uid, gid)
}

// folderThere makes d's folder on the host it moves to (there.Host),
// empty of the files a move makes: stale ones (an OS disk, a seed) are
// removed, but a data disk already there is never replaced: the move is
// refused. It returns the host's site, nil for bureau's own host.
func (m *Manager) folderThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) (*Site, error) {
	vm := m.VMConfig(there, "")
	taken := &desktop.ConflictError{Message: fmt.Sprintf("a data disk is already at %s on host %s: it is not replaced", d.DataDiskPath, there.Host)}
	if !there.Remote() {
		if _, err := os.Stat(d.DataDiskPath); err == nil {
			return nil, taken
		}
		if err := os.MkdirAll(d.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("desktop folder: %w", err)
		}
		undo.add(func(context.Context) { os.RemoveAll(d.Dir) })
		// Fresh files only: a live move mirrors the clusters the source
		// holds, so old ones left here would show through.
		os.Remove(vm.OSDisk)
		os.Remove(vm.SeedISO)
		return nil, ownFile(d.Dir, d.VMUID, m.cfg.VMGroup, 0o700)
	}
	s, err := m.site(ctx, there)
	if err != nil {
		return nil, err
	}
	if ok, err := s.Files.Exists(ctx, d.DataDiskPath); err != nil {
		return nil, err
	} else if ok {
		return nil, taken
	}
	if err := s.Files.MakeDir(ctx, d.Dir, d.VMUID, m.cfg.VMGroup); err != nil {
		return nil, fmt.Errorf("desktop folder on host %s: %w", there.Host, err)
	}
	undo.add(func(ctx context.Context) { s.Files.RemoveAllBut(ctx, d.Dir, "") })
	for _, stale := range []string{vm.OSDisk, vm.SeedISO} {
		if err := s.Files.Remove(ctx, stale); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ownFile gives a local file or folder to a desktop's QEMU user.
func ownFile(path string, uid, gid int, mode os.FileMode) error {
	if err := os.Chown(path, uid, gid); err != nil {
		return err
	}
	return os.Chmod(path, mode)
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
func (m *Manager) networkThere(ctx context.Context, d, there *desktop.Desktop, undo *reverter) error {
	m.ops.step(ctx, d, migrateStep(there.Host, "network"))
	subnet, err := m.subnetOf(ctx, there)
	if err != nil {
		return err
	}
	ds, err := m.store.ListDesktops(ctx, desktop.Filter{})
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
	undo.add(func(ctx context.Context) { m.dropAddressAndRules(ctx, there) })
	return m.armNetwork(ctx, there, false)
}

// removeFilesOn removes a moved desktop's files from its old host.
func (m *Manager) removeFilesOn(ctx context.Context, from *desktop.Desktop) error {
	if !from.Remote() {
		return os.RemoveAll(from.Dir)
	}
	s, err := m.site(ctx, from)
	if err != nil {
		return err
	}
	_, err = s.Files.RemoveAllBut(ctx, from.Dir, "")
	return err
}
