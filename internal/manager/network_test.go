package manager

import (
	"context"
	"database/sql"
	"errors"
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

func (f *fakeFirewall) Load(_ context.Context, p map[string]desktop.NetworkPolicy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policies = p
	return nil
}

func (f *fakeFirewall) Set(_ context.Context, id string, p desktop.NetworkPolicy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("nft: boom")
	}
	f.policies[id] = p
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
	h := newHarness(t, fakeDisks{})
	fw := &fakeFirewall{policies: map[string]desktop.NetworkPolicy{}}
	h.m.cfg.Firewall, h.m.cfg.Network, h.m.cfg.VMGroup = fw, "bureau", 64055
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
	if o, _ := h.m.Get(ctx, other.ID); o.VMUID == d.VMUID || o.VMUID == 0 {
		t.Errorf("two desktops share QEMU user %d", o.VMUID)
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
}

// TestLoadNetworkGivesOldDesktopsAUser: desktops made before QEMU ran
// unprivileged get a user of their own at start-up, and every desktop's
// rules are loaded.
func TestLoadNetworkGivesOldDesktopsAUser(t *testing.T) {
	h := newHarness(t, fakeDisks{})
	d := h.create(t, "old")
	h.settle(t, d.ID)
	db, err := sql.Open("sqlite", filepath.Join(h.dir, "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE desktops SET vm_uid=0`); err != nil {
		t.Fatal(err)
	}
	fw := &fakeFirewall{policies: map[string]desktop.NetworkPolicy{}}
	h.m.cfg.Firewall = fw
	if err := h.m.loadNetwork(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cur, _ := h.m.Get(context.Background(), d.ID); cur.VMUID < vmUIDBase {
		t.Errorf("old desktop's QEMU user = %d", cur.VMUID)
	}
	if _, ok := fw.get(d.ID); !ok {
		t.Error("rules of existing desktops not loaded")
	}
}
