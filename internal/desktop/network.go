package desktop

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// NetworkPolicy is what a desktop may reach on the outside network. Entries
// are IPv4 addresses, CIDRs or host names. By default a desktop reaches the
// public internet and nothing private: not the host, not other desktops, not
// private, link-local (metadata) or other reserved ranges. DenyOut blocks
// more; AllowOut opens private ranges or punches holes in DenyOut (an allow
// wins over a deny, so {"deny_out":["0.0.0.0/0"],"allow_out":[…]} is an
// allow-list). Nothing opens the host or other desktops.
type NetworkPolicy struct {
	AllowOut []string
	DenyOut  []string
	// DenyDNS drops the desktop's DNS to its gateway, which is otherwise
	// always allowed: with it an allow-list desktop cannot tunnel out
	// through DNS queries nor learn host-internal names.
	DenyDNS bool
}

// MaxNetworkRules bounds each list of a network policy.
const MaxNetworkRules = 64

// Validate checks a policy's entries; host names are resolved later, by
// the firewall.
func (p NetworkPolicy) Validate() error {
	for _, l := range []struct {
		field   string
		entries []string
	}{{"network.allow_out", p.AllowOut}, {"network.deny_out", p.DenyOut}} {
		if len(l.entries) > MaxNetworkRules {
			return &ValidationError{Field: l.field, Message: fmt.Sprintf("at most %d entries, got %d", MaxNetworkRules, len(l.entries))}
		}
		for _, e := range l.entries {
			p, _, err := ParseNetworkEntry(e)
			if err != nil {
				return &ValidationError{Field: l.field, Message: err.Error()}
			}
			if l.field == "network.allow_out" && p.IsValid() && Within(p, NeverOpen) {
				return &ValidationError{Field: l.field, Message: fmt.Sprintf(
					"%q is link-local or loopback (cloud metadata answers at 169.254.169.254): no policy opens it", e)}
			}
		}
	}
	return nil
}

// ReservedOpens lists the allow entries that open part of ReservedRanges
// (the host's LAN, other private networks, cloud metadata) beyond what an
// owner may open: the install's openable ranges, and entries the policy
// already had (kept: an admin opened them before). Only an admin may add
// these. Host names are left to the firewall, which never opens a reserved
// address a name resolves to (beyond openable).
func (p NetworkPolicy) ReservedOpens(openable []netip.Prefix, kept []string) []string {
	var out []string
	for _, e := range p.AllowOut {
		pre, _, err := ParseNetworkEntry(e)
		if err != nil || !pre.IsValid() || slices.Contains(kept, e) {
			continue
		}
		if Overlaps(pre, ReservedRanges) && !Within(pre, openable) {
			out = append(out, e)
		}
	}
	return out
}

// ParseRanges reads a comma-separated list of IPv4 CIDRs (an install's
// setting); link-local and loopback are refused.
func ParseRanges(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, host, err := ParseNetworkEntry(f)
		if err != nil || host != "" {
			return nil, fmt.Errorf("%q is not an IPv4 CIDR", f)
		}
		if Overlaps(p, NeverOpen) {
			return nil, fmt.Errorf("%q overlaps link-local or loopback, which nothing opens", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseNetworkEntry reads one policy entry: an IPv4 CIDR or address
// (prefix) or a host name (host).
func ParseNetworkEntry(e string) (prefix netip.Prefix, host string, err error) {
	if e == "" {
		return netip.Prefix{}, "", fmt.Errorf("empty entry: give an IPv4 address, a CIDR such as 203.0.113.0/24, or a host name")
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return netip.Prefix{}, "", fmt.Errorf("%q is not a CIDR: %v", e, err)
		}
		if !p.Addr().Is4() {
			return netip.Prefix{}, "", fmt.Errorf("%q: desktops have IPv4 networking only", e)
		}
		return p.Masked(), "", nil
	}
	if a, err := netip.ParseAddr(e); err == nil {
		if !a.Is4() {
			return netip.Prefix{}, "", fmt.Errorf("%q: desktops have IPv4 networking only", e)
		}
		return netip.PrefixFrom(a, 32), "", nil
	}
	if !validHostName(e) {
		return netip.Prefix{}, "", fmt.Errorf("%q is neither an IPv4 address, a CIDR nor a host name", e)
	}
	return netip.Prefix{}, strings.ToLower(strings.TrimSuffix(e, ".")), nil
}

// validHostName accepts DNS names of letters, digits and hyphens (labels of
// 1–63, 253 in all) with at least one dot; a trailing dot is fine.
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if len(s) == 0 || len(s) > 253 || !strings.Contains(s, ".") {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// MAC is the desktop's NIC address: locally administered, derived from its
// id so the host side knows it without asking the guest.
func MAC(id string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", sum[0], sum[1], sum[2], sum[3], sum[4])
}

// TapName is the host-side network device of a desktop's NIC on bureau's
// own host: stable, so the firewall's rules for it exist before the VM
// does.
func TapName(id string) string { return TapNameOn(id, LocalHost) }

// TapNameOn is the host-side network device of a desktop's NIC on host.
// Each host gives it a name of its own, so while a desktop migrates the
// two hosts' devices never clash, even on one kernel (as in tests).
func TapNameOn(id, host string) string {
	n := "bd-" + id
	if host != "" && host != LocalHost {
		sum := sha256.Sum256([]byte(host))
		n = fmt.Sprintf("b%02x-%s", sum[0], id)
	}
	if len(n) > 15 { // IFNAMSIZ-1
		n = n[:15]
	}
	return n
}

// ReservedRanges is what no desktop reaches unless its policy allows it:
// private, shared (CGNAT), loopback, link-local (cloud metadata lives
// there), multicast, and reserved ranges. Only an admin opens them, or an
// owner within the install's OwnerOpenable ranges.
var ReservedRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// NeverOpen is what no policy opens, not even an admin's: link-local,
// where clouds serve instance metadata and the host's credentials
// (169.254.169.254), and loopback.
var NeverOpen = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
}

// Overlaps says whether p shares any address with one of ps.
func Overlaps(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}

// Within says whether every address of p lies inside one of ps.
func Within(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if q.Bits() <= p.Bits() && q.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// Default says whether p is the default policy (nothing added to it).
func (p NetworkPolicy) Default() bool {
	return len(p.AllowOut) == 0 && len(p.DenyOut) == 0 && !p.DenyDNS
}
