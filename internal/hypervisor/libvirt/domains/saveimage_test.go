package domains

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirtxml"
)

func vmConfig(dir, name, uuid string) desktop.VMConfig {
	return desktop.VMConfig{Name: name, UUID: uuid, VCPUs: 2, MemoryMiB: 2048, Accelerator: desktop.AccelTCG,
		OSDisk: filepath.Join(dir, "os.qcow2"), DataDisk: filepath.Join(dir, "data.qcow2"), SeedISO: filepath.Join(dir, "seed.iso"),
		SerialLog: filepath.Join(dir, "serial.log"), VNCSocket: filepath.Join(dir, "vnc.sock"),
		Network: "bureau", Tap: desktop.TapName(name), MAC: desktop.MAC(name), UID: 1 << 30, GID: 64055}
}

func TestRewriteSaveImage(t *testing.T) {
	dir := t.TempDir()
	tmpl := vmConfig("/templates/t1", "bureau-tmpl-1", "11111111-1111-4111-8111-111111111111")
	tmpl.UID = 1<<30 - 1
	xml, err := DomainXML(tmpl)
	// As libvirt saves it: with the generation id it made.
	xml = strings.Replace(xml, "<genid></genid>", "<genid>33333333-3333-4333-8333-333333333333</genid>", 1)
	if err != nil {
		t.Fatal(err)
	}
	cookie := "<qemu-migration><name>bureau-tmpl-1</name></qemu-migration>"
	data := append(append([]byte(xml), 0), append([]byte(cookie), 0)...)
	data = append(data, make([]byte, 65536)...)
	hdr := SaveHeader{Version: 2, DataLen: uint32(len(data)), WasRunning: 1, CookieOffset: uint32(len(xml) + 1)}
	copy(hdr.Magic[:], saveMagic)
	var img bytes.Buffer
	binary.Write(&img, binary.LittleEndian, &hdr)
	img.Write(data)
	img.WriteString("QEMU MIGRATION STREAM")
	src := filepath.Join(dir, "ram.save")
	os.WriteFile(src, img.Bytes(), 0o600)

	dst := filepath.Join(dir, "restore.save")
	want := vmConfig("/desktops/abc", "bureau-abc", "22222222-2222-4222-8222-222222222222")
	if err := rewriteSaveImage(src, dst, want); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(dst)
	var got SaveHeader
	binary.Read(bytes.NewReader(out), binary.LittleEndian, &got)
	if got.DataLen != hdr.DataLen || got.WasRunning != 1 || !bytes.HasSuffix(out, []byte("QEMU MIGRATION STREAM")) || len(out) != img.Len() {
		t.Fatalf("header %+v, %d bytes (want %d)", got, len(out), img.Len())
	}
	region := out[92 : 92+got.DataLen]
	newXML, _, _ := bytes.Cut(region, []byte{0})
	if gotCookie, _, _ := bytes.Cut(region[got.CookieOffset:], []byte{0}); string(gotCookie) != cookie {
		t.Errorf("cookie = %q", gotCookie)
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(string(newXML)); err != nil {
		t.Fatal(err)
	}
	if dom.Name != want.Name || dom.UUID != want.UUID {
		t.Errorf("identity %s %s", dom.Name, dom.UUID)
	}
	for _, d := range dom.Devices.Disks {
		if !strings.HasPrefix(d.Source.File.File, "/desktops/abc/") {
			t.Errorf("disk %s still at %s", d.Target.Dev, d.Source.File.File)
		}
	}
	// Its own user, network device and generation id; the NIC keeps the
	// template's hardware address (the guest carries it in device state).
	if uid, _, _ := dacLabel(&dom); uid != want.UID {
		t.Errorf("QEMU user %d, want %d", uid, want.UID)
	}
	if n := dom.Devices.Interfaces[0]; n.Target.Dev != want.Tap || n.Source.Network.Network != "bureau" || n.MAC.Address != tmpl.MAC {
		t.Errorf("NIC %+v %+v %+v", n.Target, n.Source.Network, n.MAC)
	}
	if dom.GenID == nil || dom.GenID.Value == "" || strings.HasPrefix(dom.GenID.Value, "33333333") {
		t.Errorf("generation id %+v, want a new one", dom.GenID)
	}
	if s := dom.Devices.Graphics[0].VNC.Listeners[0].Socket.Socket; s != want.VNCSocket {
		t.Errorf("VNC socket %s", s)
	}
	if strings.Contains(string(newXML), "/templates/t1") {
		t.Errorf("template paths left:\n%s", newXML)
	}
	if err := rewriteSaveImage(src, dst, want); err == nil {
		t.Error("overwrote an existing file")
	}
	os.WriteFile(src, []byte("not a save image"), 0o600)
	if err := rewriteSaveImage(src, filepath.Join(dir, "x"), want); err == nil {
		t.Error("accepted a file that is not a save image")
	}
}

func TestSavedRunningReadsTheHeader(t *testing.T) {
	head := func(magic string, running uint32) []byte {
		h := SaveHeader{Version: 2, DataLen: 4096, WasRunning: running}
		copy(h.Magic[:], magic)
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, &h)
		return b.Bytes()
	}
	if r, err := SavedRunning(head("LibvirtQemudSave", 1)); err != nil || !r {
		t.Errorf("running: %v %v", r, err)
	}
	if r, err := SavedRunning(head("LibvirtQemudSave", 0)); err != nil || r {
		t.Errorf("paused: %v %v", r, err)
	}
	if _, err := SavedRunning(head("LibvirtQemudPart", 1)); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("partial: %v", err)
	}
	if _, err := SavedRunning(head("QFI\xfb", 1)); err == nil {
		t.Error("a qcow2 taken for a save image")
	}
	if _, err := SavedRunning([]byte("LibvirtQemudSave")); err == nil {
		t.Error("a short header accepted")
	}
}
