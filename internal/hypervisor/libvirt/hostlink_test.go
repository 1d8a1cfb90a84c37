package libvirt

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
)

func TestHostLinkFactsFromLibvirtsTestDriver(t *testing.T) {
	ctx := context.Background()
	l, err := DialHost(ctx, "test:///default")
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// test:///default is a fixed 16-CPU, 3 GiB node without KVM.
	if f.CPUs != 16 || f.MemoryMiB != 3<<10 || f.FreeMemoryMiB <= 0 || f.Hostname == "" || f.LibvirtVersion == "" || f.Accelerator != "tcg" {
		t.Errorf("facts %+v", f)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAcceleratorNeedsKVMAndTheCPUsVirtualization(t *testing.T) {
	caps := func(feature, domain string) string {
		return `<capabilities><host><cpu><arch>x86_64</arch><model>Skylake-Client-IBRS</model>` + feature + `</cpu></host>
<guest><os_type>hvm</os_type><arch name='x86_64'><domain type='qemu'/>` + domain + `</arch></guest></capabilities>`
	}
	for _, c := range []struct {
		feature, domain, want string
	}{
		{"<feature name='vmx'/>", "<domain type='kvm'/>", "kvm"},
		{"<feature name='svm'/>", "<domain type='kvm'/>", "kvm"},
		{"", "<domain type='kvm'/>", "tcg"}, // nested /dev/kvm without vmx/svm (this machine)
		{"<feature name='vmx'/>", "", "tcg"},
	} {
		got, err := acceleratorOf(caps(c.feature, c.domain))
		if err != nil || got != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.feature, c.domain, got, err, c.want)
		}
	}
}

// On a real host, free memory counts the page cache the kernel gives back
// on demand, as /proc/meminfo's MemFree + Buffers + Cached do.
func TestHostLinkFreeMemoryCountsThePageCache(t *testing.T) {
	ctx := context.Background()
	h, err := Open(ctx, "qemu:///system", slog.New(slog.DiscardHandler)) // and the event loop keepalive needs
	if err != nil {
		t.Skipf("no libvirtd here: %v", err)
	}
	defer h.Close()
	l, err := DialHost(ctx, "qemu:///system")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	kib := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		var k string
		var v int64
		if n, _ := fmt.Sscanf(line, "%s %d", &k, &v); n == 2 {
			kib[strings.TrimSuffix(k, ":")] = v
		}
	}
	want := (kib["MemFree"] + kib["Buffers"] + kib["Cached"]) >> 10
	if d := f.FreeMemoryMiB - want; d < -256 || d > 256 {
		t.Errorf("free memory %d MiB, /proc/meminfo says %d MiB (MemFree %d, Buffers %d, Cached %d KiB)",
			f.FreeMemoryMiB, want, kib["MemFree"], kib["Buffers"], kib["Cached"])
	}
}
