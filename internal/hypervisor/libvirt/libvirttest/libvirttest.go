// Package libvirttest holds what the adapter's tests share: a connection
// to libvirt's test driver and a desktop's VM configuration.
package libvirttest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
)

// Open connects to libvirt's test driver (test:///default) for the test,
// closed when it ends; ctx is bounded by 30 s.
func Open(t testing.TB) (context.Context, *link.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := link.Open(ctx, "test:///default", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c
}

// VMConfig is a desktop's VM as the tests define it (desktop abc123).
func VMConfig(accel desktop.Accelerator) desktop.VMConfig {
	return desktop.VMConfig{Name: "bureau-abc123", UUID: "6f1c1a38-6a0e-4c53-9d51-1b1f7c0b6c11", VCPUs: 2, MemoryMiB: 2048,
		Accelerator: accel, OSDisk: "/var/lib/bureau/desktops/abc123/os.qcow2", DataDisk: "/var/lib/bureau/desktops/abc123/data.qcow2",
		SeedISO: "/var/lib/bureau/desktops/abc123/seed.iso", SerialLog: "/var/lib/bureau/desktops/abc123/serial.log",
		VNCSocket: "/var/lib/bureau/desktops/abc123/vnc.sock", TCGCacheMiB: 256,
		Network: "default", Tap: "bd-abc123", MAC: "02:11:22:33:44:55", UID: 1073741825, GID: 64055}
}
