package network

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/libvirttest"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
)

// TestNetworkOnTestDriver: the desktops' network is defined once and found
// again; one of that name on another subnet is refused; reservations are
// added, replaced and released.
func TestNetworkOnTestDriver(t *testing.T) {
	ctx, h := openTestDriver(t)
	nw := New(h)
	c, err := NewNetworkConfig("bureau-t", "bureaut0", netip.MustParsePrefix("10.121.0.0/16"))
	if err != nil || c.Gateway.String() != "10.121.0.1" {
		t.Fatalf("%+v %v", c, err)
	}
	if err := nw.EnsureNetwork(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := nw.EnsureNetwork(ctx, c); err != nil {
		t.Fatalf("a second ensure: %v", err)
	}
	other, _ := NewNetworkConfig("bureau-t", "bureaut0", netip.MustParsePrefix("10.122.0.0/16"))
	if err := nw.EnsureNetwork(ctx, other); err == nil || !strings.Contains(err.Error(), "another bridge or subnet") {
		t.Errorf("a network on another subnet: %v", err)
	}
	a := Addresses{H: h, Network: "bureau-t"}
	if err := a.Reserve(ctx, "02:00:00:00:00:01", "10.121.0.7", "one"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve(ctx, "02:00:00:00:00:01", "10.121.0.8", "one"); err != nil {
		t.Fatalf("replacing a reservation: %v", err)
	}
	xml := networkXML(t, h, "bureau-t")
	if !strings.Contains(xml, "10.121.0.8") || strings.Contains(xml, "10.121.0.7") {
		t.Errorf("reservations after replace:\n%s", xml)
	}
	if err := a.Release(ctx, "02:00:00:00:00:01"); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "02:00:00:00:00:01"); err != nil {
		t.Errorf("releasing twice: %v", err)
	}
	if strings.Contains(networkXML(t, h, "bureau-t"), "02:00:00:00:00:01") {
		t.Error("released reservation still there")
	}
}

// openTestDriver connects to libvirt's built-in test driver (a fresh,
// in-process hypervisor per connection) for 30 s.
func openTestDriver(t *testing.T) (context.Context, *link.Conn) {
	t.Helper()
	return libvirttest.Open(t)
}

func networkXML(t *testing.T, h *link.Conn, name string) string {
	conn, _ := h.Connect(context.Background())
	n, err := conn.LookupNetworkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Free()
	x, err := n.GetXMLDesc(0)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
