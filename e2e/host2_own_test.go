//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// ownHost2 starts scripts/host2.sh for one test in its own folder
// (TMPDIR/name) and port (its sshd on port+1), so tests of host2 never
// share one; it skips the test when not root or when a tool it needs (the
// script's own, plus tools) is missing. host2 is stopped when the test
// ends, a failure to stop failing the test; stop stops it before then.
func ownHost2(t *testing.T, name string, port int, tools ...string) (dir, uri string, stop func() error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (a second libvirtd)")
	}
	for _, bin := range append([]string{"libvirtd", "virsh", "nsenter", "ssh-keygen"}, tools...) {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed", bin)
		}
	}
	dir = filepath.Join(os.TempDir(), name)
	script := filepath.Join(repoRoot(t), "scripts/host2.sh")
	run := func(verb string) (string, error) {
		out, err := exec.Command(script, verb, dir, fmt.Sprint(port)).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("host2.sh %s: %v\n%s", verb, err, out)
		}
		return lastLine(string(out)), nil
	}
	stop = func() error { _, err := run("stop"); return err }
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	begun := time.Now()
	uri, err := run("start")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host2 %s (and its sshd) up in %s", uri, time.Since(begun).Round(10*time.Millisecond))
	return dir, uri, stop
}
