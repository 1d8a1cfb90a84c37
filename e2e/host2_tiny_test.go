//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// tinyDisks are the files of a tiny test domain that moves between host1
// and host2. The same paths on both hosts, different files: host2's
// desktops/ and images/ are its own DIR/desktops and DIR/images.
type tinyDisks struct {
	folder, base           string // host1's
	host2Folder, host2Base string // host2's, seen from here
	osDisk                 string // in folder, an overlay on base
}

// on2 is path (in folder) as host2's file, seen from here.
func (d tinyDisks) on2(path string) string {
	return filepath.Join(d.host2Folder, filepath.Base(path))
}

// tinyDomainDisks makes the folders of domain name on host1 and on host2
// (DIR dir, libvirtd at uri), a base with 0x5a in its first MiB, on both
// (a move copies only the top images), and the OS disk: an overlay on it
// with 0x77 at 2 MiB. The test makes the rest of the domain's files.
//
// Its cleanup runs before host2 stops (cleanups run last first), also on
// failure: undefine undoes the domain on each host (given its virsh and
// host1's folder), then the folders, the bases and leftovers go. It also
// watches the domain's events on both hosts.
func tinyDomainDisks(t *testing.T, dir, uri, name string, undefine func(virsh func(...string) (string, error), folder string), leftovers ...string) (tinyDisks, *migEvents) {
	t.Helper()
	data := os.Getenv("BUREAU_HOST2_DATA_DIR")
	if data == "" {
		data = "/var/lib/bureau"
	}
	d := tinyDisks{
		folder:      filepath.Join(data, "desktops", name),
		base:        filepath.Join(data, "images", name+"-base.qcow2"),
		host2Folder: filepath.Join(dir, "desktops", name),
		host2Base:   filepath.Join(dir, "images", name+"-base.qcow2"),
	}
	d.osDisk = d.folder + "/os.qcow2"

	t.Cleanup(func() {
		for _, virsh := range []func(...string) (string, error){virshOn("qemu:///system"), virshOn(uri)} {
			undefine(virsh, d.folder)
		}
		for _, p := range append([]string{d.folder, d.base, d.host2Folder, d.host2Base}, leftovers...) {
			os.RemoveAll(p)
		}
	})
	events := watchEvents(t, name, uri)

	for _, f := range []string{d.folder, d.host2Folder} {
		if err := os.MkdirAll(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", d.base, "64M")
	run(t, "qemu-io", "-c", "write -P 0x5a 0 1M", d.base)
	run(t, "cp", "--sparse=always", d.base, d.host2Base)
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-b", d.base, "-F", "qcow2", d.osDisk)
	run(t, "qemu-io", "-c", "write -P 0x77 2M 1M", d.osDisk)
	return d, events
}
