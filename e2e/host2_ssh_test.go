//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bureau/bureau/internal/netpolicy"
)

// TestHost2SSH checks what a remote host needs besides its libvirt
// connection (docs/research/multi-host.md §5): host2's sshd
// (scripts/host2.sh, inside host2's mount namespace) takes bureau's key and
// only with host2's pinned host key; a desktop's VNC unix socket in host2's
// own desktops folder answers RFB through SSH streamlocal forwarding; and
// `nft -f -` run through SSH applies, refuses atomically and deletes a
// table, with its exit status and messages coming back.
func TestHost2SSH(t *testing.T) {
	// Its own folder and ports (16513, ssh 16514).
	dir, uri, stopHost2 := ownHost2(t, "bureau-e2e-host2-ssh", 16513, "nft")
	var begun time.Time
	libvirtdPid := strings.TrimSpace(host2File(t, filepath.Join(dir, "libvirtd.pid")))
	host2NS, err := os.Readlink("/proc/" + libvirtdPid + "/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}

	// (a) The key made for host2 gets in, with host2's host key pinned.
	sshDir := filepath.Join(dir, "ssh")
	addr := net.JoinHostPort("127.0.0.1", strings.TrimSpace(host2File(t, filepath.Join(sshDir, "port"))))
	signer, err := ssh.ParsePrivateKey([]byte(host2File(t, filepath.Join(sshDir, "id_ed25519"))))
	if err != nil {
		t.Fatal(err)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(host2File(t, filepath.Join(sshDir, "host_ed25519.pub"))))
	if err != nil {
		t.Fatal(err)
	}
	config := func(auth ssh.Signer, pinned ssh.PublicKey) *ssh.ClientConfig {
		return &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(auth)},
			HostKeyCallback: ssh.FixedHostKey(pinned), HostKeyAlgorithms: []string{pinned.Type()}, Timeout: 10 * time.Second}
	}
	begun = time.Now()
	client, err := ssh.Dial("tcp", addr, config(signer, hostKey))
	if err != nil {
		t.Fatalf("ssh to host2: %v", err)
	}
	defer client.Close()
	t.Logf("ssh connection (key exchange, public key auth) in %s, server %s", time.Since(begun).Round(time.Millisecond), client.ServerVersion())
	// Another host key (a server in host2's place) is refused, and so is
	// a key host2 does not know.
	if c, err := ssh.Dial("tcp", addr, config(signer, signer.PublicKey())); err == nil || !strings.Contains(err.Error(), "host key mismatch") {
		if c != nil {
			c.Close()
		}
		t.Errorf("host key other than the pinned one: %v, want a mismatch", err)
	}
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	strangerSigner, _ := ssh.NewSignerFromKey(stranger)
	if c, err := ssh.Dial("tcp", addr, config(strangerSigner, hostKey)); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		if c != nil {
			c.Close()
		}
		t.Errorf("unknown client key: %v, want refused", err)
	}

	// Commands run in host2's mount namespace.
	out, stderr, code, err := sshRun(client, "readlink /proc/self/ns/mnt", "")
	if err != nil || code != 0 || strings.TrimSpace(out) != host2NS {
		t.Fatalf("ssh session's mount namespace %q (%d %v %s), host2's %s", out, code, err, stderr, host2NS)
	}
	if own, _ := os.Readlink("/proc/self/ns/mnt"); own == host2NS {
		t.Fatalf("host2 runs in the test's own mount namespace %s", own)
	}

	// (b) A tiny domain on host2 whose VNC socket is in host2's own
	// desktops folder (DIR/desktops here, /var/lib/bureau/desktops there).
	virsh := virshOn(uri)
	name, sock := tinyVNCDomain(t, dir, virsh, "e2e-ssh")
	suffix := strings.TrimPrefix(name, "e2e-ssh-")
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host1's %s: %v, want it absent (the socket is host2's)", sock, err)
	}
	if out, stderr, code, err := sshRun(client, "test -S "+sock+" && stat -c %U "+sock, ""); err != nil || code != 0 {
		t.Fatalf("socket on host2: %d %v %s %s", code, err, out, stderr)
	} else {
		t.Logf("on host2, %s is a socket owned by %s", sock, strings.TrimSpace(out))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begun = time.Now()
	conn, err := client.DialContext(ctx, "unix", sock)
	if err != nil {
		t.Fatalf("dial %s through ssh: %v", sock, err)
	}
	w, h, desktopName, err := rfbHandshake(conn)
	conn.Close()
	if err != nil {
		t.Fatalf("RFB through ssh: %v", err)
	}
	t.Logf("RFB through ssh streamlocal: greeting, no-auth, ServerInit %dx%d %q in %s", w, h, desktopName, time.Since(begun).Round(time.Millisecond))
	if desktopName != "QEMU ("+name+")" || w == 0 || h == 0 { // QEMU names the desktop after the domain
		t.Errorf("ServerInit %dx%d %q, want the domain %s", w, h, desktopName, name)
	}
	if _, err := client.DialContext(ctx, "unix", "/var/lib/bureau/desktops/"+name+"/missing.sock"); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("dial a socket that is not there: %v, want the channel rejected", err)
	} else {
		t.Logf("dial a socket that is not there: %v", err)
	}

	// (c) bureau's own firewall applied on host2 through SSH: `nft -f -`,
	// as netpolicy.Nft does locally. host2 shares this machine's network
	// namespace, so the test sees its tables. The table has a chain
	// without a hook: no packet ever goes through it.
	table := "bureau_e2essh_" + suffix
	t.Cleanup(func() { exec.Command("nft", "delete", "table", "inet", table).Run() })
	apply := sshNft(client)
	begun = time.Now()
	if err := apply(ctx, fmt.Sprintf("table inet %s {\n\tchain c {\n\t\tip daddr 192.0.2.1 drop\n\t}\n}\n", table)); err != nil {
		t.Fatalf("nft through ssh: %v", err)
	}
	t.Logf("nft -f - through ssh in %s", time.Since(begun).Round(time.Millisecond))
	if out, err := exec.Command("nft", "list", "table", "inet", table).CombinedOutput(); err != nil || !strings.Contains(string(out), "192.0.2.1") {
		t.Errorf("table made through ssh, seen here: %v\n%s", err, out)
	}
	// A script with an error: nothing of it is applied (one transaction),
	// and nft's status and message come back.
	other := table + "_x"
	t.Cleanup(func() { exec.Command("nft", "delete", "table", "inet", other).Run() })
	err = apply(ctx, fmt.Sprintf("table inet %s {}\ntable inet %s {\n\tchain c {\n\t\ttype filter hook nosuchhook priority 0;\n\t}\n}\n", other, other))
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 1 || !strings.Contains(err.Error(), "Error:") {
		t.Errorf("bad script through ssh: %v, want nft's exit status 1 and its message", err)
	} else {
		t.Logf("bad script through ssh: %v", err)
	}
	if exec.Command("nft", "list", "table", "inet", other).Run() == nil {
		t.Errorf("table %s of a refused script exists", other)
	}
	begun = time.Now()
	if err := apply(ctx, "delete table inet "+table+"\n"); err != nil {
		t.Errorf("delete through ssh: %v", err)
	}
	t.Logf("delete through ssh in %s", time.Since(begun).Round(time.Millisecond))
	if exec.Command("nft", "list", "table", "inet", table).Run() == nil {
		t.Errorf("table %s still there after its delete through ssh", table)
	}

	// Stopping host2 stops its sshd and every session; nothing is left
	// in its namespace.
	client.Close()
	virsh("destroy", name)
	if err := stopHost2(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("sshd still listens on %s after stop", addr)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if ns, _ := os.Readlink(p + "/ns/mnt"); ns == host2NS {
			comm, _ := os.ReadFile(p + "/comm")
			t.Errorf("process %s (%s) still in host2's namespace after stop", filepath.Base(p), bytes.TrimSpace(comm))
		}
	}
}

