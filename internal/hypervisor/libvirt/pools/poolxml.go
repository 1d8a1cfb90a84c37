package pools

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// Perms is the owner and mode of a pool's folder or of a volume.
type Perms struct {
	UID, GID int
	Mode     os.FileMode
}

var (
	// imageDir is a base images' folder: every desktop's QEMU user reads
	// the images in it.
	imageDir = Perms{0, 0, 0o755}
	// imageFile is a base image.
	imageFile = Perms{0, 0, 0o644}
)

// desktopDir is a desktop's folder: its QEMU user's only, which creates
// vnc.sock and serial.log there (as domains/ownership.go does locally).
func desktopDir(uid, gid int) Perms { return Perms{uid, gid, 0o700} }

// DesktopFile is one of a desktop's files (its disks, its seed ISO).
func DesktopFile(uid, gid int) Perms { return Perms{uid, gid, 0o600} }

func (p Perms) pool() *libvirtxml.StoragePoolTargetPermissions {
	return &libvirtxml.StoragePoolTargetPermissions{Mode: fmt.Sprintf("%04o", p.Mode), Owner: strconv.Itoa(p.UID), Group: strconv.Itoa(p.GID)}
}

func (p Perms) volume() *libvirtxml.StorageVolumeTargetPermissions {
	return &libvirtxml.StorageVolumeTargetPermissions{Mode: fmt.Sprintf("%04o", p.Mode), Owner: strconv.Itoa(p.UID), Group: strconv.Itoa(p.GID)}
}

// poolPerms reads a pool's permissions ("" fields: libvirt's defaults,
// which never match).
func poolPerms(x *libvirtxml.StoragePoolTargetPermissions) (Perms, bool) {
	if x == nil {
		return Perms{}, false
	}
	mode, err1 := strconv.ParseUint(x.Mode, 8, 32)
	uid, err2 := strconv.Atoi(x.Owner)
	gid, err3 := strconv.Atoi(x.Group)
	return Perms{uid, gid, os.FileMode(mode)}, err1 == nil && err2 == nil && err3 == nil
}

// poolXML defines a dir pool for dir whose folder has those permissions.
func poolXML(name, dir string, p Perms) (string, error) {
	return (&libvirtxml.StoragePool{
		Type:   "dir",
		Name:   name,
		Target: &libvirtxml.StoragePoolTarget{Path: dir, Permissions: p.pool()},
	}).Marshal()
}

// checkDir refuses a folder that is not an absolute, clean path.
func checkDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return fmt.Errorf("host folder %q: want an absolute, clean path other than /", dir)
	}
	return nil
}

// SplitRemote checks a host path and splits it into its folder and name.
func SplitRemote(remotePath string) (dir, name string, err error) {
	clean := filepath.Clean(remotePath)
	if !filepath.IsAbs(clean) || clean != remotePath || filepath.Dir(clean) == clean {
		return "", "", fmt.Errorf("host path %q: want an absolute, clean path to a file", remotePath)
	}
	return filepath.Dir(clean), filepath.Base(clean), nil
}

// VolumeXML defines a sparse raw file of size bytes with permissions p:
// raw, so libvirt makes a plain file an upload fills (for qcow2 it would
// run qemu-img create); allocation 0, so it writes no zeros first.
func VolumeXML(name string, size int64, p Perms) (string, error) {
	return (&libvirtxml.StorageVolume{
		Type:       "file",
		Name:       name,
		Capacity:   &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: uint64(size)},
		Allocation: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 0},
		Target: &libvirtxml.StorageVolumeTarget{
			Format:      &libvirtxml.StorageVolumeTargetFormat{Type: "raw"},
			Permissions: p.volume(),
		},
	}).Marshal()
}

// backing is the image a qcow2 overlay reads through.
type backing struct {
	path, format string
}

// qcow2XML defines a qcow2 disk of size bytes with permissions p, over
// back if its path is not "" (libvirt runs qemu-img create -b path -F
// format; 9.0 refuses a backing store without its format). Like bureau's
// local disks (internal/storage) it has lazy refcounts, which need compat
// 1.1, and no preallocation.
func qcow2XML(name string, size int64, p Perms, back backing) (string, error) {
	v := &libvirtxml.StorageVolume{
		Type:       "file",
		Name:       name,
		Capacity:   &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: uint64(size)},
		Allocation: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 0},
		Target: &libvirtxml.StorageVolumeTarget{
			Format:      &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"},
			Permissions: p.volume(),
			Compat:      "1.1",
			Features:    []libvirtxml.StorageVolumeTargetFeature{{LazyRefcounts: &struct{}{}}},
		},
	}
	if back.path != "" {
		if back.format == "" {
			return "", fmt.Errorf("backing image %s: its format is unknown", back.path)
		}
		v.BackingStore = &libvirtxml.StorageVolumeBackingStore{
			Path:   back.path,
			Format: &libvirtxml.StorageVolumeTargetFormat{Type: back.format},
		}
	}
	return v.Marshal()
}

// volumeFormat is the format libvirt found for a volume ("" if none).
func volumeFormat(vol *libvirt.StorageVol) (string, error) {
	x, err := vol.GetXMLDesc(0)
	if err != nil {
		return "", link.HostErr("read the volume", err)
	}
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil {
		return "", fmt.Errorf("the volume's XML: %w", err)
	}
	if v.Target == nil || v.Target.Format == nil {
		return "", nil
	}
	return v.Target.Format.Type, nil
}
