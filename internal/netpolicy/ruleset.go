// Package netpolicy keeps desktops off the host and each other and applies
// each desktop's egress policy, as nftables rules on the desktops' bridge.
//
// Desktops share one libvirt NAT network (a bridge). Every desktop's NIC is a
// tap on that bridge with a name bureau chooses (desktop.TapName), so rules
// can name it before the VM exists and hold whatever the guest does to its
// own addresses. Filtering happens where frames from a tap enter the host
// (the bridge family's input hook sees every frame a desktop sends to its
// gateway, which is all its routed traffic) and between taps (the bridge's
// forward hook), plus an inet rule that drops anything from the bridge to
// the host's own addresses but DHCP and DNS. Rules are stateless and match
// every packet, so a policy change cuts existing flows too.
//
// Each bureau instance (data directory) owns one nftables table per family,
// replaced atomically as a whole. Every table carries the same base rules
// (host, other desktops, reserved ranges), so a tap no instance knows still
// gets the default policy; a desktop's own deny rules drop in its instance's
// table and its allow rules set a mark the base rules honour, so an allow
// wins over a deny and over the reserved ranges (never over the host, other
// desktops, link-local or loopback).
package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Net is the desktops' network as the host sees it.
type Net struct {
	Bridge  string       // host bridge device, e.g. "bureau0"
	Subnet  netip.Prefix // the desktops' subnet
	Gateway netip.Addr   // the host's address on it (DHCP and DNS)
}

// Rules is one desktop's resolved policy and identity on the network.
type Rules struct {
	ID  string
	Tap string
	// MAC and IP are the only addresses the desktop may send from, so it
	// cannot take another desktop's traffic by claiming its MAC or,
	// through ARP, its address. With IP invalid (not known) it may send
	// only what gets it one: DHCP and ARP probes from 0.0.0.0.
	MAC   string
	IP    netip.Addr
	Allow []netip.Prefix
	Deny  []netip.Prefix
	// DenyDNS drops its DNS to the gateway (see
	// desktop.NetworkPolicy.DenyDNS).
	DenyDNS bool
}

// allowMark is the packet mark a desktop's allow rule sets.
const allowMark = "0x00000b00"

// Reserved is what no desktop reaches unless its policy allows it (see
// desktop.ReservedRanges).
var Reserved = desktop.ReservedRanges

// TableName is the nftables table of the bureau instance tagged tag.
func TableName(tag string) string { return "bureau_" + tag }

