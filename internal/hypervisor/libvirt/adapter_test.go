package libvirt

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

var update = flag.Bool("update", false, "rewrite golden files")

func testConfig(accel desktop.Accelerator) desktop.VMConfig {
	return desktop.VMConfig{Name: "bureau-abc123", UUID: "6f1c1a38-6a0e-4c53-9d51-1b1f7c0b6c11", VCPUs: 2, MemoryMiB: 2048,
		Accelerator: accel, OSDisk: "/var/lib/bureau/desktops/abc123/os.qcow2", DataDisk: "/var/lib/bureau/desktops/abc123/data.qcow2",
		SeedISO: "/var/lib/bureau/desktops/abc123/seed.iso", SerialLog: "/var/lib/bureau/desktops/abc123/serial.log",
		VNCSocket: "/var/lib/bureau/desktops/abc123/vnc.sock", TCGCacheMiB: 256,
		Network: "default", Tap: "bd-abc123", MAC: "02:11:22:33:44:55", UID: 1073741825, GID: 64055}
}

func TestDomainXMLGolden(t *testing.T) {
	for _, accel := range []desktop.Accelerator{desktop.AccelTCG, desktop.AccelKVM} {
		got, err := DomainXML(testConfig(accel))
		if err != nil {
			t.Fatal(err)
		}
		golden := "testdata/domain-" + string(accel) + ".xml"
		if *update {
			os.WriteFile(golden, []byte(got), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from golden:\n%s", accel, got)
		}
	}
}

func TestChooseAccelerator(t *testing.T) {
	if a, _, _ := decide(false, nil); a != desktop.AccelTCG {
		t.Errorf("no vmx/svm → %s, want tcg", a)
	}
	if a, why, _ := decide(true, errors.New("permission denied")); a != desktop.AccelTCG || !strings.Contains(why, "permission denied") {
		t.Errorf("unusable /dev/kvm → %s (%s)", a, why)
	}
	if a, _, _ := decide(true, nil); a != desktop.AccelKVM {
		t.Errorf("vmx + usable kvm → %s, want kvm", a)
	}
	if a, _, err := ChooseAccelerator("tcg"); a != desktop.AccelTCG || err != nil {
		t.Errorf("override tcg → %s %v", a, err)
	}
	if _, _, err := ChooseAccelerator("xen"); err == nil {
		t.Error("bogus override accepted")
	}
	flags := "processor : 0\nflags\t\t: fpu vme de pse svm lm\n"
	if !cpuHasVirtualization(strings.NewReader(flags)) {
		t.Error("svm not found")
	}
	if cpuHasVirtualization(strings.NewReader("flags : fpu vmxx lm\n")) {
		t.Error("vmxx mistaken for vmx")
	}
}

// TestLifecycleOnTestDriver drives define/start/state/destroy/undefine
// through libvirt's built-in test driver: real libvirt code, no daemon.
func TestLifecycleOnTestDriver(t *testing.T) {
	ctx, h := openTestDriver(t)
	c := testConfig(desktop.AccelTCG)
	c.Name = "bureau-lifecycle"
	xml, _ := DomainXML(c)
	// The test driver knows only type='test' domains.
	conn, _ := h.connect(ctx)
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
	if err := h.Start(ctx, c.Name); !errors.Is(err, ErrNoDomain) {
		t.Fatalf("start missing = %v, want ErrNoDomain", err)
	}
}

func TestCallHonoursDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := call(ctx, func() (int, error) { time.Sleep(2 * time.Second); return 1, nil })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("call returned %v after %s", err, time.Since(start))
	}
}

// openTestDriver connects to libvirt's built-in test driver (a fresh,
// in-process hypervisor per connection) for 30 s.
func openTestDriver(t *testing.T) (context.Context, *Hypervisor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	h, err := Open(ctx, "test:///default", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return ctx, h
}

func TestQMPErrorsAreTyped(t *testing.T) {
	for desc, want := range map[string]error{
		"Snapshot with id 'null' and name 'x' does not exist": desktop.ErrNoSnapshot,
		"Could not write to disk: No space left on device":    syscall.ENOSPC,
	} {
		if got := qmpClass(desc); !errors.Is(got, want) {
			t.Errorf("%q: %v, want %v", desc, got, want)
		}
	}
	if qmpClass("Device 'x' not found") != nil {
		t.Error("an unrelated error was given a type")
	}
}
