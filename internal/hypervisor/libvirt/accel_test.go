package libvirt

import (
	"errors"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

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
