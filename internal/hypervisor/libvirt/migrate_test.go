package libvirt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

func TestMigrationXMLRenamesTheTapAndListsWritableDisks(t *testing.T) {
	xml, err := DomainXML(testConfig(desktop.AccelTCG))
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

// TestMigrationEventsAreNotTheDesktopStopping replays what both hosts
// report for a migration and a cancelled one (libvirt 9.0, seen in e2e
// TestHost2Migrate: source suspended/migrated, stopped/migrated and no
// undefined; destination started/migrated, defined/added,
// resumed/migrated, or stopped/failed when aborted).
func TestMigrationEventsAreNotTheDesktopStopping(t *testing.T) {
	ev := func(e libvirt.DomainEventType, detail int) *libvirt.DomainEventLifecycle {
		return &libvirt.DomainEventLifecycle{Event: e, Detail: detail}
	}
	type step struct {
		ev   *libvirt.DomainEventLifecycle
		skip bool
	}
	for name, steps := range map[string][]step{
		"source": {
			{ev(libvirt.DOMAIN_EVENT_SUSPENDED, int(libvirt.DOMAIN_EVENT_SUSPENDED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_UNDEFINED, int(libvirt.DOMAIN_EVENT_UNDEFINED_REMOVED)), true},
			// Later, a real undefine is delivered.
			{ev(libvirt.DOMAIN_EVENT_UNDEFINED, int(libvirt.DOMAIN_EVENT_UNDEFINED_REMOVED)), false},
		},
		"source, its undefine long after": {
			{ev(libvirt.DOMAIN_EVENT_UNDEFINED, int(libvirt.DOMAIN_EVENT_UNDEFINED_REMOVED)), false},
		},
		"destination": {
			{ev(libvirt.DOMAIN_EVENT_STARTED, int(libvirt.DOMAIN_EVENT_STARTED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_DEFINED, int(libvirt.DOMAIN_EVENT_DEFINED_ADDED)), false}, // dropped by onLifecycle
			{ev(libvirt.DOMAIN_EVENT_RESUMED, int(libvirt.DOMAIN_EVENT_RESUMED_MIGRATED)), false},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_SHUTDOWN)), false},
		},
		"failed on the destination": {
			{ev(libvirt.DOMAIN_EVENT_STARTED, int(libvirt.DOMAIN_EVENT_STARTED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_FAILED)), true},
			{ev(libvirt.DOMAIN_EVENT_STARTED, int(libvirt.DOMAIN_EVENT_STARTED_BOOTED)), false},
			{ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_FAILED)), false},
		},
		"aborted on the source": {
			{ev(libvirt.DOMAIN_EVENT_SUSPENDED, int(libvirt.DOMAIN_EVENT_SUSPENDED_MIGRATED)), true},
			{ev(libvirt.DOMAIN_EVENT_RESUMED, int(libvirt.DOMAIN_EVENT_RESUMED_MIGRATED)), false},
			{ev(libvirt.DOMAIN_EVENT_SUSPENDED, int(libvirt.DOMAIN_EVENT_SUSPENDED_PAUSED)), false},
		},
	} {
		var m migrationEvents
		if name == "source, its undefine long after" {
			m.skip("bureau-a", ev(libvirt.DOMAIN_EVENT_STOPPED, int(libvirt.DOMAIN_EVENT_STOPPED_MIGRATED)))
			m.left["bureau-a"] = time.Now().Add(-leftWindow)
		}
		for i, s := range steps {
			if got := m.skip("bureau-a", s.ev); got != s.skip {
				t.Errorf("%s, step %d (%s): skip %v, want %v", name, i, s.ev, got, s.skip)
			}
			// Another domain's events are its own.
			if m.skip("bureau-b", ev(libvirt.DOMAIN_EVENT_UNDEFINED, 0)) {
				t.Errorf("%s, step %d: bureau-b's undefine skipped", name, i)
			}
		}
	}
}

// TestMigrateRefusesOnTheTestDriver: what cannot move is refused before
// any job starts; the test driver cannot migrate, so a job that fails
// leaves the domain running where it was.
func TestMigrateRefusesOnTheTestDriver(t *testing.T) {
	ctx, h := openTestDriver(t)
	h.SetRemotes(Remotes{
		Where: func(string) string { return "" },
		Hosts: func(context.Context) (map[string]string, error) {
			return map[string]string{"two": "test:///default"}, nil
		},
	})
	c := testConfig(desktop.AccelTCG)
	c.Name = "bureau-migrate"
	xml, _ := DomainXML(c)
	conn, _ := h.connect(ctx)
	dom, err := conn.DomainDefineXML(strings.Replace(xml, "type=\"qemu\"", "type=\"test\"", 1))
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	defer func() { dom.Destroy(); dom.Undefine(); dom.Free() }()
	opt := MigrateOptions{To: "two", Address: "127.0.0.1"}

	if _, err := h.Migrate(ctx, c.Name, opt); !errors.Is(err, ErrCannotMigrate) || !strings.Contains(err.Error(), "shutoff") {
		t.Errorf("shut off: %v", err)
	}
	if err := dom.Create(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Migrate(ctx, c.Name, MigrateOptions{To: "local", Address: "127.0.0.1"}); !errors.Is(err, ErrCannotMigrate) {
		t.Errorf("to its own host: %v", err)
	}
	if _, err := h.Migrate(ctx, c.Name, MigrateOptions{To: "two"}); err == nil {
		t.Error("no address: no error")
	}
	if _, err := h.Migrate(ctx, "bureau-none", opt); !errors.Is(err, ErrNoDomain) {
		t.Errorf("missing domain: %v", err)
	}
	snap, err := dom.CreateSnapshotXML("<domainsnapshot><name>s1</name></domainsnapshot>", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Migrate(ctx, c.Name, opt)
	t.Logf("with a snapshot: %v", err)
	if !errors.Is(err, ErrCannotMigrate) || !strings.Contains(err.Error(), "1 snapshot") {
		t.Errorf("with a snapshot: %v", err)
	}
	snap.Delete(0)
	snap.Free()

	var seen []MigrateProgress
	opt.Progress = func(p MigrateProgress) { seen = append(seen, p) }
	_, err = h.Migrate(ctx, c.Name, opt)
	t.Logf("the test driver's migration: %v", err)
	if err == nil || errors.Is(err, ErrCannotMigrate) {
		t.Errorf("migration on the test driver: %v", err)
	}
	if st, err := h.State(ctx, c.Name); err != nil || st != desktop.VMRunning {
		t.Errorf("after a failed migration: %s %v", st, err)
	}
	sizes, err := h.DiskSizes(ctx, c.Name)
	t.Logf("DiskSizes on the test driver: %v %v", sizes, err)
	if err != nil || len(sizes) != 2 || sizes["vda"] <= 0 || sizes["vdb"] <= 0 {
		t.Errorf("DiskSizes: %v %v", sizes, err)
	}
}
