package netpolicy

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

var testNet = Net{Bridge: "bureau0", Subnet: netip.MustParsePrefix("10.120.0.0/16"), Gateway: netip.MustParseAddr("10.120.0.1")}

func TestRenderBaseRules(t *testing.T) {
	s := Render("t1", testNet, nil)
	for _, want := range []string{
		"delete table bridge bureau_t1",
		`iifname "bd-*" drop comment "desktops never reach each other"`,
		"ip daddr 10.120.0.0/16 drop",
		"ether type != ip drop",
		"169.254.0.0/16",
		`iifname "bureau0" drop comment "desktops never reach the host"`,
		`iifname "bureau0" oifname "bureau0" drop`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, s)
		}
	}
	// The host and the desktop subnet are dropped before an allow mark is
	// honoured, so no policy opens them.
	if strings.Index(s, "ip daddr 10.120.0.0/16 drop") > strings.Index(s, "meta mark & 0x00000b00") {
		t.Errorf("the subnet must be dropped before allows are honoured:\n%s", s)
	}
	// So are link-local (cloud metadata) and loopback: no allow, not even
	// an admin's, opens them.
	never := `ip daddr { 127.0.0.0/8, 169.254.0.0/16 } drop comment "never: link-local, loopback"`
	if i := strings.Index(s, never); i < 0 || i > strings.Index(s, "meta mark & 0x00000b00") {
		t.Errorf("link-local and loopback must be dropped before allows are honoured:\n%s", s)
	}
}

func TestRenderDesktopRules(t *testing.T) {
	s := Render("t1", testNet, []Rules{{
		ID: "0123456789ab", Tap: "bd-0123456789ab", MAC: "02:11:22:33:44:55", IP: netip.MustParseAddr("10.120.3.4"),
		Allow: []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24"), netip.MustParsePrefix("10.99.0.7/32")},
		Deny:  []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("198.51.100.0/24")},
	}})
	for _, want := range []string{
		`iifname "bd-0123456789ab" jump d_0123456789ab`,
		"ip daddr { 10.99.0.0/24 } meta mark set meta mark | 0x00000b00 accept",
		"ip daddr { 0.0.0.0/0 } drop",
		// It sends only as itself, checked before the bridge learns from it;
		// from 0.0.0.0 only to ask DHCP.
		`iifname "bd-0123456789ab" ether saddr != 02:11:22:33:44:55 drop`,
		`iifname "bd-0123456789ab" ether type ip ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp dport 67 accept`,
		`iifname "bd-0123456789ab" arp saddr ip != { 10.120.3.4, 0.0.0.0 } drop`,
		`iifname "bd-0123456789ab" ether type ip ip saddr != 10.120.3.4 drop`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "udp dport 67 accept") < strings.Index(s, "ether saddr != 02:11:22:33:44:55 drop") {
		t.Errorf("the DHCP accept must come after the MAC check:\n%s", s)
	}
	if strings.Contains(s, "no DNS") {
		t.Errorf("DNS dropped for a desktop whose policy does not deny it:\n%s", s)
	}
}

// A desktop whose address is not known yet may not send as any address:
// only DHCP from 0.0.0.0 and ARP probes, and still only from its MAC.
func TestRenderGuardsDesktopWithoutAddress(t *testing.T) {
	s := Render("t1", testNet, []Rules{{ID: "0123456789ab", Tap: "bd-0123456789ab", MAC: "02:11:22:33:44:55"}})
	want := strings.Join([]string{
		`iifname "bd-0123456789ab" ether saddr != 02:11:22:33:44:55 drop`,
		`iifname "bd-0123456789ab" arp saddr ether != 02:11:22:33:44:55 drop`,
		`iifname "bd-0123456789ab" ether type ip ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp dport 67 accept`,
		`iifname "bd-0123456789ab" arp saddr ip 0.0.0.0 accept`,
		`iifname "bd-0123456789ab" drop comment "address not known: DHCP and ARP probes only"`,
	}, "\n\t\t")
	if !strings.Contains(s, want) {
		t.Errorf("guard lacks, in order:\n%s\n\n%s", want, s)
	}
}

