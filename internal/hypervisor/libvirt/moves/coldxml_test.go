package moves

import (
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"
)

const coldDomainXML = `<domain type='qemu'>
  <name>bureau-cold</name>
  <uuid>6f1c1a38-6a0e-4c53-9d51-1b1f7c0b6c11</uuid>
  <memory unit='KiB'>131072</memory>
  <devices>
    <interface type='ethernet'><mac address='02:11:22:33:44:55'/><target dev='bd-one' managed='yes'/><model type='virtio'/></interface>
  </devices>
</domain>`

// tapOf is the target device of a definition's one NIC.
func tapOf(t *testing.T, dom *libvirtxml.Domain) string {
	t.Helper()
	if dom == nil || dom.Devices == nil || len(dom.Devices.Interfaces) != 1 || dom.Devices.Interfaces[0].Target == nil {
		t.Fatalf("no single NIC with a target in %+v", dom)
	}
	return dom.Devices.Interfaces[0].Target.Dev
}

func TestDomainWithTapRenamesOnlyTheTap(t *testing.T) {
	x, err := domainWithTap(coldDomainXML, "bd-two")
	if err != nil {
		t.Fatal(err)
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(x); err != nil {
		t.Fatal(err)
	}
	if tap := tapOf(t, &dom); tap != "bd-two" {
		t.Errorf("tap %q, want bd-two", tap)
	}
	nic := dom.Devices.Interfaces[0]
	if dom.Name != "bureau-cold" || dom.UUID != "6f1c1a38-6a0e-4c53-9d51-1b1f7c0b6c11" || nic.MAC.Address != "02:11:22:33:44:55" ||
		nic.Target.Managed != "yes" || nic.Model.Type != "virtio" {
		t.Errorf("more than the tap changed:\n%s", x)
	}
	if same, err := domainWithTap(coldDomainXML, ""); err != nil || same != coldDomainXML {
		t.Errorf("no tap: %v, changed to\n%s", err, same)
	}
	none := `<domain type='qemu'><name>bureau-cold</name><memory>131072</memory><devices/></domain>`
	if _, err := domainWithTap(none, "bd-two"); err != nil {
		t.Errorf("a domain without a NIC: %v", err)
	}
	two := strings.Replace(coldDomainXML, "</devices>", `<interface type='ethernet'><target dev='x'/></interface></devices>`, 1)
	if _, err := domainWithTap(two, "bd-two"); err == nil || !strings.Contains(err.Error(), "2 network interfaces") {
		t.Errorf("two NICs: %v", err)
	}
	if _, err := domainWithTap("<domain", "bd-two"); err == nil {
		t.Error("bad XML accepted")
	}
}

func TestSnapshotWithTapRenamesBothDefinitions(t *testing.T) {
	inner := coldDomainXML[strings.Index(coldDomainXML, "<name>"):strings.LastIndex(coldDomainXML, "</domain>")]
	x := `<domainsnapshot><name>s2</name><state>running</state><parent><name>s1</name></parent>
<creationTime>1700000000</creationTime><memory snapshot='internal'/>` + coldDomainXML +
		`<inactiveDomain type='qemu'>` + inner + `</inactiveDomain><cookie><cpu mode='custom'/></cookie></domainsnapshot>`
	s, err := snapshotWithTap(x, "bd-two", true)
	if err != nil {
		t.Fatal(err)
	}
	if s.name != "s2" || s.parent != "s1" || !s.current {
		t.Errorf("read %+v", s)
	}
	var got libvirtxml.DomainSnapshot
	if err := got.Unmarshal(s.xml); err != nil {
		t.Fatal(err)
	}
	if tap := tapOf(t, got.Domain); tap != "bd-two" {
		t.Errorf("<domain> tap %q", tap)
	}
	if got.InactiveDomain == nil {
		t.Fatalf("<inactiveDomain> lost:\n%s", s.xml)
	}
	if tap := tapOf(t, &got.InactiveDomain.Domain); tap != "bd-two" {
		t.Errorf("<inactiveDomain> tap %q", tap)
	}
	if got.CreationTime != "1700000000" || got.State != "running" || got.Memory == nil || got.Memory.Snapshot != "internal" ||
		got.Cookie == nil || !strings.Contains(got.Cookie.XML, "cpu") {
		t.Errorf("more than the tap changed:\n%s", s.xml)
	}
	root, err := snapshotWithTap(`<domainsnapshot><name>s1</name></domainsnapshot>`, "bd-two", false)
	if err != nil || root.parent != "" || root.current {
		t.Errorf("a root without a domain: %+v %v", root, err)
	}
}

func TestParentsFirst(t *testing.T) {
	snap := func(name, parent string) coldSnapshot { return coldSnapshot{name: name, parent: parent} }
	names := func(ss []coldSnapshot) string {
		var n []string
		for _, s := range ss {
			n = append(n, s.name)
		}
		return strings.Join(n, " ")
	}
	// a ─ b ─ d, a ─ c; e alone; listed children first.
	got, err := parentsFirst([]coldSnapshot{snap("d", "b"), snap("c", "a"), snap("e", ""), snap("b", "a"), snap("a", "")})
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); n != "a b c d e" {
		t.Errorf("order %q", n)
	}
	pos := map[string]int{}
	for i, s := range got {
		pos[s.name] = i
	}
	for _, s := range got {
		if s.parent != "" && pos[s.parent] > pos[s.name] {
			t.Errorf("%s before its parent %s", s.name, s.parent)
		}
	}
	if got, err := parentsFirst(nil); err != nil || len(got) != 0 {
		t.Errorf("none: %v %v", got, err)
	}
	if _, err := parentsFirst([]coldSnapshot{snap("b", "a")}); err == nil || !strings.Contains(err.Error(), "parent a") {
		t.Errorf("missing parent: %v", err)
	}
	if _, err := parentsFirst([]coldSnapshot{snap("a", "b"), snap("b", "a")}); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("loop: %v", err)
	}
	if _, err := parentsFirst([]coldSnapshot{snap("a", ""), snap("a", "")}); err == nil {
		t.Error("a name twice: no error")
	}
}
