//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// The desktops' gateway: the host's address on their network (the first
// address of BUREAU_NETWORK_SUBNET's default).
const desktopGateway = "10.120.0.1"

// testIsolation checks from inside a real desktop that it reaches nothing
// of the host and, by default, nothing private, that its egress policy
// changes that on the running desktop, and that its QEMU runs as its own
// unprivileged user who cannot read bureau's secrets.
func testIsolation(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	t.Run("qemu_unprivileged", func(t *testing.T) { checkQEMUUser(t, s, d) })

	ns := newTestNet(t)
	// A listener on every host address stands for any service the host
	// runs; bureau and PostgreSQL listen on the host's loopback.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "host") }))
	hostPort := l.Addr().(*net.TCPAddr).Port
	_, bureauPort, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))

	reach := func(addr string) bool {
		t.Helper()
		out, _ := s.guest(d, "curl -s -m 4 -o /dev/null -w %{http_code} http://"+addr+"/ || true")
		return out == "200" || out == "404"
	}
	expect := func(what, addr string, want bool) {
		t.Helper()
		if got := reach(addr); got != want {
			t.Errorf("%s (%s): reached=%t, want %t", what, addr, got, want)
		}
	}
	// The default policy: the outside (a documentation address standing
	// in for the internet) yes; the host, private and link-local no.
	expect("a public address", ns.public, true)
	expect("a private address", ns.private, false)
	expect("a link-local (metadata) address", ns.linkLocal, false)
	expect("a service on the host's addresses, via the gateway", net.JoinHostPort(desktopGateway, strconv.Itoa(hostPort)), false)
	expect("bureau's API port, via the gateway", net.JoinHostPort(desktopGateway, bureauPort), false)
	expect("PostgreSQL's port, via the gateway", net.JoinHostPort(desktopGateway, "5432"), false)

	// A policy on the running desktop: invalid entries are refused whole.
	s.expectError(token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{"deny_out": []string{"300.1.2.3/8"}}}, 422, "invalid")
	s.expectError(token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{"allow_out": []string{"fd00::/8"}}}, 422, "invalid")
	// Cloud metadata (link-local) is never opened, not even by an admin;
	// private ranges only by an admin; a desktop's own token changes no
	// policy of its desktop.
	for _, who := range []string{token, adminToken} {
		s.expectError(who, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{"allow_out": []string{"169.254.169.254"}}}, 422, "invalid")
		s.expectError(who, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{"allow_out": []string{"169.254.77.77"}}}, 422, "invalid")
	}
	policy := map[string]any{"allow_out": []string{"10.99.0.0/24"}, "deny_out": []string{"198.51.100.0/24"}}
	s.expectError(token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": policy}, 403, "forbidden")
	var agent struct {
		Token string `json:"token"`
	}
	if code := s.call(token, "POST", "/api/v1/tokens", map[string]any{"desktop_id": d.ID, "ttl_seconds": 600}, &agent); code != http.StatusCreated {
		t.Fatalf("desktop token: %d", code)
	}
	s.expectError(agent.Token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{"allow_out": []string{"203.0.113.5"}}}, 403, "forbidden")
	s.expectError(agent.Token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"idle_timeout_seconds": 0}, 403, "forbidden")
	expect("a private address an owner could not open", ns.private, false)
	var got apiv1.Desktop
	if code := s.call(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": policy}, &got); code != http.StatusOK {
		t.Fatalf("set network policy as admin: %d", code)
	}
	if len(got.Network.AllowOut) != 1 || len(got.Network.DenyOut) != 1 {
		t.Errorf("policy read back: %+v", got.Network)
	}
	expect("a private address the admin's policy allows", ns.private, true)
	expect("a public address the policy denies", ns.public, false)
	expect("a link-local address the policy does not name", ns.linkLocal, false)
	// The owner may keep what the admin opened while changing the rest.
	policy = map[string]any{"allow_out": []string{"10.99.0.0/24"}, "deny_out": []string{"0.0.0.0/0"}}
	if code := s.call(token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": policy}, nil); code != http.StatusOK {
		t.Errorf("owner keeping the admin's allow: %d", code)
	}
	expect("a private address allowed under deny-all", ns.private, true)
	expect("a public address under deny-all", ns.public, false)
	// An admin's allow of everything still opens neither the host nor
	// cloud metadata: the stand-in metadata server stays unreachable.
	policy = map[string]any{"allow_out": []string{"0.0.0.0/0"}}
	if code := s.call(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": policy}, nil); code != http.StatusOK {
		t.Errorf("admin allowing everything: %d", code)
	}
	expect("a link-local (metadata) address under allow-all", ns.linkLocal, false)
	expect("the host, even when allowed", net.JoinHostPort(desktopGateway, strconv.Itoa(hostPort)), false)
	s.call(adminToken, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{"deny_out": []string{"0.0.0.0/0"}}}, nil)

	var evs struct{ Events []apiv1.Event }
	s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &evs)
	if last := evs.Events[len(evs.Events)-1]; last.Type != "network_policy_set" || !strings.Contains(last.Message, "deny 0.0.0.0/0") {
		t.Errorf("last event %+v, want the policy change", last)
	}
	s.call(token, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": map[string]any{}}, nil)
	expect("a public address, policy back to default", ns.public, true)
}

