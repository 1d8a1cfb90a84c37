package manager

import (
	"context"
	"database/sql"
	"errors"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// fakeFirewall records the policies the manager hands it.
type fakeFirewall struct {
	mu       sync.Mutex
	policies map[string]desktop.NetworkPolicy
	fail     bool
}

func (f *fakeFirewall) Load(_ context.Context, ds []*desktop.Desktop) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policies = map[string]desktop.NetworkPolicy{}
	for _, d := range ds {
		f.policies[d.ID] = d.Network
	}
	return nil
}

func (f *fakeFirewall) Set(_ context.Context, d *desktop.Desktop) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("nft: boom")
	}
	f.policies[d.ID] = d.Network
	return nil
}

// fakeAddresses records DHCP reservations by MAC.
type fakeAddresses struct {
	mu    sync.Mutex
	ips   map[string]string
	names map[string]string
}

func (f *fakeAddresses) Reserve(_ context.Context, mac, ip, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ips[mac] = ip
	if f.names == nil {
		f.names = map[string]string{}
	}
	f.names[mac] = name
	return nil
}

// reserved is mac's address and name ("" when it has none).
func (f *fakeAddresses) reserved(mac string) (ip, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ips[mac], f.names[mac]
}

func (f *fakeAddresses) Release(_ context.Context, mac string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ips, mac)
	return nil
}

func (f *fakeFirewall) Forget(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.policies, id)
	return nil
}

func (f *fakeFirewall) get(id string) (desktop.NetworkPolicy, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.policies[id]
	return p, ok
}

