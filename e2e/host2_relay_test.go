//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/sshlink"
	"github.com/bureau/bureau/internal/vncrelay"
)

// TestHost2Relay checks the display of a desktop on a remote host with
// bureau's peer check kept (docs/research/multi-host.md §5): through SSH
// streamlocal forwarding the peer bureau sees is sshd, so vncrelay runs
// the check on the host. On host2 (scripts/host2.sh, its sshd inside
// host2's mount namespace), vncrelay.Dial through an sshlink.Link relays
// a tiny domain's VNC socket when its QEMU user is the one asked for (RFB
// 3.8 handshake through it), refuses with the script's message when it
// is not, and the relay on the host ends when bureau closes its conn.
func TestHost2Relay(t *testing.T) {
	// Its own folder and ports (16517, ssh 16518).
	dir, uri, _ := ownHost2(t, "bureau-e2e-host2-relay", 16517)
	var begun time.Time

	// bureau's SSH link to host2: its client key, host2's key pinned.
	sshDir := filepath.Join(dir, "ssh")
	signer, err := sshlink.ClientKey(filepath.Join(sshDir, "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := sshlink.ParseHostKey(host2File(t, filepath.Join(sshDir, "host_ed25519.pub")))
	if err != nil {
		t.Fatal(err)
	}
	target := sshlink.Target{
		Addr:    net.JoinHostPort("127.0.0.1", strings.TrimSpace(host2File(t, filepath.Join(sshDir, "port")))),
		User:    "root",
		HostKey: hostKey,
		Signer:  signer,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begun = time.Now()
	link, err := sshlink.Dial(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	t.Logf("ssh link to %s in %s", target, time.Since(begun).Round(time.Millisecond))
	run := func(cmd string) string {
		t.Helper()
		out, _, err := link.Run(ctx, cmd, nil)
		if err != nil {
			t.Fatalf("%s on host2: %v", cmd, err)
		}
		return strings.TrimSpace(string(out))
	}

	// python3 on host2 (this machine's, seen from its mount namespace).
	t.Logf("python3 on host2: %s, %s", run("command -v python3"), run("python3 -c 'import sys; print(sys.version.split()[0])'"))
	// What a session costs before the relay's own work: the login shell
	// (root's rc files) and the session's round trips.
	t.Logf("ssh session running `true`: %s (median of 5)", timed(5, func() { run("true") }))
	t.Logf("python3 -I -S -c pass over ssh: %s via PATH, %s as /usr/bin/python3 (median of 5)",
		timed(5, func() { run("python3 -I -S -c pass") }), timed(5, func() { run("/usr/bin/python3 -I -S -c pass") }))

	// A tiny domain on host2 whose VNC socket is in host2's own desktops
	// folder (DIR/desktops here, /var/lib/bureau/desktops there).
	name, sock := tinyVNCDomain(t, dir, virshOn(uri), "e2e-relay")
	// The QEMU user serving the socket, as host2 sees it.
	qemuUID, err := strconv.Atoi(run("stat -c %u " + sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("on host2, %s belongs to uid %d", sock, qemuUID)

	// The right uid: the relay's RFB is QEMU's, whole.
	var conn net.Conn
	setup := timed(5, func() {
		if conn != nil {
			conn.Close()
		}
		if conn, err = vncrelay.Dial(ctx, link, sock, qemuUID); err != nil {
			t.Fatalf("relay with the right uid: %v", err)
		}
	})
	t.Logf("relay set up (ssh session, login shell, python3 start-up, connect, peer check) in %s (median of 5)", setup)
	begun = time.Now()
	w, h, desktopName, err := rfbHandshake(conn)
	if err != nil {
		conn.Close()
		t.Fatalf("RFB through the relay: %v", err)
	}
	t.Logf("RFB through the relay: greeting, no-auth, ServerInit %dx%d %q in %s", w, h, desktopName, time.Since(begun).Round(10*time.Microsecond))
	if desktopName != "QEMU ("+name+")" || w == 0 || h == 0 {
		t.Errorf("ServerInit %dx%d %q, want the domain %s", w, h, desktopName, name)
	}
	// The relay runs on host2 until bureau closes its conn, then ends
	// (and so did the four closed while timing).
	if relays, took := waitRelays(sock, 1); len(relays) != 1 {
		t.Errorf("relays of %s running on host2 after %s: %v, want the one open", sock, took, relays)
	}
	conn.Close()
	if relays, took := waitRelays(sock, 0); len(relays) != 0 {
		t.Errorf("relays still running on host2 %s after Close: %v", took, relays)
	} else {
		t.Logf("the relay on host2 ended within %s of Close", took)
	}

	// For comparison: streamlocal forwarding, without the check.
	begun = time.Now()
	direct, err := link.DialUnix(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	dialed := time.Since(begun)
	_, _, _, err = rfbHandshake(direct)
	direct.Close()
	if err != nil {
		t.Fatalf("RFB through streamlocal: %v", err)
	}
	t.Logf("for comparison, streamlocal (no peer check): dial %s, dial and RFB handshake %s",
		dialed.Round(10*time.Microsecond), time.Since(begun).Round(10*time.Microsecond))

	// Another uid: refused by Dial itself, with the script's message.
	var refusal error
	refused := timed(5, func() {
		c, err := vncrelay.Dial(ctx, link, sock, qemuUID+1)
		if err == nil {
			c.Close()
			t.Fatal("relay with another uid: no error")
		}
		if !strings.Contains(err.Error(), "not the desktop's QEMU user") ||
			!strings.Contains(err.Error(), fmt.Sprintf("served by uid %d, not the desktop's QEMU user %d", qemuUID, qemuUID+1)) {
			t.Fatalf("relay with another uid: %v", err)
		}
		refusal = err
	})
	t.Logf("another uid refused in %s (median of 5): %v", refused, refusal)
	if _, err := vncrelay.Dial(ctx, link, "/var/lib/bureau/desktops/"+name+"/missing.sock", qemuUID); err == nil || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("relay to a socket that is not there: %v", err)
	} else {
		t.Logf("relay to a socket that is not there: %v", err)
	}
	if relays, _ := waitRelays(sock, 0); len(relays) != 0 {
		t.Errorf("relays left on host2: %v", relays)
	}
}

// timed runs f n times and returns the median of its durations.
func timed(n int, f func()) time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		begun := time.Now()
		f()
		d[i] = time.Since(begun)
	}
	slices.Sort(d)
	return d[n/2].Round(100 * time.Microsecond)
}

// waitRelays waits up to 5 s for want relays of sock on host2 and
// returns those it saw last and how long it waited.
func waitRelays(sock string, want int) ([]string, time.Duration) {
	begun := time.Now()
	for {
		relays := relaysOf(sock)
		if len(relays) == want || time.Since(begun) > 5*time.Second {
			return relays, time.Since(begun).Round(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// relaysOf lists the processes relaying sock: python3 processes with
// sock among their arguments (host2 shares this machine's PID namespace).
func relaysOf(sock string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		b, err := os.ReadFile(p + "/cmdline")
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		if len(args) < 2 || !strings.HasPrefix(filepath.Base(string(args[0])), "python3") {
			continue
		}
		for _, a := range args[1:] {
			if string(a) == sock {
				found = append(found, filepath.Base(p))
				break
			}
		}
	}
	return found
}
