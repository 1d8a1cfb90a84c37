//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDoctor runs `bureau doctor` on this host as an operator would before
// installing: it names the accelerator it would use (TCG on a host without
// vmx/svm, as a warning with the reason) and passes every other check —
// the same host the rest of the suite runs desktops on. It boots nothing.
func TestDoctor(t *testing.T) {
	needE2E(t)
	dir := t.TempDir()
	// Installed and migrated, as `make install` and the first start leave it.
	if out, err := exec.Command(os.Getenv("BUREAU_E2E_BIN"), "migrate", "--data-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("bureau migrate: %v\n%s", err, out)
	}
	cmd := exec.Command(os.Getenv("BUREAU_E2E_BIN"), "doctor", "--json", "--env-file", "", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "BUREAU_LISTEN=127.0.0.1:"+freePort(t), "BUREAU_PUBLIC_URL=", "BUREAU_TLS=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bureau doctor: %v\n%s", err, out)
	}
	var findings []struct{ Check, Status, Detail, Fix string }
	if err := json.Unmarshal(out, &findings); err != nil {
		t.Fatalf("bureau doctor --json printed %q: %v", out, err)
	}
	kvm := hasKVM()
	seen := map[string]bool{}
	for _, f := range findings {
		seen[f.Check] = true
		t.Logf("%-5s %-12s %s", f.Status, f.Check, f.Detail)
		switch {
		case f.Check == "accelerator" && kvm:
			if f.Status != "ok" || !strings.Contains(f.Detail, "kvm") {
				t.Errorf("accelerator on a KVM host: %+v", f)
			}
		case f.Check == "accelerator":
			if f.Status != "warn" || !strings.Contains(f.Detail, "TCG") || f.Fix == "" {
				t.Errorf("accelerator without KVM: %+v (want a warning naming TCG, with a fix)", f)
			}
		case f.Check == "public-url":
			// Unset here: a warning that says how to set it.
			if f.Status != "warn" || !strings.Contains(f.Fix, "BUREAU_PUBLIC_URL=") {
				t.Errorf("public-url unset: %+v", f)
			}
		case f.Status != "ok":
			t.Errorf("%s: %s %q (fix: %s)", f.Check, f.Status, f.Detail, f.Fix)
		}
	}
	for _, want := range []string{"accelerator", "libvirt", "tools", "nftables", "network", "disk", "database", "listen", "public-url", "tls", "dns"} {
		if !seen[want] {
			t.Errorf("no %s check", want)
		}
	}
}

// hasKVM says whether this host can run KVM guests: /dev/kvm and a CPU
// with vmx or svm.
func hasKVM() bool {
	if _, err := os.Stat("/dev/kvm"); err != nil {
		return false
	}
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Contains(string(b), " vmx") || strings.Contains(string(b), " svm")
}
