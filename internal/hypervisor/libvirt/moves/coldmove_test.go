package moves

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// Cold moves between two hosts played by libvirt's test driver: each
// test:///FILE connection is a hypervisor of its own (test:///default is
// one shared by all). It has no save images or volume streams: those are
// checked against real libvirtds in e2e/host2_coldmove_test.go.

// coldHV is what cold moves' tests call: moves, and a remote host's files
// (as the Hypervisor offers them).
type coldHV struct {
	*Moves
	*pools.Storage
}

// coldHosts is moves whose own host and remote hosts "one" and "two" are
// three test-driver hypervisors; it returns their connections.
func coldHosts(t *testing.T) (context.Context, coldHV, map[string]*libvirt.Connect) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	dir := t.TempDir()
	uris := map[string]string{}
	for _, host := range []string{"local", "one", "two"} {
		file := filepath.Join(dir, host+".xml")
		if err := os.WriteFile(file, []byte("<node/>"), 0o644); err != nil {
			t.Fatal(err)
		}
		uris[host] = "test://" + file
	}
	c, err := link.Open(ctx, uris["local"], slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetRemotes(link.Remotes{
		// Routing says nothing of where the domains are: DefineOn and
		// UndefineOn are told.
		Where: func(string) string { return "nowhere" },
		Hosts: func(context.Context) (map[string]string, error) {
			return map[string]string{"one": uris["one"], "two": uris["two"]}, nil
		},
	})
	conns := map[string]*libvirt.Connect{}
	for _, host := range []string{"local", "one", "two"} {
		hv, err := c.OnHost(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		if conns[host], err = hv.Connect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { c.ForgetRemote("one"); c.ForgetRemote("two") })
	return ctx, coldHV{New(c), pools.NewStorage(c)}, conns
}

// coldTestDomain defines a shut-off test domain with tap and snapshots
// s1 ← s2 ← s3 and s1 ← s4, s3 current.
func coldTestDomain(t *testing.T, conn *libvirt.Connect, name, tap string) {
	t.Helper()
	x := `<domain type='test'><name>` + name + `</name><uuid>0a6f4c4e-2b55-4d1f-9d1e-5d7c0c6b2a11</uuid>
<memory>65536</memory><os><type>hvm</type></os><devices>
<interface type='ethernet'><mac address='02:00:00:00:00:01'/><target dev='` + tap + `' managed='yes'/></interface>
</devices></domain>`
	dom, err := conn.DomainDefineXML(x)
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	for _, s := range []string{"s1", "s2", "s3"} {
		snap, err := dom.CreateSnapshotXML("<domainsnapshot><name>"+s+"</name></domainsnapshot>", 0)
		if err != nil {
			t.Fatal(err)
		}
		snap.Free()
	}
	s1, err := dom.SnapshotLookupByName("s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.RevertToSnapshot(0); err != nil {
		t.Fatal(err)
	}
	s1.Free()
	snap, err := dom.CreateSnapshotXML("<domainsnapshot><name>s4</name></domainsnapshot>", 0)
	if err != nil {
		t.Fatal(err)
	}
	snap.Free()
	s3, _ := dom.SnapshotLookupByName("s3", 0)
	if err := s3.RevertToSnapshot(0); err != nil {
		t.Fatal(err)
	}
	s3.Free()
}

// snapshotsOn lists name's snapshots on conn: parent by name ("" for a
// root), the current one, and the tap of each one's domain.
func snapshotsOn(t *testing.T, conn *libvirt.Connect, name string) (parents map[string]string, current string, taps map[string]string) {
	t.Helper()
	dom, err := conn.LookupDomainByName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	list, err := dom.ListAllSnapshots(0)
	if err != nil {
		t.Fatal(err)
	}
	parents, taps = map[string]string{}, map[string]string{}
	for _, s := range list {
		x, _ := s.GetXMLDesc(0)
		var def libvirtxml.DomainSnapshot
		if err := def.Unmarshal(x); err != nil {
			t.Fatal(err)
		}
		parents[def.Name] = ""
		if def.Parent != nil {
			parents[def.Name] = def.Parent.Name
		}
		if cur, _ := s.IsCurrent(0); cur {
			current = def.Name
		}
		taps[def.Name] = tapOf(t, def.Domain)
		s.Free()
	}
	return parents, current, taps
}

func definedOn(t *testing.T, conn *libvirt.Connect, name string) bool {
	t.Helper()
	dom, err := conn.LookupDomainByName(name)
	if err != nil {
		return false
	}
	dom.Free()
	return true
}

func TestDefineOnCarriesTheDefinitionAndSnapshots(t *testing.T) {
	ctx, h, conns := coldHosts(t)
	const name = "bureau-cold"
	coldTestDomain(t, conns["one"], name, "bd-one")
	wantParents := map[string]string{"s1": "", "s2": "s1", "s3": "s2", "s4": "s1"}

	if err := h.DefineOn(ctx, name, "one", "two", "bd-two", nil); err != nil {
		t.Fatal(err)
	}
	dom, err := conns["two"].LookupDomainByName(name)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := dom.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE)
	uuid, _ := dom.GetUUIDString()
	dom.Free()
	var def libvirtxml.Domain
	def.Unmarshal(x)
	if tap := tapOf(t, &def); tap != "bd-two" || uuid != "0a6f4c4e-2b55-4d1f-9d1e-5d7c0c6b2a11" {
		t.Errorf("on two: tap %s, uuid %s", tap, uuid)
	}
	parents, current, taps := snapshotsOn(t, conns["two"], name)
	if len(parents) != 4 || current != "s3" {
		t.Errorf("on two: snapshots %v, current %q", parents, current)
	}
	for s, p := range wantParents {
		if parents[s] != p || taps[s] != "bd-two" {
			t.Errorf("snapshot %s on two: parent %q tap %q, want %q bd-two", s, parents[s], taps[s], p)
		}
	}
	// from untouched.
	if parents, current, taps := snapshotsOn(t, conns["one"], name); len(parents) != 4 || current != "s3" || taps["s2"] != "bd-one" {
		t.Errorf("on one after: %v %q %v", parents, current, taps)
	}

	// Already there: refused, and left as it is.
	if err := h.DefineOn(ctx, name, "one", "two", "bd-x", nil); !errors.Is(err, os.ErrExist) {
		t.Errorf("defined twice: %v", err)
	}
	if _, _, taps := snapshotsOn(t, conns["two"], name); taps["s1"] != "bd-two" {
		t.Errorf("the refused define changed two: %v", taps)
	}

	// UndefineOn: gone with its snapshots; again, and a running one.
	if err := h.UndefineOn(ctx, name, "one"); err != nil {
		t.Fatal(err)
	}
	if definedOn(t, conns["one"], name) {
		t.Error("still defined on one")
	}
	if err := h.UndefineOn(ctx, name, "one"); err != nil {
		t.Errorf("undefine where it is not: %v", err)
	}
	// The other way, two → local with its tap kept; then it runs there.
	if err := h.DefineOn(ctx, name, "two", "", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, current, taps := snapshotsOn(t, conns["local"], name); current != "s3" || taps["s4"] != "bd-two" {
		t.Errorf("on local: current %q, taps %v", current, taps)
	}
	dom, _ = conns["local"].LookupDomainByName(name)
	if err := dom.Create(); err != nil {
		t.Fatal(err)
	}
	dom.Free()
	if err := h.UndefineOn(ctx, name, "local"); !errors.Is(err, desktop.ErrUnavailable) || !strings.Contains(err.Error(), "running") {
		t.Errorf("undefine a running domain: %v", err)
	}
	if err := h.DefineOn(ctx, name, "local", "one", "", nil); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("a running domain moved cold: %v", err)
	}
	if definedOn(t, conns["one"], name) {
		t.Error("a refused move defined it")
	}
}

