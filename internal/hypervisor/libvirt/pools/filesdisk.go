package pools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// What bureau does here with qemu-img to the disk files of a desktop whose
// VM is off (storage.Disks: internal snapshots, a bigger disk), Files does
// on a remote host through its libvirtd (manager.StoppedDisks).

// Snapshot takes an internal snapshot named snap of the qcow2 file at path
// on the host, which no running VM may have open (qemu-img snapshot -c).
func (f *Files) Snapshot(ctx context.Context, path, snap string) error {
	return f.onFile(ctx, path, "snapshot "+snap+" of", func(d *libvirt.Domain) error {
		x := fmt.Sprintf("<domainsnapshot><name>%s</name><memory snapshot='no'/></domainsnapshot>", html.EscapeString(snap))
		s, err := d.CreateSnapshotXML(x, 0)
		if err != nil {
			return err
		}
		return s.Free()
	})
}

// RevertSnapshot returns the file at path on the host to its internal
// snapshot snap (qemu-img snapshot -a).
func (f *Files) RevertSnapshot(ctx context.Context, path, snap string) error {
	return f.onFile(ctx, path, "revert to snapshot "+snap+" of", func(d *libvirt.Domain) error {
		s, err := redefineFileSnapshot(d, snap)
		if err != nil {
			return err
		}
		defer s.Free()
		return s.RevertToSnapshot(0)
	})
}

// DeleteSnapshot removes the internal snapshot snap from the file at path
// on the host (qemu-img snapshot -d); a snapshot the file does not hold is
// not an error (libvirt skips such a disk).
func (f *Files) DeleteSnapshot(ctx context.Context, path, snap string) error {
	return f.onFile(ctx, path, "delete snapshot "+snap+" of", func(d *libvirt.Domain) error {
		s, err := redefineFileSnapshot(d, snap)
		if err != nil {
			return err
		}
		defer s.Free()
		return s.Delete(0)
	})
}

// Resize grows the qcow2 file at path on the host to sizeGiB GiB: a
// resize of its volume, which the host's libvirtd carries out with
// qemu-img resize. path's folder must have a pool (MakeDir).
func (f *Files) Resize(ctx context.Context, path string, sizeGiB int) error {
	if sizeGiB <= 0 {
		return fmt.Errorf("resize %s: %d GiB", path, sizeGiB)
	}
	_, found, err := atVolume(ctx, f, path, func(vol *libvirt.StorageVol) (struct{}, error) {
		if err := vol.Resize(uint64(sizeGiB)<<30, 0); err != nil {
			return struct{}{}, link.HostErr("resize", err)
		}
		return struct{}{}, nil
	})
	if err == nil && !found {
		err = errors.New("no such file there")
	}
	if err != nil {
		return fmt.Errorf("resize %s on the host: %w", path, err)
	}
	return nil
}

// onFile runs fn on a domain defined for the call on the host, holding the
// file at path as its only disk and never started. libvirt has no call
// for a snapshot of a file alone, but what it does to the internal
// snapshots of a domain that is off it does by running qemu-img on the
// domain's host, disk by disk: a domain of just that file makes it do
// exactly that to that file, where the desktop's own domain would take
// every disk (libvirt 9.0 refuses to leave one out of an inactive internal
// snapshot). The domain and its snapshot metadata are removed after fn; a
// leftover of a bureau killed meanwhile is removed first. Its name does not
// start with "bureau-", so listings and events pass it by.
func (f *Files) onFile(ctx context.Context, path, what string, fn func(*libvirt.Domain) error) error {
	if _, _, err := SplitRemote(path); err != nil {
		return err
	}
	conn, err := f.link.Connect(ctx)
	if err != nil {
		return err
	}
	name := fileDomainName(path)
	_, err = link.Call(ctx, func() (struct{}, error) {
		dropFileDomain(conn, name)
		d, err := conn.DomainDefineXML(fileDomainXML(name, path))
		if err != nil {
			return struct{}{}, link.HostErr("define a domain for the file", err)
		}
		defer d.Free()
		defer d.UndefineFlags(libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
		return struct{}{}, fn(d)
	})
	if err != nil {
		return fmt.Errorf("%s %s on the host: %w", what, path, link.Message(err))
	}
	return nil
}

// redefineFileSnapshot gives the domain of onFile libvirt's record of
// snapshot snap, which the file holds but libvirt does not know (bureau
// keeps no libvirt record of disk-only snapshots, and the domain is new),
// so libvirt can revert or delete it.
func redefineFileSnapshot(d *libvirt.Domain, snap string) (*libvirt.DomainSnapshot, error) {
	dx, err := d.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE)
	if err != nil {
		return nil, err
	}
	x := fmt.Sprintf("<domainsnapshot><name>%s</name><state>shutoff</state><creationTime>%d</creationTime>"+
		"<memory snapshot='no'/><disks><disk name='vda' snapshot='internal'/></disks>%s</domainsnapshot>",
		html.EscapeString(snap), time.Now().Unix(), dx)
	return d.CreateSnapshotXML(x, libvirt.DOMAIN_SNAPSHOT_CREATE_REDEFINE)
}

// fileDomainName names onFile's domain for path.
func fileDomainName(path string) string {
	sum := sha256.Sum256([]byte(path))
	return "bureau.file-" + hex.EncodeToString(sum[:8])
}

// fileDomainXML is onFile's domain: path as its one qcow2 disk.
func fileDomainXML(name, path string) string {
	return fmt.Sprintf(`<domain type='qemu'><name>%s</name><memory unit='MiB'>16</memory><vcpu>1</vcpu>`+
		`<os><type>hvm</type></os><devices><disk type='file' device='disk'><driver name='qemu' type='qcow2'/>`+
		`<source file='%s'/><target dev='vda' bus='virtio'/></disk></devices></domain>`,
		html.EscapeString(name), html.EscapeString(path))
}

// dropFileDomain removes a domain of onFile's that is still defined.
func dropFileDomain(conn *libvirt.Connect, name string) {
	d, err := conn.LookupDomainByName(name)
	if err != nil {
		return
	}
	defer d.Free()
	d.UndefineFlags(libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
}

// Allocated is the bytes the file at path takes on the host's disk: its
// volume's allocation (0 when it is not there). A snapshot's size is what
// its disk files grew by when it was taken.
func (f *Files) Allocated(ctx context.Context, path string) (int64, error) {
	n, _, err := atVolume(ctx, f, path, func(vol *libvirt.StorageVol) (int64, error) {
		info, err := vol.GetInfo()
		if err != nil {
			return 0, link.HostErr("volume info", err)
		}
		return int64(info.Allocation), nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure %s on the host: %w", path, err)
	}
	return n, nil
}