// sshNft is a netpolicy.Applier that loads the script on the host at the
// other end of c, with `nft -f -` (one transaction, as locally).
func sshNft(c *ssh.Client) netpolicy.Applier {
	return func(ctx context.Context, script string) error {
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		// Not one buffer for both: x/crypto/ssh copies stdout and
		// stderr in two goroutines (unlike os/exec for the same writer),
		// and bytes.Buffer is not safe for that: messages got lost.
		var stdout, stderr bytes.Buffer
		s.Stdin = strings.NewReader(script)
		s.Stdout, s.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		go func() { done <- s.Run("nft -f -") }()
		select {
		case err = <-done:
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("nft: %w: %s", err, bytes.TrimSpace(append(stderr.Bytes(), stdout.Bytes()...)))
		}
		return nil
	}
}

// sshRun runs cmd on the host at the other end of c; code is its exit
// status, err only when it did not run or report one.
func sshRun(c *ssh.Client, cmd, stdin string) (stdout, stderr string, code int, err error) {
	s, err := c.NewSession()
	if err != nil {
		return "", "", 0, err
	}
	defer s.Close()
	stop := time.AfterFunc(30*time.Second, func() { s.Close() })
	defer stop.Stop()
	var o, e bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = strings.NewReader(stdin), &o, &e
	err = s.Run(cmd)
	var exit *ssh.ExitError
	if errors.As(err, &exit) {
		return o.String(), e.String(), exit.ExitStatus(), nil
	}
	return o.String(), e.String(), 0, err
}

