package manager

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Firewall keeps the host's rules in step with desktops' network policies
// and addresses.
type Firewall interface {
	Load(ctx context.Context, ds []*desktop.Desktop) error
	Set(ctx context.Context, d *desktop.Desktop) error
	Forget(ctx context.Context, id string) error
}

// Addresses reserves desktops' addresses for their MACs in the desktops'
// network's DHCP.
type Addresses interface {
	Reserve(ctx context.Context, mac, ip, name string) error
	Release(ctx context.Context, mac string) error
}

// identities gives each desktop what sets it apart from the others: its
// QEMU user and address, its network rules and its address's DHCP
// reservation on its host (network.go), and in a guest restored from a
// template its own name, machine id and keys (identity.go), and its
// keyboard layout (keyboard.go). It holds the operation core and what
// those need beside it, each by the role it plays here.
type identities struct {
	ops   *runner
	store identityStore
	hosts remoteSites
	vms   identityVMs
	keys  keyFiles
	defs  vmConfigs
	clock clockSync
	log   *slog.Logger
	// From Config: the rules (Firewall) and DHCP (Addresses) of bureau's
	// own host, and the desktops' subnet there (Subnet).
	firewall  Firewall
	addresses Addresses
	subnet    netip.Prefix
}

// identityStore gives an older desktop its QEMU user and address, and
// reads desktops.
type identityStore interface {
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	SetVMIdentity(ctx context.Context, id string, uid int, ip string) error
}

// remoteSites reaches the site of a desktop's remote host, with its
// subnet, rules and DHCP (desktopHosts.site).
type remoteSites interface {
	site(ctx context.Context, d *desktop.Desktop) (*Site, error)
}

// identityVMs runs the identity and layout scripts in guests, grows a
// warm desktop's data disk and sets its clock.
type identityVMs interface {
	guestExec
	ResizeDisk(ctx context.Context, name, file string, bytes int64) error
	SyncGuestClock(ctx context.Context, name string) error
}

// keyFiles reads and removes the SSH keys a warm create keeps until the
// desktop's identity is applied (bureau's own host's files).
type keyFiles interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
	Remove(ctx context.Context, path string) error
}

// Desktops' QEMU users are drawn from [vmUIDBase, 2·vmUIDBase): far above
// any real or sub-uid range, below 2^31 so no tool reads them as negative.
// The store's unique index keeps two desktops from sharing one.
const vmUIDBase = 1 << 30

// templateUID runs template builds' VMs, which are not desktops.
const templateUID = vmUIDBase - 1

func newVMUID() int {
	return vmUIDBase + int(random32()%vmUIDBase)
}

// newNetIP draws an address for a desktop on the desktops' subnet (not the
// network's, the gateway's or the broadcast address); "" without one. The
// store's unique index keeps live desktops' addresses apart.
func (n *identities) newNetIP() string { return netIPOn(n.subnet) }

// netIPOn draws an address on subnet p ("" without one).
func netIPOn(p netip.Prefix) string {
	if !p.IsValid() || !p.Addr().Is4() || p.Bits() > 30 {
		return ""
	}
	hosts := uint32(1)<<(32-p.Bits()) - 3 // minus network, gateway, broadcast
	a := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(a[:]) + 2 + random32()%hosts
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a).String()
}

func random32() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// SetNetworkPolicy changes what a desktop may reach; a running desktop
// follows it at once (identities.SetNetworkPolicy).
func (m *Manager) SetNetworkPolicy(ctx context.Context, id string, p desktop.NetworkPolicy, actor string) (*desktop.Desktop, error) {
	return m.ident.SetNetworkPolicy(ctx, id, p, actor)
}

// SetNetworkPolicy changes what a desktop may reach; a running desktop
// follows it at once.
func (n *identities) SetNetworkPolicy(ctx context.Context, id string, p desktop.NetworkPolicy, actor string) (*desktop.Desktop, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d, err := n.ops.changeSettings(ctx, id, func(ctx context.Context, d *desktop.Desktop) error {
		d.Network = p
		fw, _, err := n.netOf(ctx, d)
		if err != nil || fw == nil {
			return err
		}
		return fw.Set(ctx, d)
	})
	if err != nil {
		return nil, err
	}
	n.ops.event(ctx, id, "network_policy_set", actor, "network policy set: %s", policyText(p))
	return d, nil
}

