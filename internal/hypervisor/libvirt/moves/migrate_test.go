package moves

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/domains"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/guestchan"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/libvirttest"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

func TestMigrationXMLRenamesTheTapAndListsWritableDisks(t *testing.T) {
	xml, err := domains.DomainXML(libvirttest.VMConfig(desktop.AccelTCG))
	if err != nil {
		t.Fatal(err)
	}
	same, disks, err := migrationXML(xml, "")
	if err != nil || same != xml {
		t.Fatalf("no tap: %v, xml changed: %v", err, same != xml)
	}
	if !slices.Equal(disks, []string{"vda", "vdb"}) {
		t.Errorf("copied disks %v, want vda vdb (not the read-only seed)", disks)
	}
	out, disks, err := migrationXML(xml, "bd-abc123-m")
	if err != nil || !slices.Equal(disks, []string{"vda", "vdb"}) {
		t.Fatalf("%v %v", disks, err)
	}
	var got, want libvirtxml.Domain
	if err := got.Unmarshal(out); err != nil {
		t.Fatal(err)
	}
	want.Unmarshal(xml)
	if dev := got.Devices.Interfaces[0].Target.Dev; dev != "bd-abc123-m" {
		t.Errorf("tap %q", dev)
	}
	// Nothing else changed.
	got.Devices.Interfaces[0].Target.Dev = "bd-abc123"
	a, _ := got.Marshal()
	b, _ := want.Marshal()
	if a != b {
		t.Errorf("the rewrite changed more than the tap:\n%s", a)
	}
}

func TestMigrationXMLTapNeedsOneInterface(t *testing.T) {
	xml := `<domain type="qemu"><name>bureau-x</name><devices>
<disk type="file" device="disk"><source file="/d/os.qcow2"/><target dev="vda"/></disk>
<disk type="file" device="cdrom"><target dev="hdc"/></disk></devices></domain>`
	if _, _, err := migrationXML(xml, "tap1"); err == nil || !strings.Contains(err.Error(), "0 network interfaces") {
		t.Errorf("tap without a NIC: %v", err)
	}
	if _, disks, err := migrationXML(xml, ""); err != nil || !slices.Equal(disks, []string{"vda"}) {
		t.Errorf("an empty cdrom is not copied: %v %v", disks, err)
	}
}

func TestProgressPhases(t *testing.T) {
	for want, st := range map[string]libvirt.DomainJobInfo{
		"setup":  {},
		"disks":  {DiskTotal: 100, DiskProcessed: 10},
		"memory": {DiskTotal: 100, DiskProcessed: 100, MemProcessed: 1, MemTotal: 10, TimeElapsed: 1500},
	} {
		p := progressOf(&st)
		if p.Phase != want {
			t.Errorf("%+v: phase %s, want %s", st, p.Phase, want)
		}
		if want == "memory" && (p.Elapsed.Milliseconds() != 1500 || p.MemTotal != 10 || p.DiskTotal != 100) {
			t.Errorf("%+v", p)
		}
	}
}

// TestMigrateRefusesOnTheTestDriver: what cannot move is refused before
// any job starts; the test driver cannot migrate, so a job that fails
// leaves the domain running where it was.
func TestMigrateRefusesOnTheTestDriver(t *testing.T) {
	ctx, c := libvirttest.Open(t)
	h := New(c)
	c.SetRemotes(link.Remotes{
		Where: func(string) string { return "" },
		Hosts: func(context.Context) (map[string]string, error) {
			return map[string]string{"two": "test:///default"}, nil
		},
	})
	vm := libvirttest.VMConfig(desktop.AccelTCG)
	vm.Name = "bureau-migrate"
	xml, _ := domains.DomainXML(vm)
	conn, _ := c.Connect(ctx)
	dom, err := conn.DomainDefineXML(strings.Replace(xml, "type=\"qemu\"", "type=\"test\"", 1))
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	defer func() { dom.Destroy(); dom.Undefine(); dom.Free() }()
	opt := MigrateOptions{To: "two", Address: "127.0.0.1"}

	if _, err := h.Migrate(ctx, vm.Name, opt); !errors.Is(err, ErrCannotMigrate) || !strings.Contains(err.Error(), "shutoff") {
		t.Errorf("shut off: %v", err)
	}
	if err := dom.Create(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Migrate(ctx, vm.Name, MigrateOptions{To: "local", Address: "127.0.0.1"}); !errors.Is(err, ErrCannotMigrate) {
		t.Errorf("to its own host: %v", err)
	}
	if _, err := h.Migrate(ctx, vm.Name, MigrateOptions{To: "two"}); err == nil {
		t.Error("no address: no error")
	}
	if _, err := h.Migrate(ctx, "bureau-none", opt); !errors.Is(err, link.ErrNoDomain) {
		t.Errorf("missing domain: %v", err)
	}
	snap, err := dom.CreateSnapshotXML("<domainsnapshot><name>s1</name></domainsnapshot>", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Migrate(ctx, vm.Name, opt)
	t.Logf("with a snapshot: %v", err)
	if !errors.Is(err, ErrCannotMigrate) || !strings.Contains(err.Error(), "1 snapshot") {
		t.Errorf("with a snapshot: %v", err)
	}
	snap.Delete(0)
	snap.Free()

	var seen []MigrateProgress
	opt.Progress = func(p MigrateProgress) { seen = append(seen, p) }
	_, err = h.Migrate(ctx, vm.Name, opt)
	t.Logf("the test driver's migration: %v", err)
	if err == nil || errors.Is(err, ErrCannotMigrate) {
		t.Errorf("migration on the test driver: %v", err)
	}
	if st, err := domains.New(c, guestchan.NewAgent(c)).State(ctx, vm.Name); err != nil || st != desktop.VMRunning {
		t.Errorf("after a failed migration: %s %v", st, err)
	}
	sizes, err := h.DiskSizes(ctx, vm.Name)
	t.Logf("DiskSizes on the test driver: %v %v", sizes, err)
	if err != nil || len(sizes) != 2 || sizes["vda"] <= 0 || sizes["vdb"] <= 0 {
		t.Errorf("DiskSizes: %v %v", sizes, err)
	}
}