// With deny_dns the desktop's DNS to the gateway is dropped in its own
// chain, before its allow (which would accept it there) and so before the
// base chain's DNS accept.
func TestRenderDenyDNS(t *testing.T) {
	s := Render("t1", testNet, []Rules{{ID: "0123456789ab", Tap: "bd-0123456789ab", IP: netip.MustParseAddr("10.120.3.4"), DenyDNS: true,
		Allow: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, Deny: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}})
	want := "\tchain d_0123456789ab {\n" +
		"\t\tip daddr 10.120.0.1 meta l4proto { tcp, udp } th dport 53 drop comment \"no DNS\"\n" +
		"\t\tip daddr { 203.0.113.0/24 } meta mark set meta mark | 0x00000b00 accept\n" +
		"\t\tip daddr { 0.0.0.0/0 } drop\n\t}\n"
	if !strings.Contains(s, want) {
		t.Errorf("desktop chain is not:\n%s\nin:\n%s", want, s)
	}
}

func TestNormalizeDropsNestedPrefixes(t *testing.T) {
	got := normalize([]netip.Prefix{
		netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.0.2.1/32"),
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.200.3.0/24"), netip.MustParsePrefix("192.0.2.1/32"),
	})
	if len(got) != 2 || got[0].String() != "10.0.0.0/8" || got[1].String() != "192.0.2.1/32" {
		t.Fatalf("normalize = %v", got)
	}
}

func TestFirewallKeepsOldPolicyWhenApplyFails(t *testing.T) {
	fail := false
	f := New("t3", testNet, nil, func(context.Context, string) error {
		if fail {
			return errors.New("nft: boom")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	f.Set(ctx, &desktop.Desktop{ID: "0123456789ab", Network: desktop.NetworkPolicy{DenyOut: []string{"198.51.100.0/24"}}})
	fail = true
	if err := f.Set(ctx, &desktop.Desktop{ID: "0123456789ab"}); err == nil {
		t.Fatal("a failed apply was reported as success")
	}
	if got := f.desktops["0123456789ab"].policy.DenyOut; len(got) != 1 {
		t.Fatalf("policy after failed apply = %v, want the old one kept", got)
	}
}

// TestRenderLoadsIntoNftables loads the ruleset into the host's nftables
// when this runs as root with nft installed, so a syntax error fails here
// rather than at a desktop's start.
func TestRenderLoadsIntoNftables(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to load nftables rules")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed")
	}
	tag := "unittest" + strings.ToLower(InstanceTag(t.TempDir()))[:4]
	script := Render(tag, testNet, []Rules{{ID: "0123456789ab", Tap: "bd-0123456789ab", MAC: "02:11:22:33:44:55", IP: netip.MustParseAddr("10.120.3.4"),
		Allow: []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24")}, Deny: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}, DenyDNS: true},
		{ID: "ba9876543210", Tap: "bd-ba9876543210", MAC: "02:66:77:88:99:aa"}}) // address not known yet
	ctx := context.Background()
	if err := Nft(ctx, script); err != nil {
		t.Fatalf("%v\n%s", err, script)
	}
	t.Cleanup(func() {
		exec.Command("nft", "delete", "table", "bridge", TableName(tag)).Run()
		exec.Command("nft", "delete", "table", "inet", TableName(tag)).Run()
	})
	// Applying again replaces the tables rather than failing or doubling.
	if err := Nft(ctx, script); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nft", "list", "table", "bridge", TableName(tag)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if n := strings.Count(string(out), "jump d_0123456789ab"); n != 1 {
		t.Fatalf("jump rule appears %d times after two loads:\n%s", n, out)
	}
}