func policyText(p desktop.NetworkPolicy) string {
	if p.Default() {
		return "default (the internet, nothing private)"
	}
	var parts []string
	if len(p.AllowOut) > 0 {
		parts = append(parts, "allow "+strings.Join(p.AllowOut, ", "))
	}
	if len(p.DenyOut) > 0 {
		parts = append(parts, "deny "+strings.Join(p.DenyOut, ", "))
	}
	if p.DenyDNS {
		parts = append(parts, "no DNS")
	}
	return strings.Join(parts, "; ")
}

// loadNetwork gives desktops made before bureau isolated them their own
// QEMU user and address, reserves every desktop's address and loads every
// desktop's network rules (at start-up).
func (n *identities) loadNetwork(ctx context.Context) error {
	ds, err := n.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		return err
	}
	ds = slices.DeleteFunc(ds, (*desktop.Desktop).Remote) // their hosts' preparers load theirs
	for i, d := range ds {
		if d.VMUID == 0 || (d.NetIP == "" && n.subnet.IsValid()) {
			if ds[i], err = n.giveIdentity(ctx, d.ID); err != nil {
				return err
			}
		}
		if err := n.reserveAddress(ctx, ds[i]); err != nil {
			return err
		}
	}
	if n.firewall == nil {
		return nil
	}
	return n.firewall.Load(ctx, ds)
}

func (n *identities) giveIdentity(ctx context.Context, id string) (*desktop.Desktop, error) {
	var err error
	for range 5 {
		if err = n.store.SetVMIdentity(ctx, id, newVMUID(), n.newNetIP()); err == nil {
			return n.store.GetDesktop(ctx, id)
		}
	}
	return nil, fmt.Errorf("give desktop %s a QEMU user and address: %w", id, err)
}

// armNetwork reserves a new desktop's address and applies its rules, so
// both hold before the VM's first packet. A spare's address was reserved
// when it was made (reserved): the desktop's name is put on it once it
// runs (renameAddress).
func (n *identities) armNetwork(ctx context.Context, d *desktop.Desktop, reserved bool) error {
	if !reserved {
		if err := n.reserveAddress(ctx, d); err != nil {
			return err
		}
	}
	fw, _, err := n.netOf(ctx, d)
	if err != nil || fw == nil {
		return err
	}
	return fw.Set(ctx, d)
}

// netOf is the firewall and DHCP of d's host (nil when not set).
func (n *identities) netOf(ctx context.Context, d *desktop.Desktop) (Firewall, Addresses, error) {
	if !d.Remote() {
		return n.firewall, n.addresses, nil
	}
	s, err := n.hosts.site(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	return s.Firewall, s.Addresses, nil
}

// subnetOf is the desktops' subnet on d's host.
func (n *identities) subnetOf(ctx context.Context, d *desktop.Desktop) (netip.Prefix, error) {
	if !d.Remote() {
		return n.subnet, nil
	}
	s, err := n.hosts.site(ctx, d)
	if err != nil {
		return netip.Prefix{}, err
	}
	return s.Subnet, nil
}

// reserveAddress tells DHCP which address the desktop's MAC gets.
func (n *identities) reserveAddress(ctx context.Context, d *desktop.Desktop) error {
	_, addrs, err := n.netOf(ctx, d)
	if err != nil {
		return err
	}
	if addrs == nil || d.NetIP == "" {
		return nil
	}
	if err := addrs.Reserve(ctx, desktop.MAC(d.ID), d.NetIP, d.Name); err != nil {
		return fmt.Errorf("reserve %s for desktop %s: %w", d.NetIP, d.ID, err)
	}
	return nil
}

// releaseAddress drops the DHCP reservation of d's address, if it has one.
func (n *identities) releaseAddress(ctx context.Context, d *desktop.Desktop) error {
	_, addrs, err := n.netOf(ctx, d)
	if err != nil {
		return err
	}
	if addrs == nil || d.NetIP == "" {
		return nil
	}
	return addrs.Release(ctx, desktop.MAC(d.ID))
}

// dropAddressAndRules forgets a deleted desktop's address and rules.
func (n *identities) dropAddressAndRules(ctx context.Context, d *desktop.Desktop) {
	if fw, _, err := n.netOf(ctx, d); err != nil {
		n.log.Error("dropping a deleted desktop's network rules", "desktop", d.ID, "host", d.Host, "err", err)
	} else if fw != nil {
		if err := fw.Forget(ctx, d.ID); err != nil {
			n.log.Error("dropping a deleted desktop's network rules", "desktop", d.ID, "err", err)
		}
	}
	if err := n.releaseAddress(ctx, d); err != nil {
		n.log.Error("releasing a deleted desktop's address", "desktop", d.ID, "err", err)
	}
}
