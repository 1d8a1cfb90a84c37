package manager

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Site is what desktops on one remote host use there: its desktop
// network's subnet, firewall and DHCP, its files (through libvirt's
// storage pools) and consoles (through SSH).
type Site struct {
	// Accelerator is what desktops there run under (the host's: KVM
	// where its CPU has hardware virtualization).
	Accelerator desktop.Accelerator
	Subnet      netip.Prefix
	Firewall    Firewall
	Addresses   Addresses
	Files       HostFiles
	// Disks works on the files of its desktops whose VMs are off.
	Disks StoppedDisks
	// Sizes measures its desktops' files (what their snapshots take).
	Sizes FileSizes
	// Display dials a desktop's VNC socket on the host; the host checks
	// that the desktop's own QEMU user (uid) serves it.
	Display func(ctx context.Context, path string, uid int) (net.Conn, error)
	// Address is the host's address migration streams connect to.
	Address string
}

// Sites finds remote hosts ready for desktops.
type Sites interface {
	// Site fails when host is not one of bureau's hosts, is unreachable or
	// is not ready for desktops (the error says why).
	Site(ctx context.Context, host string) (*Site, error)
}

// HostFiles makes and removes a desktop's files on a remote host. Paths
// are the same as they would be on bureau's own host.
type HostFiles interface {
	// EnsureImage copies the base image at path to the same path on the
	// host unless a complete copy is there, reporting progress.
	EnsureImage(ctx context.Context, path string, progress func(done, total int64)) error
	// MakeDir makes a desktop's folder, owned by its QEMU user.
	MakeDir(ctx context.Context, dir string, uid, gid int) error
	// Exists says whether a file is there.
	Exists(ctx context.Context, path string) (bool, error)
	// CreateOverlay makes path a qcow2 over base (at least sizeGiB), and
	// CreateDataDisk an empty qcow2 of sizeGiB, both owned by uid:gid,
	// 0600; neither replaces an existing file.
	CreateOverlay(ctx context.Context, base, path string, sizeGiB, uid, gid int) error
	CreateDataDisk(ctx context.Context, path string, sizeGiB, uid, gid int) error
	// Upload copies a local file to path on the host, owned by uid:gid.
	Upload(ctx context.Context, local, path string, uid, gid int) error
	// Remove removes one file (none there is fine).
	Remove(ctx context.Context, path string) error
	// RemoveAllBut removes everything in dir but keep ("" for nothing),
	// and dir itself when nothing is kept; it says whether keep was there.
	RemoveAllBut(ctx context.Context, dir, keep string) (kept bool, err error)
}

// site is the remote site of d's host.
func (m *Manager) site(ctx context.Context, d *desktop.Desktop) (*Site, error) {
	if m.cfg.Sites == nil {
		return nil, fmt.Errorf("desktop %s is on host %s: %w", d.Name, d.Host, desktop.ErrHostGone)
	}
	return m.cfg.Sites.Site(ctx, d.Host)
}

// localOnly refuses an operation bureau does not do yet on remote hosts.
func localOnly(d *desktop.Desktop, what string) error {
	if !d.Remote() {
		return nil
	}
	return &desktop.ConflictError{Message: fmt.Sprintf("desktop %s runs on host %s: %s is %s", d.Name, d.Host, what, desktop.ErrNotOnRemoteHost)}
}

// buildRemote makes a new desktop's files on its remote host through
// that host's storage pools (its base image copied there first when it
// is not), then defines and starts its VM there.
func (m *Manager) buildRemote(ctx context.Context, d *desktop.Desktop, basePath string, seed Seed, undo *reverter) error {
	s, err := m.site(ctx, d)
	if err != nil {
		return err
	}
	m.ops.step(ctx, d, "image")
	if err := m.imageOn(ctx, s, d, d.Host, basePath, func(step string) string { return step }); err != nil {
		return err
	}
	m.ops.step(ctx, d, "disks")
	uid, gid := d.VMUID, m.cfg.VMGroup
	if err := s.Files.MakeDir(ctx, d.Dir, uid, gid); err != nil {
		return fmt.Errorf("desktop folder on host %s: %w", d.Host, err)
	}
	if ok, err := s.Files.Exists(ctx, d.DataDiskPath); err != nil {
		return err
	} else if !ok {
		if err := s.Files.CreateDataDisk(ctx, d.DataDiskPath, d.DataDiskGiB, uid, gid); err != nil {
			return fmt.Errorf("data disk: %w", err)
		}
		undo.add(func(ctx context.Context) { s.Files.Remove(ctx, d.DataDiskPath) })
	}
	vm := m.VMConfig(d, newUUID())
	if err := s.Files.CreateOverlay(ctx, basePath, vm.OSDisk, m.cfg.OSDiskGiB, uid, gid); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	undo.add(func(ctx context.Context) { s.Files.Remove(ctx, vm.OSDisk) })
	if err := m.uploadSeed(ctx, s, vm.SeedISO, seed, uid, gid); err != nil {
		return err
	}
	undo.add(func(ctx context.Context) { s.Files.Remove(ctx, vm.SeedISO) })
	m.ops.step(ctx, d, "define")
	if err := m.hv.Define(ctx, vm); err != nil {
		return err
	}
	undo.add(func(ctx context.Context) { m.hv.Undefine(ctx, vm.Name) })
	m.ops.step(ctx, d, "start")
	if err := m.hv.Start(ctx, vm.Name); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return nil
}

// imageOn copies the base image at path to host (site s) unless a
// complete copy is there, showing its progress as d's step ("image 40%",
// as label words it).
func (m *Manager) imageOn(ctx context.Context, s *Site, d *desktop.Desktop, host, path string, label func(step string) string) error {
	last := time.Time{}
	err := s.Files.EnsureImage(ctx, path, func(done, total int64) {
		if total > 0 && (time.Since(last) > time.Second || done == total) {
			last = time.Now()
			m.ops.step(ctx, d, label(fmt.Sprintf("image %d%%", done*100/total)))
		}
	})
	if err != nil {
		return fmt.Errorf("base image on host %s: %w", host, err)
	}
	return nil
}

// uploadSeed writes the cloud-init seed here and uploads it to the host.
func (m *Manager) uploadSeed(ctx context.Context, s *Site, path string, seed Seed, uid, gid int) error {
	tmp, err := os.CreateTemp("", "bureau-seed-*.iso")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := m.seeds.WriteSeed(ctx, tmp.Name(), seed); err != nil {
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	if err := s.Files.Upload(ctx, tmp.Name(), path, uid, gid); err != nil {
		return fmt.Errorf("cloud-init seed to host: %w", err)
	}
	return nil
}

// removeRemoteFiles removes a deleted desktop's files on its host but
// the data disk when kept; it says whether a data disk stays there.
func (m *Manager) removeRemoteFiles(ctx context.Context, d *desktop.Desktop, deleteData bool) (kept bool, err error) {
	s, err := m.site(ctx, d)
	if err != nil {
		return false, err
	}
	keep := ""
	if !deleteData {
		keep = d.DataDiskPath
	}
	return s.Files.RemoveAllBut(ctx, d.Dir, keep)
}

// undoRemote removes what a failed remote create left in the desktop's
// folder on its host, but a data disk (which the create's own undo
// removes when it made it).
func (m *Manager) undoRemote(ctx context.Context, d *desktop.Desktop) {
	if s, err := m.site(ctx, d); err == nil {
		s.Files.RemoveAllBut(ctx, d.Dir, d.DataDiskPath)
	}
}