func TestDefineOnRefusals(t *testing.T) {
	ctx, h, conns := coldHosts(t)
	const name = "bureau-cold"
	if err := h.DefineOn(ctx, name, "one", "two", "", nil); !errors.Is(err, link.ErrNoDomain) {
		t.Errorf("no such domain: %v", err)
	}
	if err := h.DefineOn(ctx, name, "", "local", "", nil); err == nil {
		t.Error("to its own host: no error")
	}
	if err := h.DefineOn(ctx, name, "one", "three", "", nil); !errors.Is(err, desktop.ErrHostGone) {
		t.Errorf("an unknown host: %v", err)
	}
	if err := h.UndefineOn(ctx, name, "three"); !errors.Is(err, desktop.ErrHostGone) {
		t.Errorf("undefine on an unknown host: %v", err)
	}
	// A domain with two NICs cannot get one tap: nothing made on two.
	coldTestDomain(t, conns["one"], name, "bd-one")
	dom, _ := conns["one"].LookupDomainByName(name)
	x, _ := dom.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE)
	x = strings.Replace(x, "</devices>", "<interface type='ethernet'><target dev='bd-other'/></interface></devices>", 1)
	if d, err := conns["one"].DomainDefineXML(x); err != nil {
		t.Fatal(err)
	} else {
		d.Free()
	}
	dom.Free()
	if err := h.DefineOn(ctx, name, "one", "two", "bd-two", nil); err == nil || !strings.Contains(err.Error(), "network interfaces") {
		t.Errorf("two NICs: %v", err)
	}
	if definedOn(t, conns["two"], name) {
		t.Error("a refused move defined it")
	}
}

