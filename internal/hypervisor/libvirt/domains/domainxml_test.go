package domains

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/libvirttest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestDomainXMLGolden(t *testing.T) {
	for _, accel := range []desktop.Accelerator{desktop.AccelTCG, desktop.AccelKVM} {
		got, err := DomainXML(libvirttest.VMConfig(accel))
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