// checkQEMUUser: the desktop's QEMU is not root, cannot list the data
// directory or read bureau's admin token and database, and can read its
// own disk (so the refusals are not a broken test).
func checkQEMUUser(t *testing.T, s *server, d *apiv1.Desktop) {
	u := qemuUserOf(t, d)
	if u.uid == "0" || u.gid == "0" {
		t.Fatalf("QEMU runs as uid %q gid %q, want an unprivileged user", u.uid, u.gid)
	}
	t.Logf("QEMU runs as uid %s gid %s", u.uid, u.gid)
	as := u.run
	if err := as("head", "-c", "4", filepath.Join(s.dataDir, "desktops", d.ID, "os.qcow2")); err != nil {
		t.Errorf("QEMU's user cannot read its own disk: %v", err)
	}
	for _, secret := range []string{"admin-token", "bureau.db"} {
		p := filepath.Join(s.dataDir, secret)
		if !exists(p) {
			continue
		}
		if err := as("head", "-c", "1", p); err == nil {
			t.Errorf("QEMU's user can read %s", p)
		}
	}
	if err := as("ls", s.dataDir); err == nil {
		t.Errorf("QEMU's user can list the data directory")
	}
}

// qemuUser is the host user and group a desktop's QEMU process runs as.
type qemuUser struct{ uid, gid string }

func qemuUserOf(t *testing.T, d *apiv1.Desktop) qemuUser {
	t.Helper()
	pid, err := os.ReadFile("/run/libvirt/qemu/" + domainOf(d.ID) + ".pid")
	if err != nil {
		t.Fatalf("QEMU pid: %v", err)
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var u qemuUser
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			u.uid = f[1]
		} else if len(f) > 1 && f[0] == "Gid:" {
			u.gid = f[1]
		}
	}
	if u.uid == "" || u.gid == "" {
		t.Fatalf("no Uid/Gid in QEMU's /proc status")
	}
	return u
}

// run runs a command as that user and group, with no other groups.
func (u qemuUser) run(args ...string) error {
	return exec.Command("setpriv", append([]string{"--reuid=" + u.uid, "--regid=" + u.gid, "--clear-groups", "--"}, args...)...).Run()
}

// testNet is a network namespace the test makes: stand-ins for a public,
// a private and a link-local (metadata) server, routed from the host, so
// no check ever leaves this machine.
type testNet struct{ public, private, linkLocal string }

func newTestNet(t *testing.T) testNet {
	t.Helper()
	name := fmt.Sprintf("bureau-e2e-%d", os.Getpid()%100000)
	hostIf, nsIf := fmt.Sprintf("bxe%da", os.Getpid()%100000), fmt.Sprintf("bxe%db", os.Getpid()%100000)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	cleanup := func() {
		if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
			for _, pid := range strings.Fields(string(out)) {
				exec.Command("kill", pid).Run()
			}
		}
		exec.Command("ip", "link", "del", hostIf).Run()
		exec.Command("ip", "netns", "del", name).Run()
		for _, r := range []string{"169.254.77.77/32", "198.51.100.0/24"} {
			exec.Command("ip", "route", "del", r).Run()
		}
	}
	removeStaleTestNets()
	cleanup()
	t.Cleanup(cleanup)
	run("ip", "netns", "add", name)
	run("ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	run("ip", "link", "set", nsIf, "netns", name)
	run("ip", "addr", "add", "10.99.0.1/24", "dev", hostIf)
	run("ip", "link", "set", hostIf, "up")
	in := func(args ...string) { run(append([]string{"ip", "netns", "exec", name}, args...)...) }
	in("ip", "link", "set", "lo", "up")
	for _, a := range []string{"10.99.0.2/24", "169.254.77.77/32", "198.51.100.10/24"} {
		in("ip", "addr", "add", a, "dev", nsIf)
	}
	in("ip", "link", "set", nsIf, "up")
	in("ip", "route", "add", "default", "via", "10.99.0.1")
	run("ip", "route", "add", "169.254.77.77/32", "via", "10.99.0.2")
	run("ip", "route", "add", "198.51.100.0/24", "via", "10.99.0.2")
	srv := exec.Command("ip", "netns", "exec", name, "python3", "-m", "http.server", "8000")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", "10.99.0.2:8000", time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the test namespace's server did not come up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return testNet{public: "198.51.100.10:8000", private: "10.99.0.2:8000", linkLocal: "169.254.77.77:8000"}
}

// removeStaleTestNets deletes the namespaces and veths of earlier runs
// whose test process is gone (killed before its cleanup ran): their
// routes to 10.99.0.0/24 would shadow this run's.
func removeStaleTestNets() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "bureau-e2e-") {
			continue
		}
		pid := strings.TrimPrefix(f[0], "bureau-e2e-")
		if n, err := strconv.Atoi(pid); err != nil || n == os.Getpid()%100000 || exists("/proc/"+pid) {
			continue
		}
		exec.Command("ip", "link", "del", "bxe"+pid+"a").Run()
		exec.Command("ip", "netns", "del", f[0]).Run()
	}
}