// TestDefineOnRemovesWhatItMadeWhenTheSaveImageFails: the test driver
// keeps a managed save image without a file, so its copy fails after
// the domain and its snapshots were defined on two; they go, and the
// transient pool on the save dirs with them.
func TestDefineOnRemovesWhatItMadeWhenTheSaveImageFails(t *testing.T) {
	ctx, h, conns := coldHosts(t)
	const name = "bureau-cold"
	coldTestDomain(t, conns["one"], name, "bd-one")
	dom, _ := conns["one"].LookupDomainByName(name)
	defer dom.Free()
	if err := dom.Create(); err != nil {
		t.Fatal(err)
	}
	if err := dom.ManagedSave(0); err != nil {
		t.Fatal(err)
	}
	var reports int
	err := h.DefineOn(ctx, name, "one", "two", "bd-two", func(int64, int64) { reports++ })
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), managedSavePath(name)) {
		t.Fatalf("DefineOn: %v, want the save image missing", err)
	}
	t.Log(err)
	if definedOn(t, conns["two"], name) {
		t.Error("the failed move left the domain on two")
	}
	for _, host := range []string{"one", "two"} {
		if pl, err := conns[host].LookupStoragePoolByName(pools.PoolName(managedSaveDir)); err == nil {
			pl.Free()
			t.Errorf("the save dir's pool is left on %s", host)
		}
	}
	if has, _ := dom.HasManagedSaveImage(0); !has {
		t.Error("one lost its managed save image")
	}
	if parents, _, _ := snapshotsOn(t, conns["one"], name); len(parents) != 4 {
		t.Errorf("one lost its snapshots: %v", parents)
	}
	// An existing persistent pool on the save dir is used and kept.
	px, _ := (&libvirtxml.StoragePool{Type: "dir", Name: "saves", Target: &libvirtxml.StoragePoolTarget{Path: managedSaveDir,
		Permissions: &libvirtxml.StoragePoolTargetPermissions{Mode: "0711", Owner: "0", Group: "0"}}}).Marshal()
	pl, err := conns["two"].StoragePoolDefineXML(px, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Free()
	if err := pl.Create(0); err != nil {
		t.Fatal(err)
	}
	if err := h.DefineOn(ctx, name, "one", "two", "bd-two", nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("again: %v", err)
	}
	if active, _ := pl.IsActive(); !active {
		t.Error("a pool bureau did not make was stopped")
	}
}

// TestCopyFileArgumentsAndEnds: what is refused before any byte moves
// (the test driver has no volume sizes, nor streams).
func TestCopyFileArgumentsAndEnds(t *testing.T) {
	ctx, h, _ := coldHosts(t)
	dir := "/bureau-test/desktops/d1"
	for _, tc := range []struct{ from, to, path, want string }{
		{"", "local", dir + "/data.qcow2", "nothing to move"},
		{"one", "one", dir + "/data.qcow2", "nothing to move"},
		{"local", "two", "relative/data.qcow2", "absolute"},
		{"local", "three", dir + "/data.qcow2", "not one of bureau's hosts"},
		{"local", "two", dir + "/data.qcow2", "MakeDir"}, // no pool for the folder
	} {
		err := h.CopyFile(ctx, tc.from, tc.to, tc.path, 1000, 1000, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s %s: %v, want %q", tc.from, tc.to, tc.path, err, tc.want)
		}
	}
	if err := h.CopyFile(ctx, "local", "two", dir+"/x", -1, 0, nil); err == nil {
		t.Error("owner -1: no error")
	}

	// The folder's pool on both remote hosts; the source only on one.
	for _, host := range []string{"one", "two"} {
		f, err := h.Files(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.MakeDir(ctx, dir, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	f1, _ := h.Files(ctx, "one")
	if err := f1.CreateDataDisk(ctx, dir+"/data.qcow2", 4, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := h.CopyFile(ctx, "two", "local", dir+"/data.qcow2", 1000, 1000, nil); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "host two") {
		t.Errorf("no source: %v", err)
	}
	f2, _ := h.Files(ctx, "two")
	if err := f2.CreateDataDisk(ctx, dir+"/data.qcow2", 4, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := h.CopyFile(ctx, "one", "two", dir+"/data.qcow2", 1000, 1000, nil); !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), "host two") {
		t.Errorf("destination there: %v", err)
	}
}
