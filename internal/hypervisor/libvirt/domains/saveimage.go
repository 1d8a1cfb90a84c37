package domains

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// SaveTo writes a running VM's RAM and device state to path and stops it
// (virDomainSave). The file can be restored as other VMs with RestoreAs.
func (ds *Domains) SaveTo(ctx context.Context, name, path string) error {
	_, err := link.WithDomain(ctx, ds.link, name, func(d *libvirt.Domain) (struct{}, error) {
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
// a copy of the image with the definition rewritten is written to scratch,
// restored and removed; paused keeps its vCPUs stopped (Resume runs them).
//
// Not a FIFO instead of the copy (it saves ~0.3 s): a bureau that dies
// mid-restore then ends the stream QEMU reads, and libvirt 9.0's
// libvirtd was seen to crash (segfault) cleaning up that failed restore
// for a client that was gone.
func (ds *Domains) RestoreAs(ctx context.Context, image string, c desktop.VMConfig, scratch string, paused bool) error {
	flags := libvirt.DOMAIN_SAVE_RUNNING
	if paused {
		flags = libvirt.DOMAIN_SAVE_PAUSED
	}
	if err := rewriteSaveImage(image, scratch, c); err != nil {
		return fmt.Errorf("restore %s: %w", c.Name, err)
	}
	defer os.Remove(scratch)
	h, err := ds.link.On(ctx, c.Name)
	if err != nil {
		return err
	}
	if h.Host() != "" {
		return fmt.Errorf("restore %s: %w", c.Name, desktop.ErrNotOnRemoteHost)
	}
	conn, err := h.Connect(ctx)
	if err != nil {
		return err
	}
	_, err = link.Call(ctx, func() (struct{}, error) {
		dom, err := conn.LookupDomainByName(c.Name)
		if err != nil {
			return struct{}{}, err
		}
		defer dom.Free()
		if err := GiveFiles(dom); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, conn.DomainRestoreFlags(scratch, "", flags)
	})
	if err != nil {
		return fmt.Errorf("restore %s: %w", c.Name, link.Translate(c.Name, err))
	}
	return nil
}

// SaveHeader is how libvirt's QEMU save image starts: this header, then
// data_len bytes holding the domain XML (NUL-terminated), at cookieOffset a
// cookie, and zero padding; QEMU's migration stream follows.
type SaveHeader struct {
	Magic        [16]byte
	Version      uint32
	DataLen      uint32
	WasRunning   uint32
	Compressed   uint32
	CookieOffset uint32
	Unused       [14]uint32
}

var saveMagic = []byte("LibvirtQemudSave")

// SavedRunning reads a libvirt QEMU save image's header: whether the
// guest was running when saved (it runs again when restored).
func SavedRunning(head []byte) (bool, error) {
	var hdr SaveHeader
	if err := binary.Read(bytes.NewReader(head), binary.LittleEndian, &hdr); err != nil {
		return false, fmt.Errorf("save image header: %w", err)
	}
	switch {
	case bytes.Equal(hdr.Magic[:], []byte("LibvirtQemudPart")):
		return false, errors.New("the save image is incomplete (libvirt did not finish writing it)")
	case !bytes.Equal(hdr.Magic[:], saveMagic):
		return false, errors.New("not a libvirt QEMU save image")
	}
	return hdr.WasRunning != 0, nil
}

// rewriteSaveImage copies src to dst with the domain definition in its
// header changed to c's name, UUID, disks and sockets.
func rewriteSaveImage(src, dst string, c desktop.VMConfig) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var hdr SaveHeader
	if err := binary.Read(in, binary.LittleEndian, &hdr); err != nil {
		return fmt.Errorf("save image header: %w", err)
	}
	if !bytes.Equal(hdr.Magic[:], saveMagic) || hdr.Version != 2 || hdr.Compressed != 0 || hdr.CookieOffset >= hdr.DataLen {
		return errors.New("not an uncompressed libvirt QEMU save image (version 2)")
	}
	data := make([]byte, hdr.DataLen)
	if _, err := io.ReadFull(in, data); err != nil {
		return fmt.Errorf("save image header: %w", err)
	}
	xml, _, _ := bytes.Cut(data[:hdr.CookieOffset], []byte{0})
	cookie, _, _ := bytes.Cut(data[hdr.CookieOffset:], []byte{0})
	newXML, err := retargetDomainXML(string(xml), c)
	if err != nil {
		return err
	}
	region := append(append([]byte(newXML), 0), cookie...)
	region = append(region, 0)
	if len(region) > int(hdr.DataLen) {
		return errors.New("rewritten definition does not fit the save image's header")
	}
	hdr.CookieOffset = uint32(len(newXML) + 1)
	region = append(region, make([]byte, int(hdr.DataLen)-len(region))...)

	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := binary.Write(out, binary.LittleEndian, &hdr); err == nil {
		_, err = out.Write(region)
	}
	if err == nil {
		_, err = io.Copy(out, in) // the migration stream, copied in the kernel
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
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
