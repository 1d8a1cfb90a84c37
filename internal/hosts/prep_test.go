package hosts

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// fakePrep fails while fail is set and counts what it was asked.
type fakePrep struct {
	mu       sync.Mutex
	fail     error
	prepared []string
	links    map[Link]int
	forgot   []string
}

func (p *fakePrep) Prepare(_ context.Context, h *Host, link Link) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepared = append(p.prepared, h.Name+" "+h.SSH.Address+" "+h.Network.Bridge+" "+h.Network.Subnet)
	if p.links == nil {
		p.links = map[Link]int{}
	}
	p.links[link]++
	return p.fail
}

func (p *fakePrep) Forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgot = append(p.forgot, name)
}

func (p *fakePrep) set(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = err
}

func TestAddPreparesTheHostAndRefusesOneThatCannotBeReady(t *testing.T) {
	r, st, n := newTestRegistry(t, false)
	p := &fakePrep{fail: &InvalidError{"ssh_host_key", "the host offered ssh-ed25519 AAAA…; pin it"}}
	r.Prep, r.DefaultNetwork = p, Network{Bridge: "bureau0", Subnet: "10.120.0.0/16"}
	ctx := context.Background()
	sshURI := "qemu+ssh://admin@10.0.0.9/system"
	n.set(sshURI, true)
	var inv *InvalidError
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: sshURI}); !errors.As(err, &inv) || inv.Field != "ssh_host_key" {
		t.Fatalf("add with a preparation failing: %v", err)
	}
	if _, err := st.GetHost(ctx, "two"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a host that could not be made ready was recorded: %v", err)
	}
	if n.closed != 1 || len(p.forgot) != 1 {
		t.Errorf("refused add: %d links closed, forgot %v", n.closed, p.forgot)
	}
	p.set(nil)
	h, err := r.Add(ctx, AddRequest{Name: "two", URI: sshURI, Network: Network{Bridge: "bureau1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Ready || h.SSH.Address != "admin@10.0.0.9:22" || h.Network != (Network{"bureau1", "10.120.0.0/16"}) {
		t.Errorf("added %+v: SSH from the URI, the bridge asked, the default subnet", h)
	}
	if got := p.prepared[len(p.prepared)-1]; got != "two admin@10.0.0.9:22 bureau1 10.120.0.0/16" {
		t.Errorf("prepared %q", got)
	}
	// Checks over the same link do not prepare again.
	before := len(p.prepared)
	r.CheckAll(ctx)
	r.CheckAll(ctx)
	if len(p.prepared) != before {
		t.Errorf("prepared %d more times over a link already made ready", len(p.prepared)-before)
	}
	// A lost and regained host is prepared again over its new link; a
	// failure shows as not ready, with the reason, and is retried.
	n.set(sshURI, false)
	r.CheckAll(ctx)
	n.set(sshURI, true)
	p.set(errors.New("nft: not found on the host"))
	r.CheckAll(ctx)
	two, _ := st.GetHost(ctx, "two")
	if two.State != StateUp || two.Ready || two.ReadyError != "nft: not found on the host" {
		t.Errorf("back but not ready: %+v", two)
	}
	p.set(nil)
	r.CheckAll(ctx)
	if two, _ = st.GetHost(ctx, "two"); !two.Ready || two.ReadyError != "" {
		t.Errorf("ready again: %+v", two)
	}
	if len(p.links) != 3 {
		t.Errorf("prepared over %d links, want the refused add's, the add's and the reconnected one", len(p.links))
	}
	local, _ := st.GetHost(ctx, LocalName)
	if !local.Ready {
		t.Errorf("the local host is made ready at start-up: %+v", local)
	}
	if err := r.Remove(ctx, "two"); err != nil || p.forgot[len(p.forgot)-1] != "two" {
		t.Errorf("remove: %v, forgot %v", err, p.forgot)
	}
}

func TestValidateNetwork(t *testing.T) {
	for _, c := range []struct {
		n     Network
		field string
	}{
		{Network{Bridge: "bureau1", Subnet: "10.121.0.0/16"}, ""},
		{Network{}, ""},
		{Network{Bridge: "a-very-long-bridge-name"}, "bridge"},
		{Network{Bridge: "br 0"}, "bridge"},
		{Network{Subnet: "10.121.0.1/16"}, "subnet"},
		{Network{Subnet: "10.0.0.0/30"}, "subnet"},
		{Network{Subnet: "fd00::/64"}, "subnet"},
		{Network{Subnet: "nonsense"}, "subnet"},
	} {
		err := ValidateRequest(AddRequest{Name: "two", URI: uri2, Network: c.n})
		var inv *InvalidError
		if c.field == "" && err != nil || c.field != "" && (!errors.As(err, &inv) || inv.Field != c.field) {
			t.Errorf("%+v: %v, want field %q", c.n, err, c.field)
		}
	}
	if got := SSHAddressOf("qemu+ssh://[fd00::9]:2222/system"); got != "root@[fd00::9]:2222" {
		t.Errorf("SSH address of an IPv6 URI: %q", got)
	}
	if got := SSHAddressOf("qemu+tls://h/system"); got != "" {
		t.Errorf("SSH address of a TLS URI: %q", got)
	}
}

func TestAHostWithDesktopsStays(t *testing.T) {
	r, _, _ := newTestRegistry(t, false)
	ctx := context.Background()
	if _, err := r.Add(ctx, AddRequest{Name: "two", URI: uri2}); err != nil {
		t.Fatal(err)
	}
	n, removed := 2, ""
	r.Desktops = func(_ context.Context, host string) (int, error) { return n, nil }
	r.OnRemove = func(name string) { removed = name }
	if err := r.Remove(ctx, "two"); !errors.Is(err, ErrInUse) || removed != "" {
		t.Errorf("remove a host with 2 desktops: %v (told %q)", err, removed)
	}
	n = 0
	if err := r.Remove(ctx, "two"); err != nil || removed != "two" {
		t.Errorf("remove a host without desktops: %v (told %q)", err, removed)
	}
}
