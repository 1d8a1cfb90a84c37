package domains

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// GiveFiles hands a VM's own files to the user its QEMU runs as, before
// QEMU opens them: every disk marked relabel='no' (libvirt labels the rest
// and its own state) and the folder of its VNC socket, where QEMU creates
// the socket. Files become 0600 and the folder 0700, so one desktop's QEMU
// cannot read another's disks. A VM that runs as root needs nothing.
func GiveFiles(d *libvirt.Domain) error {
	if !localDomain(d) {
		return nil
	}
	s, err := d.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE | libvirt.DOMAIN_XML_SECURE)
	if err != nil {
		return err
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(s); err != nil {
		return err
	}
	return giveFilesOf(&dom)
}

func giveFilesOf(dom *libvirtxml.Domain) error {
	uid, gid, ok := dacLabel(dom)
	if !ok || uid == 0 || dom.Devices == nil {
		return nil
	}
	var own []string
	for _, disk := range dom.Devices.Disks {
		if disk.Source == nil || disk.Source.File == nil || disk.Source.File.File == "" {
			continue
		}
		for _, l := range disk.Source.File.SecLabel {
			if l.Model == "dac" && l.Relabel == "no" {
				own = append(own, disk.Source.File.File)
			}
		}
	}
	for _, path := range own {
		if err := chown(path, uid, gid, 0o600); err != nil {
			return err
		}
	}
	for _, g := range dom.Devices.Graphics {
		if g.VNC == nil {
			continue
		}
		for _, l := range g.VNC.Listeners {
			if l.Socket != nil && l.Socket.Socket != "" {
				if err := chown(filepath.Dir(l.Socket.Socket), uid, gid, 0o700); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// localDomain says whether d's libvirtd runs on this machine, where bureau
// hands a VM's files to its QEMU user itself (on a remote host, the
// storage pool made them with that owner).
func localDomain(d *libvirt.Domain) bool {
	c, err := d.DomainGetConnect()
	if err != nil {
		return true
	}
	defer c.Close()
	uri, err := c.GetURI()
	return err != nil || link.IsLocalURI(uri)
}

// chown gives path to uid:gid with mode; a missing file is QEMU's to
// report when it opens it.
func chown(path string, uid, gid int, mode os.FileMode) error {
	if err := os.Chown(path, uid, gid); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("give %s to the VM's user: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("give %s to the VM's user: %w", path, err)
	}
	return nil
}

// dacLabel reads a static DAC label "+uid:+gid".
func dacLabel(dom *libvirtxml.Domain) (uid, gid int, ok bool) {
	for _, l := range dom.SecLabel {
		if l.Model != "dac" || l.Type != "static" {
			continue
		}
		u, g, found := strings.Cut(l.Label, ":")
		if !found {
			return 0, 0, false
		}
		var err1, err2 error
		uid, err1 = strconv.Atoi(strings.TrimPrefix(u, "+"))
		gid, err2 = strconv.Atoi(strings.TrimPrefix(g, "+"))
		return uid, gid, err1 == nil && err2 == nil
	}
	return 0, 0, false
}
