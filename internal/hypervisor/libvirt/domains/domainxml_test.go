package domains

import (
	"flag"
	"os"
	"strings"
	"testing"

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

// Every new domain has the agent's channel beside QEMU's guest agent.
func TestDomainXMLHasTheAgentChannel(t *testing.T) {
	x, err := DomainXML(desktop.VMConfig{Name: "bureau-x", MemoryMiB: 1024, VCPUs: 1, OSDisk: "/d/os.qcow2", DataDisk: "/d/data.qcow2",
		SeedISO: "/d/seed.iso", SerialLog: "/d/serial.log", VNCSocket: "/d/vnc.sock", Network: "bureau"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<target type="virtio" name="org.bureau.agent.0">`, `<target type="virtio" name="org.qemu.guest_agent.0">`} {
		if !strings.Contains(x, want) {
			t.Errorf("domain XML lacks %s", want)
		}
	}
}