// Render is the nftables script that replaces the instance's tables with
// rules for n and the given desktops, in one transaction.
func Render(tag string, n Net, desktops []Rules) string {
	t := TableName(tag)
	var b strings.Builder
	// Creating then deleting makes the delete safe when the table is new;
	// nft applies the whole script atomically.
	fmt.Fprintf(&b, "table bridge %s {}\ndelete table bridge %s\n", t, t)
	fmt.Fprintf(&b, "table inet %s {}\ndelete table inet %s\n", t, t)

	fmt.Fprintf(&b, "table bridge %s {\n", t)
	// Before the bridge learns a source address (prerouting): a desktop
	// sends only as itself.
	b.WriteString("\tchain guard {\n\t\ttype filter hook prerouting priority -300; policy accept;\n")
	for _, d := range desktops {
		if d.MAC != "" {
			fmt.Fprintf(&b, "\t\tiifname %q ether saddr != %s drop\n", d.Tap, d.MAC)
			fmt.Fprintf(&b, "\t\tiifname %q arp saddr ether != %s drop\n", d.Tap, d.MAC)
		}
		// 0.0.0.0 is a source only for asking DHCP for an address (the
		// accept ends this chain alone: the input rules still apply).
		fmt.Fprintf(&b, "\t\tiifname %q ether type ip ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp dport 67 accept\n", d.Tap)
		if d.IP.IsValid() {
			fmt.Fprintf(&b, "\t\tiifname %q arp saddr ip != { %s, 0.0.0.0 } drop\n", d.Tap, d.IP)
			fmt.Fprintf(&b, "\t\tiifname %q ether type ip ip saddr != %s drop\n", d.Tap, d.IP)
		} else {
			// Not knowing its address must not mean any address: until
			// it is known the desktop only probes and asks for one.
			fmt.Fprintf(&b, "\t\tiifname %q arp saddr ip 0.0.0.0 accept\n", d.Tap)
			fmt.Fprintf(&b, "\t\tiifname %q drop comment \"address not known: DHCP and ARP probes only\"\n", d.Tap)
		}
	}
	b.WriteString("\t}\n")
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority 0; policy accept;\n")
	b.WriteString("\t\tiifname \"bd-*\" drop comment \"desktops never reach each other\"\n")
	b.WriteString("\t\toifname \"bd-*\" drop\n\t}\n")

	// Desktops' own rules run first: deny drops, allow marks.
	b.WriteString("\tchain desktops {\n\t\ttype filter hook input priority -10; policy accept;\n")
	for _, d := range desktops {
		fmt.Fprintf(&b, "\t\tiifname %q jump d_%s\n", d.Tap, d.ID)
	}
	b.WriteString("\t}\n")
	for _, d := range desktops {
		fmt.Fprintf(&b, "\tchain d_%s {\n", d.ID)
		if d.DenyDNS {
			// Before the allow, which would otherwise accept it here
			// when it covers the gateway.
			fmt.Fprintf(&b, "\t\tip daddr %s meta l4proto { tcp, udp } th dport 53 drop comment \"no DNS\"\n", n.Gateway)
		}
		if allow := normalize(d.Allow); len(allow) > 0 {
			fmt.Fprintf(&b, "\t\tip daddr %s meta mark set meta mark | %s accept\n", set(allow), allowMark)
		}
		if deny := normalize(d.Deny); len(deny) > 0 {
			fmt.Fprintf(&b, "\t\tip daddr %s drop\n", set(deny))
		}
		b.WriteString("\t}\n")
	}

	// The base: the same in every instance's table.
	b.WriteString("\tchain base {\n\t\ttype filter hook input priority 0; policy accept;\n")
	b.WriteString("\t\tiifname != \"bd-*\" accept\n")
	b.WriteString("\t\tether type arp accept\n")
	b.WriteString("\t\tether type != ip drop comment \"IPv4 only\"\n")
	fmt.Fprintf(&b, "\t\tip daddr { %s, 255.255.255.255 } udp dport 67 accept\n", n.Gateway)
	fmt.Fprintf(&b, "\t\tip daddr %s meta l4proto { tcp, udp } th dport 53 accept\n", n.Gateway)
	fmt.Fprintf(&b, "\t\tip daddr %s drop comment \"the host and other desktops\"\n", n.Subnet)
	// No allow, not even an admin's, opens link-local (cloud metadata
	// and the host's credentials) or loopback.
	fmt.Fprintf(&b, "\t\tip daddr %s drop comment \"never: link-local, loopback\"\n", set(desktop.NeverOpen))
	fmt.Fprintf(&b, "\t\tmeta mark & %s == %s accept\n", allowMark, allowMark)
	fmt.Fprintf(&b, "\t\tip daddr %s drop comment \"private, link-local, reserved\"\n", set(Reserved))
	b.WriteString("\t}\n}\n")

	fmt.Fprintf(&b, "table inet %s {\n", t)
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority -10; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname %q meta l4proto udp th dport { 53, 67 } accept\n", n.Bridge)
	fmt.Fprintf(&b, "\t\tiifname %q meta l4proto tcp th dport 53 accept\n", n.Bridge)
	fmt.Fprintf(&b, "\t\tiifname %q drop comment \"desktops never reach the host\"\n\t}\n", n.Bridge)
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority -10; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname %q oifname %q drop\n\t}\n}\n", n.Bridge, n.Bridge)
	return b.String()
}

// normalize sorts prefixes and drops those inside another (nftables
// refuses overlapping intervals in one set).
func normalize(ps []netip.Prefix) []netip.Prefix {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var out []netip.Prefix
	for _, p := range ps {
		if len(out) > 0 && out[len(out)-1].Contains(p.Addr()) && out[len(out)-1].Bits() <= p.Bits() {
			continue
		}
		out = append(out, p.Masked())
	}
	return out
}

func set(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return "{ " + strings.Join(s, ", ") + " }"
}

// RemoveScript is the nftables script that removes the instance's tables
// (nothing when they are not there).
func RemoveScript(tag string) string {
	t := TableName(tag)
	return fmt.Sprintf("table bridge %s {}\ndelete table bridge %s\ntable inet %s {}\ndelete table inet %s\n", t, t, t, t)
}
