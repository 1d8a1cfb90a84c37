//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// host2 runs a second libvirtd on this machine (scripts/host2.sh: its own
// configuration, sockets, host UUID and desktop folder in a private mount
// namespace), reached over qemu+tcp as a remote host would be.
type host2 struct {
	t        *testing.T
	dir, uri string
	script   string
	// dataDir is the bureau data directory whose desktops/ and images/
	// are host2's own ("" = /var/lib/bureau).
	dataDir string
}

func startHost2(t *testing.T) *host2 { return startHost2For(t, "") }

// startHost2For starts host2 with dataDir's desktops/ and images/ its own,
// as a bureau server with that data directory finds them on a remote host.
func startHost2For(t *testing.T, dataDir string) *host2 {
	t.Helper()
	h := &host2{t: t, dir: filepath.Join(os.TempDir(), "bureau-e2e-host2"), script: filepath.Join(repoRoot(t), "scripts/host2.sh"), dataDir: dataDir}
	t.Cleanup(func() { h.run("stop") })
	h.uri = h.run("start")
	return h
}

// run runs the script with the test's folder and port; it returns the
// last line of its output (the URI, for start).
func (h *host2) run(verb string) string {
	h.t.Helper()
	cmd := exec.Command(h.script, verb, h.dir, "16511")
	if h.dataDir != "" {
		cmd.Env = append(os.Environ(), "BUREAU_HOST2_DATA_DIR="+h.dataDir)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("host2.sh %s: %v\n%s", verb, err, out)
	}
	return lastLine(string(out))
}

// waitHost polls GET /hosts/name until its state is want.
func (s *server) waitHost(name, want string, timeout time.Duration) apiv1.Host {
	s.t.Helper()
	var h apiv1.Host
	deadline := time.Now().Add(timeout)
	for {
		h = apiv1.Host{} // fields left out of a reply (omitempty) must not keep the last one's
		if code := s.call(adminToken, "GET", "/api/v1/hosts/"+name, nil, &h); code != http.StatusOK {
			s.t.Fatalf("get host %s: %d", name, code)
		}
		if h.State == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if h.State != want {
		s.t.Fatalf("host %s is %s (%s), want %s within %s", name, h.State, h.LastError, want, timeout)
	}
	return h
}

// TestHosts: the local host is the first one; on PostgreSQL a second
// libvirtd is added, shown with what it reports, seen unreachable when its
// daemon stops and up again when it is back, and removed; on SQLite a
// second host is refused with the reason.
func TestHosts(t *testing.T) {
	s := newServer(t)
	s.stop()
	s.env = append(s.env, "BUREAU_HOST_CHECK_SECONDS=2")
	s.start()

	var list struct{ Hosts []apiv1.Host }
	if code := s.call(adminToken, "GET", "/api/v1/hosts", nil, &list); code != http.StatusOK || len(list.Hosts) != 1 {
		t.Fatalf("hosts at start: %d %+v", code, list)
	}
	local := s.waitHost("local", "up", 30*time.Second)
	var info map[string]string
	s.call(adminToken, "GET", "/api/v1/info", nil, &info)
	if local.URI != "qemu:///system" || local.Accelerator != info["accelerator"] || local.CPUs < 1 || local.MemoryMiB < 1024 || local.FreeMemoryMiB <= 0 ||
		local.LibvirtVersion == "" || local.LastSeenAt == nil {
		t.Errorf("local host %+v (accelerator chosen at start-up: %s)", local, info["accelerator"])
	}
	s.expectError(adminToken, "DELETE", "/api/v1/hosts/local", nil, http.StatusConflict, "in_use")

	if s.dbURL == "" {
		e := s.expectError(adminToken, "POST", "/api/v1/hosts", map[string]any{"name": "two", "uri": "qemu+tcp://127.0.0.1:16511/system"},
			http.StatusConflict, "needs_postgres")
		if !strings.Contains(e.Error.Message, "PostgreSQL") {
			t.Errorf("refusal on SQLite: %q", e.Error.Message)
		}
		return
	}

	s.expectError(adminToken, "POST", "/api/v1/hosts", map[string]any{"name": "two", "uri": "qemu+tcp://127.0.0.1:16511/system"},
		http.StatusUnprocessableEntity, "host_unreachable")
	h2 := startHost2(t)
	two := addHost2(t, s, h2, local)
	s.expectError(adminToken, "POST", "/api/v1/hosts", map[string]any{"name": "two", "uri": h2.uri}, http.StatusConflict, "exists")
	s.call(adminToken, "GET", "/api/v1/hosts", nil, &list)
	if len(list.Hosts) != 2 || list.Hosts[0].Name != "local" || list.Hosts[1].Name != "two" {
		t.Errorf("hosts %+v", list.Hosts)
	}
	// The CLI shows both.
	cli := exec.Command(s.bin, "host", "list")
	cli.Env = append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+adminToken)
	out, err := cli.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "two") || !strings.Contains(string(out), h2.uri) {
		t.Errorf("bureau host list: %v\n%s", err, out)
	}
	// The web console's Hosts page shows both, and drains two (it runs
	// no desktops) and undrains it.
	checkHostsPage(t, s, "two")

	begun := time.Now()
	h2.run("stop")
	lost := s.waitHost("two", "unreachable", time.Minute)
	t.Logf("host two seen unreachable %s after its libvirtd stopped: %s", time.Since(begun).Round(100*time.Millisecond), lost.LastError)
	if lost.LastError == "" || lost.CPUs != two.CPUs {
		t.Errorf("lost host %+v (keeps what it last reported, says why)", lost)
	}
	begun = time.Now()
	h2.run("start")
	back := s.waitHost("two", "up", time.Minute)
	t.Logf("host two up again %s after its libvirtd started", time.Since(begun).Round(100*time.Millisecond))
	if back.LastError != "" || !back.LastSeenAt.After(*lost.LastSeenAt) {
		t.Errorf("host back %+v", back)
	}
	// Its stop took bureau's network down with it (host2.sh destroys its
	// networks): bureau made it ready again over the new connection.
	h2.waitReady(s)
	// A host that stops answering without closing the connection (hung,
	// or a link that went quiet) is found by libvirt's keepalive or the
	// check's deadline.
	pid, err := os.ReadFile(filepath.Join(h2.dir, "libvirtd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	signal := func(sig string) {
		if out, err := exec.Command("kill", "-"+sig, strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
			t.Fatalf("kill -%s: %v %s", sig, err, out)
		}
	}
	begun = time.Now()
	signal("STOP")
	hung := s.waitHost("two", "unreachable", 2*time.Minute)
	t.Logf("host two (libvirtd stopped by SIGSTOP) seen unreachable after %s: %s", time.Since(begun).Round(100*time.Millisecond), hung.LastError)
	begun = time.Now()
	signal("CONT")
	s.waitHost("two", "up", time.Minute)
	t.Logf("host two up again %s after SIGCONT", time.Since(begun).Round(100*time.Millisecond))

	if code := s.call(adminToken, "DELETE", "/api/v1/hosts/two", nil, nil); code != http.StatusNoContent {
		t.Errorf("remove host two: %d", code)
	}
	s.expectError(adminToken, "GET", "/api/v1/hosts/two", nil, http.StatusNotFound, "not_found")
	if out, err := exec.Command("nft", "list", "table", "inet", hostTable(s, "two")).CombinedOutput(); err == nil {
		t.Errorf("bureau's tables stay on a removed host:\n%s", out)
	}
}
