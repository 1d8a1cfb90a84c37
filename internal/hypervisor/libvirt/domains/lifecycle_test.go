package domains

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/guestchan"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/libvirttest"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
)

// TestLifecycleOnTestDriver drives define/start/state/destroy/undefine
// through libvirt's built-in test driver: real libvirt code, no daemon.
func TestLifecycleOnTestDriver(t *testing.T) {
	ctx, h := openTestDriver(t)
	c := libvirttest.VMConfig(desktop.AccelTCG)
	c.Name = "bureau-lifecycle"
	xml, _ := DomainXML(c)
	// The test driver knows only type='test' domains.
	conn, _ := h.link.Connect(ctx)
	dom, err := conn.DomainDefineXML(strings.Replace(xml, "type=\"qemu\"", "type=\"test\"", 1))
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	dom.Free()
	if st, err := h.State(ctx, c.Name); err != nil || st != desktop.VMShutoff {
		t.Fatalf("state after define = %s, %v", st, err)
	}
	if err := h.Start(ctx, c.Name); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.State(ctx, c.Name); st != desktop.VMRunning {
		t.Fatalf("state after start = %s", st)
	}
	list, err := h.List(ctx)
	if err != nil || list[c.Name] != desktop.VMRunning {
		t.Fatalf("list = %v, %v", list, err)
	}
	if _, ok := list["test"]; ok {
		t.Error("list includes a domain that is not bureau's")
	}
	if err := h.Destroy(ctx, c.Name); err != nil {
		t.Fatal(err)
	}
	if err := h.Destroy(ctx, c.Name); err != nil {
		t.Fatalf("destroying a stopped domain: %v", err)
	}
	if err := h.Undefine(ctx, c.Name); err != nil {
		t.Fatal(err)
	}
	if st, err := h.State(ctx, c.Name); err != nil || st != desktop.VMMissing {
		t.Fatalf("state after undefine = %s, %v", st, err)
	}
	if err := h.Undefine(ctx, c.Name); err != nil {
		t.Fatalf("undefining a missing domain: %v", err)
	}
	if err := h.Start(ctx, c.Name); !errors.Is(err, link.ErrNoDomain) {
		t.Fatalf("start missing = %v, want ErrNoDomain", err)
	}
}

// openTestDriver connects to libvirt's built-in test driver (a fresh,
// in-process hypervisor per connection) for 30 s.
func openTestDriver(t *testing.T) (context.Context, *Domains) {
	t.Helper()
	ctx, c := libvirttest.Open(t)
	return ctx, New(c, guestchan.NewAgent(c))
}
