package libvirt

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// ChooseAccelerator picks KVM only where the CPU has hardware virtualization
// (vmx or svm) and /dev/kvm opens read-write; nested kvm_pvm hosts advertise
// /dev/kvm without them and run ordinary guest kernels unusably slowly, so
// they get TCG. override ("kvm" or "tcg") wins. The reason says why.
func ChooseAccelerator(override string) (desktop.Accelerator, string, error) {
	switch override {
	case "kvm":
		return desktop.AccelKVM, "forced by configuration", nil
	case "tcg", "qemu":
		return desktop.AccelTCG, "forced by configuration", nil
	case "", "auto":
	default:
		return "", "", fmt.Errorf("accelerator %q: want auto, kvm or tcg", override)
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return desktop.AccelTCG, "cannot read /proc/cpuinfo: software emulation", nil
	}
	defer f.Close()
	hw := cpuHasVirtualization(f)
	kvmErr := kvmUsable()
	return decide(hw, kvmErr)
}

func decide(hw bool, kvmErr error) (desktop.Accelerator, string, error) {
	switch {
	case !hw:
		return desktop.AccelTCG, "CPU has no vmx/svm (nested or no virtualization): software emulation (TCG), desktops boot slowly", nil
	case kvmErr != nil:
		return desktop.AccelTCG, fmt.Sprintf("CPU supports virtualization but /dev/kvm is not usable (%v): software emulation (TCG)", kvmErr), nil
	default:
		return desktop.AccelKVM, "CPU has vmx/svm and /dev/kvm is usable: hardware virtualization (KVM)", nil
	}
}

func cpuHasVirtualization(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if f == "vmx" || f == "svm" {
				return true
			}
		}
	}
	return false
}

func kvmUsable() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
