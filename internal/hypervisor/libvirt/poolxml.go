package libvirt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// perms is the owner and mode of a pool's folder or of a volume.
type perms struct {
	uid, gid int
	mode     os.FileMode
}

var (
	// imageDir is a base images' folder: every desktop's QEMU user reads
	// the images in it.
	imageDir = perms{0, 0, 0o755}
	// imageFile is a base image.
	imageFile = perms{0, 0, 0o644}
)

// desktopDir is a desktop's folder: its QEMU user's only, which creates
// vnc.sock and serial.log there (as ownership.go does locally).
func desktopDir(uid, gid int) perms { return perms{uid, gid, 0o700} }

// desktopFile is one of a desktop's files (its disks, its seed ISO).
func desktopFile(uid, gid int) perms { return perms{uid, gid, 0o600} }

func (p perms) pool() *libvirtxml.StoragePoolTargetPermissions {
	return &libvirtxml.StoragePoolTargetPermissions{Mode: fmt.Sprintf("%04o", p.mode), Owner: strconv.Itoa(p.uid), Group: strconv.Itoa(p.gid)}
}

func (p perms) volume() *libvirtxml.StorageVolumeTargetPermissions {
	return &libvirtxml.StorageVolumeTargetPermissions{Mode: fmt.Sprintf("%04o", p.mode), Owner: strconv.Itoa(p.uid), Group: strconv.Itoa(p.gid)}
}

// poolPerms reads a pool's permissions ("" fields: libvirt's defaults,
// which never match).
func poolPerms(x *libvirtxml.StoragePoolTargetPermissions) (perms, bool) {
	if x == nil {
		return perms{}, false
	}
	mode, err1 := strconv.ParseUint(x.Mode, 8, 32)
	uid, err2 := strconv.Atoi(x.Owner)
	gid, err3 := strconv.Atoi(x.Group)
	return perms{uid, gid, os.FileMode(mode)}, err1 == nil && err2 == nil && err3 == nil
}

// poolXML defines a dir pool for dir whose folder has those permissions.
func poolXML(name, dir string, p perms) (string, error) {
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

// splitRemote checks a host path and splits it into its folder and name.
func splitRemote(remotePath string) (dir, name string, err error) {
	clean := filepath.Clean(remotePath)
	if !filepath.IsAbs(clean) || clean != remotePath || filepath.Dir(clean) == clean {
		return "", "", fmt.Errorf("host path %q: want an absolute, clean path to a file", remotePath)
	}
	return filepath.Dir(clean), filepath.Base(clean), nil
}

// volumeXML defines a sparse raw file of size bytes with permissions p:
// raw, so libvirt makes a plain file an upload fills (for qcow2 it would
// run qemu-img create); allocation 0, so it writes no zeros first.
func volumeXML(name string, size int64, p perms) (string, error) {
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
func qcow2XML(name string, size int64, p perms, back backing) (string, error) {
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
		return "", hostErr("read the volume", err)
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

// hostErr is what a libvirt call on the host said, after what was being
// done. errors.As still finds the libvirt.Error, and errors.Is finds
// syscall.ENOSPC when the host's disk is full.
func hostErr(what string, err error) error {
	var lerr libvirt.Error
	if !errors.As(err, &lerr) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &libvirtError{what: what, lerr: lerr}
}

type libvirtError struct {
	what string
	lerr libvirt.Error
}

func (e *libvirtError) Error() string {
	msg := e.what + ": " + e.lerr.Message
	if strings.Contains(e.lerr.Message, noSpace) {
		msg += " (the host's disk is full)"
	}
	return msg
}

func (e *libvirtError) Unwrap() []error {
	if strings.Contains(e.lerr.Message, noSpace) {
		return []error{e.lerr, syscall.ENOSPC}
	}
	return []error{e.lerr}
}
