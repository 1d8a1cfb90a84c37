package domains

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"libvirt.org/go/libvirtxml"
)

// TestGiveFiles: the desktop's own disks and socket folder go to its QEMU
// user, owner-only; a disk libvirt labels itself is left alone.
func TestGiveFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	c := vmConfig(dir, "bureau-own", "44444444-4444-4444-8444-444444444444")
	for _, f := range []string{c.OSDisk, c.DataDisk, c.SeedISO} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	shared := filepath.Join(t.TempDir(), "shared.img")
	os.WriteFile(shared, []byte("x"), 0o644)
	s, err := DomainXML(c)
	if err != nil {
		t.Fatal(err)
	}
	var dom libvirtxml.Domain
	dom.Unmarshal(s)
	dom.Devices.Disks = append(dom.Devices.Disks, libvirtxml.DomainDisk{Device: "disk",
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: shared}}})
	if err := giveFilesOf(&dom); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{c.OSDisk: 0o600, c.DataDisk: 0o600, c.SeedISO: 0o600, dir: 0o700 | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != c.UID || int(st.Gid) != c.GID || fi.Mode() != mode {
			t.Errorf("%s: %d:%d %v, want %d:%d %v", path, st.Uid, st.Gid, fi.Mode(), c.UID, c.GID, mode)
		}
	}
	if fi, _ := os.Stat(shared); fi.Sys().(*syscall.Stat_t).Uid != 0 || fi.Mode() != 0o644 {
		t.Errorf("a disk libvirt labels was changed: %v", fi.Mode())
	}
}
