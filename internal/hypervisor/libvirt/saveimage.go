package libvirt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// SaveTo writes a running VM's RAM and device state to path and stops it
// (virDomainSave). The file can be restored as other VMs with RestoreAs.
func (h *Hypervisor) SaveTo(ctx context.Context, name, path string) error {
	_, err := withDomain(ctx, h, name, func(d *libvirt.Domain) (struct{}, error) {
		return struct{}{}, d.SaveFlags(path, "", libvirt.DOMAIN_SAVE_RUNNING)
	})
	if err != nil {
		return fmt.Errorf("save %s: %w", name, err)
	}
	return nil
}

// RestoreAs starts the VM of c (already defined) from a save image made by
// SaveTo for another VM with the same devices, memory and vCPUs: its
// programs continue where the saved VM's stopped, on c's own disks. libvirt
// restores a save image only under the name and UUID it was saved with, so
// libvirt reads the image with the definition rewritten through a FIFO at
// scratch (QEMU reads its migration stream from a pipe anyway): no copy of
// the image is written first. paused keeps its vCPUs stopped (Resume runs
// them).
func (h *Hypervisor) RestoreAs(ctx context.Context, image string, c desktop.VMConfig, scratch string, paused bool) error {
	flags := libvirt.DOMAIN_SAVE_RUNNING
	if paused {
		flags = libvirt.DOMAIN_SAVE_PAUSED
	}
	in, hdr, region, err := retargetedSaveImage(image, c)
	if err != nil {
		return fmt.Errorf("restore %s: %w", c.Name, err)
	}
	defer in.Close()
	os.Remove(scratch)
	if err := syscall.Mkfifo(scratch, 0o600); err != nil {
		return fmt.Errorf("restore %s: %w", c.Name, err)
	}
	defer os.Remove(scratch)
	fed := make(chan error, 1)
	go func() { fed <- feedSaveImage(scratch, hdr, region, in) }()
	conn, err := h.connect(ctx)
	if err == nil {
		_, err = call(ctx, func() (struct{}, error) {
			dom, err := conn.LookupDomainByName(c.Name)
			if err != nil {
				return struct{}{}, err
			}
			defer dom.Free()
			if err := giveFiles(dom); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, conn.DomainRestoreFlags(scratch, "", flags)
		})
	}
	// A restore that failed before it opened the FIFO leaves the feeder
	// waiting for a reader: this one lets it open, and it stops at once.
	if r, oerr := os.OpenFile(scratch, os.O_RDONLY|syscall.O_NONBLOCK, 0); oerr == nil {
		r.Close()
	}
	ferr := <-fed
	if err != nil {
		return fmt.Errorf("restore %s: %w", c.Name, translate(c.Name, err))
	}
	if ferr != nil {
		return fmt.Errorf("restore %s: feeding the save image: %w", c.Name, ferr)
	}
	return nil
}

// feedSaveImage writes the rewritten header and region, then the rest of
// in (QEMU's migration stream), into the FIFO at path.
func feedSaveImage(path string, hdr saveHeader, region []byte, in *os.File) error {
	out, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := binary.Write(out, binary.LittleEndian, &hdr); err != nil {
		return err
	}
	if _, err := out.Write(region); err != nil {
		return err
	}
	_, err = io.Copy(out, in) // spliced from the page cache
	return err
}

// libvirt's QEMU save image starts with this header, then data_len bytes
// holding the domain XML (NUL-terminated), at cookieOffset a cookie, and
// zero padding; QEMU's migration stream follows.
type saveHeader struct {
	Magic        [16]byte
	Version      uint32
	DataLen      uint32
	WasRunning   uint32
	Compressed   uint32
	CookieOffset uint32
	Unused       [14]uint32
}

var saveMagic = []byte("LibvirtQemudSave")

// retargetedSaveImage opens a save image and returns it positioned at
// QEMU's migration stream, with its header and definition region changed
// to c's name, UUID, disks and sockets.
func retargetedSaveImage(src string, c desktop.VMConfig) (*os.File, saveHeader, []byte, error) {
	var hdr saveHeader
	in, err := os.Open(src)
	if err != nil {
		return nil, hdr, nil, err
	}
	region, err := retargetHeader(in, &hdr, c)
	if err != nil {
		in.Close()
		return nil, hdr, nil, err
	}
	return in, hdr, region, nil
}

