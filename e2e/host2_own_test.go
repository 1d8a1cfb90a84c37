//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
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

// virshOn runs virsh against uri (quiet, at most a minute per command).
func virshOn(uri string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "virsh", append([]string{"-q", "-c", uri}, args...)...).CombinedOutput()
		return string(out), err
	}
}

// tinyVNCDomain starts a transient 64 MiB domain named prefix-<random> on
// host2 (folder dir, virsh on it), never bureau-* (other tests own those),
// whose VNC socket is in host2's own desktops folder: DIR/desktops here,
// /var/lib/bureau/desktops there, the path it returns. The domain and its
// folder go when the test ends.
func tinyVNCDomain(t *testing.T, dir string, virsh func(...string) (string, error), prefix string) (name, sock string) {
	t.Helper()
	var random [4]byte
	rand.Read(random[:])
	name = prefix + "-" + hex.EncodeToString(random[:])
	folder := filepath.Join(dir, "desktops", name)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(folder) })
	if u, err := user.Lookup("libvirt-qemu"); err == nil { // QEMU's user on Debian
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(folder, uid, gid)
	} else {
		os.Chmod(folder, 0o777)
	}
	sock = "/var/lib/bureau/desktops/" + name + "/vnc.sock"
	xmlPath := filepath.Join(t.TempDir(), "domain.xml")
	if err := os.WriteFile(xmlPath, []byte(fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices>
    <graphics type='vnc'><listen type='socket' socket='%s'/></graphics>
  </devices>
</domain>
`, name, sock)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { virsh("destroy", name) }) // transient: gone once destroyed
	begun := time.Now()
	if out, err := virsh("create", xmlPath); err != nil {
		t.Fatalf("create a tiny domain on host2: %v\n%s", err, out)
	}
	t.Logf("tiny domain %s started on host2 in %s", name, time.Since(begun).Round(time.Millisecond))
	return name, sock
}