// TestNetworkPolicyLifecycle: a desktop's rules exist from its create (the
// VM's first packet), follow a change on the running desktop and go with
// the desktop; every desktop's QEMU gets its own user and the VM is
// defined on the desktops' network with its own tap.
func TestNetworkPolicyLifecycle(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	fw := &fakeFirewall{policies: map[string]desktop.NetworkPolicy{}}
	addrs := &fakeAddresses{ips: map[string]string{}}
	h.m.ident.firewall, h.m.defs.network, h.m.defs.group = fw, "bureau", 64055
	h.m.ident.addresses, h.m.ident.subnet = addrs, netip.MustParsePrefix("10.120.0.0/16")
	ctx := context.Background()

	deny := desktop.NetworkPolicy{DenyOut: []string{"198.51.100.0/24"}}
	d, err := h.m.Create(ctx, CreateRequest{Owner: "alice", Name: "n1", Actor: "test", Network: deny,
		Spec: desktop.Spec{VCPUs: 1, MemoryMiB: 1024, DataDiskGiB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := fw.get(d.ID); !ok || len(p.DenyOut) != 1 {
		t.Fatalf("no rules at create: %+v %v", p, ok)
	}
	d = h.settle(t, d.ID)
	vm := h.hv.defined[d.DomainName()]
	if vm.UID < vmUIDBase || vm.GID != 64055 || vm.Network != "bureau" || vm.Tap != desktop.TapName(d.ID) || vm.MAC != desktop.MAC(d.ID) {
		t.Errorf("VM config %+v", vm)
	}
	other := h.create(t, "n2")
	h.settle(t, other.ID)
	o, _ := h.m.Get(ctx, other.ID)
	if o.VMUID == d.VMUID || o.VMUID == 0 {
		t.Errorf("two desktops share QEMU user %d", o.VMUID)
	}
	ip, err := netip.ParseAddr(d.NetIP)
	if err != nil || !h.m.ident.subnet.Contains(ip) || d.NetIP == "10.120.0.1" || o.NetIP == d.NetIP {
		t.Errorf("addresses %q and %q: want one each on the subnet, not the gateway", d.NetIP, o.NetIP)
	}
	if addrs.ips[desktop.MAC(d.ID)] != d.NetIP {
		t.Errorf("DHCP reservations %v, want %s for %s", addrs.ips, d.NetIP, desktop.MAC(d.ID))
	}

	if _, err := h.m.SetNetworkPolicy(ctx, d.ID, desktop.NetworkPolicy{AllowOut: []string{"not a host"}}, "test"); err == nil {
		t.Error("invalid policy accepted")
	}
	allow := desktop.NetworkPolicy{AllowOut: []string{"10.99.0.0/24"}}
	got, err := h.m.SetNetworkPolicy(ctx, d.ID, allow, "test")
	if err != nil || len(got.Network.AllowOut) != 1 || len(got.Network.DenyOut) != 0 {
		t.Fatalf("set policy: %+v %v", got, err)
	}
	if p, _ := fw.get(d.ID); len(p.AllowOut) != 1 {
		t.Errorf("firewall not told: %+v", p)
	}
	// A firewall that cannot apply leaves the recorded policy as it was.
	fw.fail = true
	if _, err := h.m.SetNetworkPolicy(ctx, d.ID, deny, "test"); err == nil {
		t.Error("a policy the firewall refused was reported as set")
	}
	fw.fail = false
	if cur, _ := h.m.Get(ctx, d.ID); len(cur.Network.AllowOut) != 1 {
		t.Errorf("stored policy %+v after a failed apply", cur.Network)
	}

	if _, err := h.m.Delete(ctx, d.ID, "test", true); err != nil {
		t.Fatal(err)
	}
	if _, ok := fw.get(d.ID); ok {
		t.Error("a deleted desktop's rules are still applied")
	}
	if _, ok := addrs.ips[desktop.MAC(d.ID)]; ok {
		t.Error("a deleted desktop's address is still reserved")
	}
}

// TestLoadNetworkGivesOldDesktopsAUser: desktops made before QEMU ran
// unprivileged get a user of their own at start-up, and every desktop's
// rules are loaded.
func TestLoadNetworkGivesOldDesktopsAUser(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	d := h.create(t, "old")
	h.settle(t, d.ID)
	db, err := sql.Open("sqlite", filepath.Join(h.dir, "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE desktops SET vm_uid=0, net_ip=''`); err != nil {
		t.Fatal(err)
	}
	fw := &fakeFirewall{policies: map[string]desktop.NetworkPolicy{}}
	addrs := &fakeAddresses{ips: map[string]string{}}
	h.m.ident.firewall, h.m.ident.addresses, h.m.ident.subnet = fw, addrs, netip.MustParsePrefix("10.120.0.0/24")
	if err := h.m.ident.loadNetwork(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur, _ := h.m.Get(context.Background(), d.ID)
	if cur.VMUID < vmUIDBase || cur.NetIP == "" || addrs.ips[desktop.MAC(d.ID)] != cur.NetIP {
		t.Errorf("old desktop's QEMU user %d, address %q, reservations %v", cur.VMUID, cur.NetIP, addrs.ips)
	}
	if _, ok := fw.get(d.ID); !ok {
		t.Error("rules of existing desktops not loaded")
	}
}

// TestColdStartRedefines: a cold start takes the current definition, so a
// desktop made before bureau isolated desktops moves onto the desktops'
// network, with its own user, at its next start (its VM keeps its UUID:
// the definition is written without one).
func TestColdStartRedefines(t *testing.T) {
	h := newHarness(t, &fakeDisks{})
	ctx := context.Background()
	d := h.create(t, "old")
	h.settle(t, d.ID)
	if _, err := h.m.Stop(ctx, d.ID, "test", StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	h.m.defs.network, h.m.defs.group = "bureau-new", 4242
	if _, err := h.m.Start(ctx, d.ID, "test"); err != nil {
		t.Fatal(err)
	}
	h.settle(t, d.ID)
	h.hv.mu.Lock()
	vm := h.hv.defined[d.DomainName()]
	h.hv.mu.Unlock()
	if vm.Network != "bureau-new" || vm.GID != 4242 || vm.UUID != "" || vm.Tap != desktop.TapName(d.ID) {
		t.Errorf("definition at the cold start: %+v", vm)
	}
}
