//go:build e2e

package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/netpolicy"
)

// addHost2 adds host2 as host "two" the way an admin would: first with
// what is missing or wrong, each refused with what to fix (no SSH address
// for a qemu+tcp URI, no host key — the refusal shows the one host2
// offers —, a wrong host key, bureau's key not yet authorized), then with
// its SSH address, pinned key and its own desktop network (bridge bureau1,
// 10.121.0.0/16: both hosts share this machine's kernel). It checks the
// host came out ready: bureau's network defined and up on host2, and
// bureau's firewall tables for it loaded through SSH.
func addHost2(t *testing.T, s *server, h2 *host2, local apiv1.Host) apiv1.Host {
	t.Helper()
	sshDir := filepath.Join(h2.dir, "ssh")
	port, err := os.ReadFile(filepath.Join(sshDir, "port"))
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := os.ReadFile(filepath.Join(sshDir, "host_ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.Join(strings.Fields(string(hostKey))[:2], " ")
	addr := "root@127.0.0.1:" + strings.TrimSpace(string(port))
	req := map[string]any{"name": "two", "uri": h2.uri, "labels": map[string]string{"zone": "b"}, "bridge": "bureau1", "subnet": "10.121.0.0/16"}
	with := func(kv ...string) map[string]any {
		r := map[string]any{}
		for k, v := range req {
			r[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			r[kv[i]] = kv[i+1]
		}
		return r
	}
	refused := func(body map[string]any, status int, code, field, says string) {
		t.Helper()
		e := s.expectError(adminToken, "POST", "/api/v1/hosts", body, status, code)
		if e.Error.Field != field || !strings.Contains(e.Error.Message, says) {
			t.Errorf("refusal: field %q message %q, want field %q and %q in it", e.Error.Field, e.Error.Message, field, says)
		}
	}
	refused(req, http.StatusUnprocessableEntity, "invalid", "ssh_address", "ssh_address")
	refused(with("ssh_address", addr), http.StatusUnprocessableEntity, "invalid", "ssh_host_key", pinned)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherKey, _ := ssh.NewPublicKey(other.Public())
	refused(with("ssh_address", addr, "ssh_host_key", string(ssh.MarshalAuthorizedKey(otherKey))), http.StatusUnprocessableEntity, "host_not_ready", "ssh_host_key", "host key")

	var keys struct {
		Key string `json:"ssh_public_key"`
	}
	s.call(adminToken, "GET", "/api/v1/hosts", nil, &keys)
	if !strings.HasPrefix(keys.Key, "ssh-ed25519 ") {
		t.Fatalf("bureau's SSH key: %q", keys.Key)
	}
	refused(with("ssh_address", addr, "ssh_host_key", pinned), http.StatusUnprocessableEntity, "host_not_ready", "ssh_address", keys.Key)
	// The admin authorizes bureau's key on the host (kept across host2's
	// restarts).
	if err := os.WriteFile(filepath.Join(sshDir, "authorized_keys.more"), []byte("restrict,port-forwarding "+keys.Key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(sshDir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("restrict,port-forwarding " + keys.Key + "\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var two apiv1.Host
	if code := s.call(adminToken, "POST", "/api/v1/hosts", with("ssh_address", addr, "ssh_host_key", string(hostKey)), &two); code != http.StatusCreated {
		t.Fatalf("add host two: %d", code)
	}
	if two.State != "up" || two.Accelerator != local.Accelerator || two.CPUs != local.CPUs || two.Labels["zone"] != "b" || !two.Ready ||
		two.SSHAddress != addr || two.SSHHostKey != pinned || two.Bridge != "bureau1" || two.Subnet != "10.121.0.0/16" {
		t.Errorf("host two %+v", two)
	}
	h2.checkReady(t, s)
	return two
}

// hostTable is the inet table of bureau's firewall for host on s's
// instance (internal/hosts/prepare names it after the data directory and
// the host).
func hostTable(s *server, host string) string {
	return netpolicy.TableName(netpolicy.InstanceTag(s.dataDir + "\x00" + host))
}

// waitReady waits for bureau to make host two ready again, then checks it.
func (h *host2) waitReady(s *server) {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	var two apiv1.Host
	for {
		two = apiv1.Host{}
		s.call(adminToken, "GET", "/api/v1/hosts/two", nil, &two)
		if two.Ready || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !two.Ready {
		h.t.Fatalf("host two not ready again: %+v", two)
	}
	h.checkReady(h.t, s)
}

// checkReady: bureau's desktop network is defined, up and autostarted on
// host2 with its own bridge and subnet, and bureau's firewall tables for it
// are loaded (the kernel is this machine's).
func (h *host2) checkReady(t *testing.T, s *server) {
	t.Helper()
	out, err := exec.Command("virsh", "-c", h.uri, "net-dumpxml", "bureau").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "name='bureau1'") || !strings.Contains(string(out), "address='10.121.0.1'") {
		t.Errorf("bureau's network on host2: %v\n%s", err, out)
	}
	info, err := exec.Command("virsh", "-c", h.uri, "net-info", "bureau").CombinedOutput()
	if err != nil || !strings.Contains(string(info), "Active:         yes") || !strings.Contains(string(info), "Autostart:      yes") {
		t.Errorf("bureau's network on host2 is not active and autostarted: %v\n%s", err, info)
	}
	table := hostTable(s, "two")
	inet, err := exec.Command("nft", "list", "table", "inet", table).CombinedOutput()
	if err != nil || !strings.Contains(string(inet), `iifname "bureau1" drop comment "desktops never reach the host"`) {
		t.Errorf("bureau's firewall for host2 (inet %s): %v\n%s", table, err, inet)
	}
	bridge, err := exec.Command("nft", "list", "table", "bridge", table).CombinedOutput()
	if err != nil || !strings.Contains(string(bridge), "ip daddr 10.121.0.0/16 drop") {
		t.Errorf("bureau's firewall for host2 (bridge %s): %v\n%s", table, err, bridge)
	}
}