// retargetHeader reads the header and definition region from in and
// rewrites them for c.
func retargetHeader(in io.Reader, hdr *saveHeader, c desktop.VMConfig) ([]byte, error) {
	if err := binary.Read(in, binary.LittleEndian, hdr); err != nil {
		return nil, fmt.Errorf("save image header: %w", err)
	}
	if !bytes.Equal(hdr.Magic[:], saveMagic) || hdr.Version != 2 || hdr.Compressed != 0 || hdr.CookieOffset >= hdr.DataLen {
		return nil, errors.New("not an uncompressed libvirt QEMU save image (version 2)")
	}
	data := make([]byte, hdr.DataLen)
	if _, err := io.ReadFull(in, data); err != nil {
		return nil, fmt.Errorf("save image header: %w", err)
	}
	xml, _, _ := bytes.Cut(data[:hdr.CookieOffset], []byte{0})
	cookie, _, _ := bytes.Cut(data[hdr.CookieOffset:], []byte{0})
	newXML, err := retargetDomainXML(string(xml), c)
	if err != nil {
		return nil, err
	}
	region := append(append([]byte(newXML), 0), cookie...)
	region = append(region, 0)
	if len(region) > int(hdr.DataLen) {
		return nil, errors.New("rewritten definition does not fit the save image's header")
	}
	hdr.CookieOffset = uint32(len(newXML) + 1)
	return append(region, make([]byte, int(hdr.DataLen)-len(region))...), nil
}

// retargetDomainXML points a saved VM's live definition at another VM's
// identity and files; everything that defines the guest's hardware stays.
func retargetDomainXML(xml string, c desktop.VMConfig) (string, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(xml); err != nil {
		return "", fmt.Errorf("saved domain definition: %w", err)
	}
	dom.Name, dom.UUID, dom.ID = c.Name, c.UUID, nil
	if dom.Devices == nil {
		return "", errors.New("saved domain definition has no devices")
	}
	files := map[string]string{"vda": c.OSDisk, "vdb": c.DataDisk, "hdc": c.SeedISO}
	for i := range dom.Devices.Disks {
		d := &dom.Devices.Disks[i]
		if d.Target == nil || d.Source == nil || d.Source.File == nil || files[d.Target.Dev] == "" {
			return "", fmt.Errorf("saved domain has an unexpected disk %+v", d.Target)
		}
		d.Source.File.File = files[d.Target.Dev]
		d.Source.Index = 0
		d.BackingStore = nil
	}
	for i := range dom.Devices.Graphics {
		if v := dom.Devices.Graphics[i].VNC; v != nil {
			v.Socket = ""
			v.Listeners = []libvirtxml.DomainGraphicListener{{Socket: &libvirtxml.DomainGraphicListenerSocket{Socket: c.VNCSocket}}}
		}
	}
	for i := range dom.Devices.Serials {
		if s := dom.Devices.Serials[i].Source; s != nil && s.File != nil {
			s.File.Path = c.SerialLog
		}
	}
	for i := range dom.Devices.Consoles {
		if s := dom.Devices.Consoles[i].Source; s != nil && s.File != nil {
			s.File.Path = c.SerialLog
		}
	}
	// This VM's own network device, user and generation id (the guest
	// reseeds its RNG: it must not share the template's random state).
	for i := range dom.Devices.Interfaces {
		n := nic(c)
		n.MAC = dom.Devices.Interfaces[i].MAC // device state the guest carries; its address is changed inside
		n.Address = dom.Devices.Interfaces[i].Address
		dom.Devices.Interfaces[i] = n
	}
	dom.SecLabel = []libvirtxml.DomainSecLabel{dacSecLabel(c)}
	dom.GenID = &libvirtxml.DomainGenID{Value: newGenID()}
	// The guest agent's socket path names the old domain: libvirt makes a
	// new one when it is left out.
	for i := range dom.Devices.Channels {
		if s := dom.Devices.Channels[i].Source; s != nil && s.UNIX != nil {
			s.UNIX.Path = ""
		}
	}
	return dom.Marshal()
}
