package manager

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
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

// site is the remote site of d's host.
func (h *desktopHosts) site(ctx context.Context, d *desktop.Desktop) (*Site, error) {
	if h.sites == nil {
		return nil, fmt.Errorf("desktop %s is on host %s: %w", d.Name, d.Host, desktop.ErrHostGone)
	}
	return h.sites.Site(ctx, d.Host)
}

// named is the remote host a request names (a create's, a move's), ready
// for desktops; a validation error of the request's host when it is not.
func (h *desktopHosts) named(ctx context.Context, host string) (*Site, error) {
	if h.sites == nil {
		return nil, &desktop.ValidationError{Field: "host", Message: fmt.Sprintf("no host %q: this bureau runs desktops on its own host only", host)}
	}
	s, err := h.sites.Site(ctx, host)
	if err != nil {
		return nil, &desktop.ValidationError{Field: "host", Message: err.Error()}
	}
	return s, nil
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
func (c *creator) buildRemote(ctx context.Context, d *desktop.Desktop, basePath string, seed Seed, undo *reverter) error {
	there, err := c.hosts.filesOf(ctx, d)
	if err != nil {
		return err
	}
	files := there.Files
	c.ops.step(ctx, d, "image")
	if err := c.hosts.imageOn(ctx, files, d, d.Host, basePath, func(step string) string { return step }); err != nil {
		return err
	}
	c.ops.step(ctx, d, "disks")
	vm := c.defs.VMConfig(d, newUUID())
	uid, gid := d.VMUID, vm.GID
	if err := files.MakeDir(ctx, d.Dir, uid, gid); err != nil {
		return fmt.Errorf("desktop folder on host %s: %w", d.Host, err)
	}
	if ok, err := files.Exists(ctx, d.DataDiskPath); err != nil {
		return err
	} else if !ok {
		if err := files.CreateDataDisk(ctx, d.DataDiskPath, d.DataDiskGiB, uid, gid); err != nil {
			return fmt.Errorf("data disk: %w", err)
		}
		undo.add(func(ctx context.Context) { files.Remove(ctx, d.DataDiskPath) })
	}
	if err := files.CreateOverlay(ctx, basePath, vm.OSDisk, c.osDiskGiB, uid, gid); err != nil {
		return fmt.Errorf("OS disk: %w", err)
	}
	if err := c.hosts.uploadSeed(ctx, files, vm.SeedISO, seed, uid, gid); err != nil {
		return err
	}
	c.ops.step(ctx, d, "define")
	if err := c.vms.Define(ctx, vm); err != nil {
		return err
	}
	undo.add(func(ctx context.Context) { c.vms.Undefine(ctx, vm.Name) })
	c.ops.step(ctx, d, "start")
	if err := c.vms.Start(ctx, vm.Name); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return nil
}

// imageOn copies the base image at path to host (its files) unless a
// complete copy is there, showing its progress as d's step ("image 40%",
// as label words it). Bureau's own host has its images: nothing shows.
// Another build of the image at that path (the image was rebuilt since
// it was copied there) is replaced only when no desktop there but d has
// its OS disk over it: theirs would read another base under their
// overlays. Else the copy is refused, naming them.
func (h *desktopHosts) imageOn(ctx context.Context, files HostFiles, d *desktop.Desktop, host, path string, label func(step string) string) error {
	last := time.Time{}
	replace := func(ctx context.Context, why string) error {
		users, err := h.imageUsers(ctx, host, d.Image, d.ID)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return &desktop.ConflictError{Message: fmt.Sprintf("host %s holds another build of image %s, the base of desktops %s there: reimage, move or delete them first",
				host, d.Image, strings.Join(users, ", "))}
		}
		h.ops.log.Info("replacing another build of a base image on a host", "host", host, "image", d.Image, "path", path, "why", why)
		return nil
	}
	err := files.EnsureImage(ctx, path, replace, func(done, total int64) {
		if total > 0 && (time.Since(last) > time.Second || done == total) {
			last = time.Now()
			h.ops.step(ctx, d, label(fmt.Sprintf("image %d%%", done*100/total)))
		}
	})
	if err != nil {
		return fmt.Errorf("base image on host %s: %w", host, err)
	}
	return nil
}

// imageUsers names the desktops on host, but except, whose OS disks are
// overlays on its copy of image.
func (h *desktopHosts) imageUsers(ctx context.Context, host, image, except string) ([]string, error) {
	ds, err := h.desktops.ListDesktops(ctx, desktop.Filter{Host: host})
	if err != nil {
		return nil, fmt.Errorf("desktops on host %s: %w", host, err)
	}
	var users []string
	for _, o := range ds {
		if o.ID != except && o.Image == image && o.Host == host {
			users = append(users, o.Name+" ("+o.ID+")")
		}
	}
	return users, nil
}

// sameBase refuses to move d off its remote host when that host's copy
// of its image is another build than bureau's own (the image was rebuilt
// after d was made there): d's OS disk, an overlay, would be read over
// another base wherever it went. Only a reimage mends it. A desktop on
// bureau's own host has the image itself.
func (h *desktopHosts) sameBase(ctx context.Context, d *desktop.Desktop, path string) error {
	if !d.Remote() {
		return nil
	}
	there, err := h.filesOf(ctx, d)
	if err != nil {
		return err
	}
	keep := func(_ context.Context, why string) error {
		return &desktop.ConflictError{Message: fmt.Sprintf("desktop %s's OS disk is over another build of image %s on host %s than this host's (%s): it cannot move; reimage it first (its data disk stays)",
			d.Name, d.Image, d.Host, why)}
	}
	if err := there.Files.EnsureImage(ctx, path, keep, nil); err != nil {
		return fmt.Errorf("base image on host %s: %w", d.Host, err)
	}
	return nil
}

// uploadSeed writes the cloud-init seed here, in a scratch file, and
// uploads it to path on a desktop's host (its files).
func (h *desktopHosts) uploadSeed(ctx context.Context, files HostFiles, path string, seed Seed, uid, gid int) error {
	tmp, err := h.local.TempFile(ctx, "bureau-seed-*.iso")
	if err != nil {
		return err
	}
	defer h.local.Remove(context.WithoutCancel(ctx), tmp)
	if err := h.seeds.WriteSeed(ctx, tmp, seed); err != nil {
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	if err := files.Upload(ctx, tmp, path, uid, gid); err != nil {
		return fmt.Errorf("cloud-init seed to host: %w", err)
	}
	return nil
}

// removeFailed removes what a failed create left in the desktop's folder
// on its host, but a data disk (which the create's own undo removes when
// it made it), and the folder when nothing is left.
func (c *creator) removeFailed(ctx context.Context, d *desktop.Desktop) {
	if there, err := c.hosts.filesOf(ctx, d); err == nil {
		there.Files.RemoveAllBut(ctx, d.Dir, d.DataDiskPath)
	}
}
