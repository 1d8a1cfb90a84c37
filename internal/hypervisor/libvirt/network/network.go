// Package network is the desktops' libvirt network on a host: its
// definition (NetworkConfig, EnsureNetwork), their addresses in its DHCP
// (Addresses), and a running desktop's NIC (BounceLink, bounce.go).
package network

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// NetworkConfig is the libvirt NAT network desktops join.
type NetworkConfig struct {
	Name    string       // libvirt network name, e.g. "bureau"
	Bridge  string       // host bridge device, e.g. "bureau0"
	Subnet  netip.Prefix // e.g. 10.120.0.0/16; the host takes the first address
	Gateway netip.Addr
}

// NewNetworkConfig derives the gateway (the subnet's first address) from
// the subnet.
func NewNetworkConfig(name, bridge string, subnet netip.Prefix) (NetworkConfig, error) {
	subnet = subnet.Masked()
	if !subnet.Addr().Is4() || subnet.Bits() > 28 || subnet.Bits() < 8 {
		return NetworkConfig{}, fmt.Errorf("desktop network %s: want an IPv4 subnet between /8 and /28", subnet)
	}
	return NetworkConfig{Name: name, Bridge: bridge, Subnet: subnet, Gateway: subnet.Addr().Next()}, nil
}

// NetworkXML renders the network: NAT to the outside, DHCP for the whole
// subnet, DNS from libvirt's dnsmasq on the gateway.
func NetworkXML(c NetworkConfig) (string, error) {
	first := c.Gateway.Next()
	last := lastAddr(c.Subnet).Prev()
	n := libvirtxml.Network{
		Name:    c.Name,
		Forward: &libvirtxml.NetworkForward{Mode: "nat"},
		Bridge:  &libvirtxml.NetworkBridge{Name: c.Bridge, STP: "off", Delay: "0"},
		IPs: []libvirtxml.NetworkIP{{
			Address: c.Gateway.String(),
			Prefix:  uint(c.Subnet.Bits()),
			DHCP:    &libvirtxml.NetworkDHCP{Ranges: []libvirtxml.NetworkDHCPRange{{Start: first.String(), End: last.String()}}},
		}},
	}
	return n.Marshal()
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Network is the desktops' network on bureau's own host and their NICs on
// every host.
type Network struct {
	link *link.Conn
}

// New is the network of c's host and the NICs of the domains c routes to.
func New(c *link.Conn) *Network { return &Network{link: c} }

// EnsureNetwork defines, starts and marks for autostart the desktops'
// network when it is missing or down. An existing network of that name on
// another subnet is an error, not something to redefine under running VMs.
func (nw *Network) EnsureNetwork(ctx context.Context, c NetworkConfig) error {
	want, err := NetworkXML(c)
	if err != nil {
		return err
	}
	conn, err := nw.link.Connect(ctx)
	if err != nil {
		return err
	}
	defined, err := link.Call(ctx, func() (bool, error) { return Ensure(conn, c, want) })
	if defined {
		nw.link.Log().Info("defined the desktops' network", "network", c.Name, "bridge", c.Bridge, "subnet", c.Subnet)
	}
	return err
}

// DesktopNetwork is the name of bureau's desktop network on every host
// (domains name their network).
const DesktopNetwork = "bureau"

// Ensure defines (reported by defined), starts and autostarts c, whose
// XML is want, on conn (within the caller's call).
func Ensure(conn *libvirt.Connect, c NetworkConfig, want string) (defined bool, err error) {
	net, err := conn.LookupNetworkByName(c.Name)
	if err != nil {
		if net, err = conn.NetworkDefineXML(want); err != nil {
			return false, fmt.Errorf("define network %s: %w", c.Name, link.Message(err))
		}
		defined = true
	}
	defer net.Free()
	if err := checkNetwork(net, c); err != nil {
		return defined, err
	}
	if active, err := net.IsActive(); err != nil {
		return defined, err
	} else if !active {
		if err := net.Create(); err != nil {
			return defined, fmt.Errorf("start network %s: %w", c.Name, link.Message(err))
		}
	}
	return defined, net.SetAutostart(true)
}

// checkNetwork refuses a network whose bridge or subnet is not c's: the
// firewall's rules name both.
func checkNetwork(net *libvirt.Network, c NetworkConfig) error {
	s, err := net.GetXMLDesc(0)
	if err != nil {
		return err
	}
	var n libvirtxml.Network
	if err := n.Unmarshal(s); err != nil {
		return err
	}
	if n.Bridge == nil || n.Bridge.Name != c.Bridge || len(n.IPs) == 0 || n.IPs[0].Address != c.Gateway.String() ||
		(n.IPs[0].Prefix != 0 && n.IPs[0].Prefix != uint(c.Subnet.Bits())) {
		return fmt.Errorf("libvirt network %s exists with another bridge or subnet than %s on %s: remove it (virsh net-destroy %s; virsh net-undefine %s) or choose another with --network-subnet",
			c.Name, c.Bridge, c.Subnet, c.Name, c.Name)
	}
	return nil
}

// Addresses reserves desktops' addresses in a network's DHCP, live and in
// its definition, so a desktop's MAC always gets the address its firewall
// rules bind it to.
type Addresses struct {
	H       *link.Conn
	Network string
}

// Reserve gives mac the address ip (replacing what it had). A new desktop's
// MAC has no reservation yet: adding is tried first (each update costs
// ~0.4 s: libvirt rewrites dnsmasq's hosts and signals it).
func (a Addresses) Reserve(ctx context.Context, mac, ip, name string) error {
	host := libvirtxml.NetworkDHCPHost{MAC: mac, IP: ip, Name: name}
	x, err := host.Marshal()
	if err != nil {
		return err
	}
	return a.update(ctx, func(n *libvirt.Network) error {
		flags := libvirt.NETWORK_UPDATE_AFFECT_LIVE | libvirt.NETWORK_UPDATE_AFFECT_CONFIG
		if err := n.Update(libvirt.NETWORK_UPDATE_COMMAND_ADD_LAST, libvirt.NETWORK_SECTION_IP_DHCP_HOST, -1, x, flags); err == nil {
			return nil
		}
		return n.Update(libvirt.NETWORK_UPDATE_COMMAND_MODIFY, libvirt.NETWORK_SECTION_IP_DHCP_HOST, -1, x, flags)
	})
}

// Release drops mac's reservation; one that does not exist is fine.
func (a Addresses) Release(ctx context.Context, mac string) error {
	x := fmt.Sprintf("<host mac='%s'/>", mac)
	return a.update(ctx, func(n *libvirt.Network) error {
		err := n.Update(libvirt.NETWORK_UPDATE_COMMAND_DELETE, libvirt.NETWORK_SECTION_IP_DHCP_HOST, -1, x,
			libvirt.NETWORK_UPDATE_AFFECT_LIVE|libvirt.NETWORK_UPDATE_AFFECT_CONFIG)
		if link.IsCode(err, libvirt.ERR_OPERATION_INVALID) {
			return nil // no such host
		}
		return err
	})
}

func (a Addresses) update(ctx context.Context, fn func(*libvirt.Network) error) error {
	conn, err := a.H.Connect(ctx)
	if err != nil {
		return err
	}
	_, err = link.Call(ctx, func() (struct{}, error) {
		n, err := conn.LookupNetworkByName(a.Network)
		if err != nil {
			return struct{}{}, err
		}
		defer n.Free()
		return struct{}{}, fn(n)
	})
	return err
}