// rfbHandshake runs an RFB 3.8 client's side up to ServerInit without
// authentication (a unix socket VNC has none) and returns the
// framebuffer's size and the desktop's name.
func rfbHandshake(c net.Conn) (w, h uint16, name string, err error) {
	stop := time.AfterFunc(20*time.Second, func() { c.Close() }) // ssh channels have no deadlines
	defer stop.Stop()
	greeting := make([]byte, 12)
	if _, err = io.ReadFull(c, greeting); err != nil {
		return 0, 0, "", fmt.Errorf("greeting: %w", err)
	}
	if string(greeting) != "RFB 003.008\n" {
		return 0, 0, "", fmt.Errorf("greeting %q", greeting)
	}
	if _, err = c.Write(greeting); err != nil {
		return 0, 0, "", err
	}
	var n [1]byte
	if _, err = io.ReadFull(c, n[:]); err != nil || n[0] == 0 {
		return 0, 0, "", fmt.Errorf("security types: %d %v", n[0], err)
	}
	types := make([]byte, n[0])
	if _, err = io.ReadFull(c, types); err != nil {
		return 0, 0, "", err
	}
	if !bytes.Contains(types, []byte{1}) {
		return 0, 0, "", fmt.Errorf("security types %v, no None (1)", types)
	}
	if _, err = c.Write([]byte{1}); err != nil {
		return 0, 0, "", err
	}
	var result [4]byte
	if _, err = io.ReadFull(c, result[:]); err != nil || binary.BigEndian.Uint32(result[:]) != 0 {
		return 0, 0, "", fmt.Errorf("security result %v %v", result, err)
	}
	if _, err = c.Write([]byte{1}); err != nil { // ClientInit: shared
		return 0, 0, "", err
	}
	var init [24]byte // width, height, pixel format (16), name length
	if _, err = io.ReadFull(c, init[:]); err != nil {
		return 0, 0, "", fmt.Errorf("ServerInit: %w", err)
	}
	nameBytes := make([]byte, binary.BigEndian.Uint32(init[20:]))
	if _, err = io.ReadFull(c, nameBytes); err != nil {
		return 0, 0, "", err
	}
	return binary.BigEndian.Uint16(init[0:]), binary.BigEndian.Uint16(init[2:]), string(nameBytes), nil
}

// host2File is a file of scripts/host2.sh's folder.
func host2File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
