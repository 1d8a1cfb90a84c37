//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/coder/websocket"
)

// agentPort is where testBureauAgent leaves a web server running in the
// background; pause_and_hibernate finds it again after the resume.
const agentPort = "8123"

type agentStatus struct {
	Up      bool   `json:"up"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Current bool   `json:"current"`
	Error   string `json:"error"`
}

// agentUp waits until bureau-agent answers in the desktop, running the
// binary bureau ships.
func (s *server) agentUp(token string, d *apiv1.Desktop, timeout time.Duration) time.Duration {
	s.t.Helper()
	start := time.Now()
	var st agentStatus
	for time.Since(start) < timeout {
		if s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/agent", nil, &st) == 200 && st.Up && st.Current {
			return time.Since(start)
		}
		time.Sleep(time.Second)
	}
	s.t.Logf("the agent channel's sockets (ss -xp):\n%s", channelSockets(d))
	s.t.Fatalf("bureau-agent of %s not up after %s: %+v", d.Name, timeout, st)
	return 0
}

// channelSockets lists the unix sockets of a desktop's agent channel and
// who holds them, for a failure's log.
func channelSockets(d *apiv1.Desktop) string {
	out, err := exec.Command("ss", "-xap").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ss: %v %s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, domainOf(d.ID)) && strings.Contains(l, "org.bureau.agent") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// getPort fetches a path of the desktop's port through bureau.
func (s *server) getPort(token string, d *apiv1.Desktop, port, path string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/v1/desktops/"+d.ID+"/ports/"+port+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.httpClient().Do(req)
	if err != nil {
		s.t.Fatalf("GET port %s: %v", port, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// servedAgain checks the background web server still answers through the
// port proxy (after hibernation or a revert).
func (s *server) servedAgain(token string, d *apiv1.Desktop) {
	s.t.Helper()
	s.agentUp(token, d, 2*time.Minute)
	if code, body := s.getPort(token, d, agentPort, "/"); code != 200 || !strings.Contains(body, "Directory listing") {
		s.t.Errorf("the background web server after the desktop came back: %d %.200s", code, body)
	}
}

// viaStream runs a command through bureau-agent over libvirt's channel
// stream (virDomainOpenChannel), the transport bureau uses for a remote
// libvirt host, from this test process. QEMU serves one client on the
// channel's socket at a time: call it while bureau is stopped.
func viaStream(t *testing.T, s *server, d *apiv1.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.hv.AgentViaStream = true
	defer func() { s.hv.AgentViaStream = false }()
	c, err := client.New(s.hv, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Forget(domainOf(d.ID))
	// The agent in the guest notices that bureau let go of the channel
	// only after a while (bureau's own client redials for as long): the
	// first tries may get no answer.
	var (
		out   bytes.Buffer
		ex    client.Exit
		tries int
	)
	for {
		tries++
		out.Reset()
		ex, err = c.Exec(ctx, domainOf(d.ID), client.Command{Argv: []string{"/bin/sh", "-c", "echo via-stream; hostname"}},
			client.ExecIO{Out: func(stream string, b []byte) error { out.Write(b); return nil }})
		if err == nil || ctx.Err() != nil {
			break
		}
		c.Forget(domainOf(d.ID))
		time.Sleep(2 * time.Second)
	}
	if err != nil || ex.Code != 0 || out.String() != "via-stream\n"+d.Name+"\n" {
		t.Errorf("exec over libvirt's channel stream (%d tries): %v %+v %q", tries, err, ex, out.String())
	} else if tries > 1 {
		t.Logf("exec over libvirt's channel stream answered on try %d", tries)
	}
}

// testBureauAgent: bureau-agent came from the seed and answers; a command
// that leaves a server in the background returns at once; a background
// process serves through the port proxy and its log is readable; a
// terminal runs a command; a 256 MiB file goes both ways intact.
func testBureauAgent(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	t.Logf("bureau-agent up after %s more", s.agentUp(token, d, 3*time.Minute).Round(time.Second))
	if out, code := s.guest(d, "systemctl is-active bureau-agent && systemctl is-enabled bureau-agent && test -x /usr/local/bin/bureau-agent && echo ok"); code != 0 || !strings.HasSuffix(out, "ok") {
		t.Errorf("bureau-agent is not installed and enabled from the seed: %q", out)
	}

	// The case: a server backgrounded inside the command.
	var res struct {
		ExitCode   int    `json:"exit_code"`
		Stdout     string `json:"stdout"`
		TimedOut   bool   `json:"timed_out"`
		DurationMS int64  `json:"duration_ms"`
	}
	begun := time.Now()
	if code := s.call(token, "POST", base+"/exec", map[string]any{"cmd": "python3 -m http.server 3000 & echo started", "timeout_s": 5}, &res); code != 200 || res.Stdout != "started\n" || res.TimedOut || time.Since(begun) > 4*time.Second {
		t.Errorf("exec that leaves a server running: %d %+v after %s", code, res, time.Since(begun))
	}
	// A command's own timeout is its result, not an error.
	if code := s.call(token, "POST", base+"/exec", map[string]any{"cmd": "sleep 10", "timeout_s": 1}, &res); code != 200 || !res.TimedOut {
		t.Errorf("timed-out exec: %d %+v", code, res)
	}

	// A background process, reached through the port proxy.
	var p struct {
		ID      string `json:"id"`
		Running bool   `json:"running"`
	}
	if code := s.call(token, "POST", base+"/exec", map[string]any{"cmd": "python3 -m http.server " + agentPort + " --bind 127.0.0.1", "background": true, "name": "web"}, &p); code != 202 || !p.Running {
		t.Fatalf("background server: %d %+v", code, p)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := s.getPort(token, d, agentPort, "/")
		if code == 200 && strings.Contains(body, "Directory listing") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background server is not reachable through the port proxy: %d %.300s", code, body)
		}
		time.Sleep(time.Second)
	}
	var logText []byte
	s.call(token, "GET", base+"/processes/"+p.ID+"/log?tail=4096", nil, &logText)
	if !strings.Contains(string(logText), `"GET / HTTP/1.1" 200`) {
		t.Errorf("the server's log does not show the request: %q", logText)
	}
	var procs struct {
		Processes []struct {
			ID, Name string
			Running  bool
		}
	}
	if s.call(token, "GET", base+"/processes", nil, &procs); len(procs.Processes) == 0 || procs.Processes[len(procs.Processes)-1].ID != p.ID {
		t.Errorf("processes: %+v", procs)
	}

	// A terminal.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+base+"/pty?rows=30&cols=100",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	ws.Write(ctx, websocket.MessageBinary, []byte("echo \"$(whoami) $((6*7))\"; stty size; exit 7\n"))
	var screen bytes.Buffer
	for {
		kind, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("terminal read: %v; screen %q", err, screen.String())
		}
		if kind == websocket.MessageText {
			var end struct {
				Type string
				Code *int
			}
			if json.Unmarshal(b, &end); end.Type != "exit" || end.Code == nil || *end.Code != 7 {
				t.Errorf("terminal end: %s", b)
			}
			break
		}
		screen.Write(b)
	}
	if !strings.Contains(screen.String(), "agent 42") || !strings.Contains(screen.String(), "30 100") {
		t.Errorf("terminal screen: %q", screen.String())
	}

	// 256 MiB up and down, intact.
	size := 256 << 20
	data := make([]byte, size)
	rand.Read(data)
	sum := sha256.Sum256(data)
	up := time.Now()
	if code := s.putRaw(token, base+"/files?path=big.bin", "application/octet-stream", data); code != 201 {
		t.Fatalf("upload %d MiB: %d", size>>20, code)
	}
	upTook := time.Since(up)
	if out, _ := s.guest(d, "sha256sum /home/agent/big.bin | cut -d' ' -f1"); out != hex.EncodeToString(sum[:]) {
		t.Errorf("the guest's SHA-256 of the upload is %q", out)
	}
	down := time.Now()
	var back []byte
	if code := s.call(token, "GET", base+"/files?path=big.bin", nil, &back); code != 200 || sha256.Sum256(back) != sum {
		t.Errorf("download %d MiB: %d, %d bytes, digest matches: %v", size>>20, code, len(back), sha256.Sum256(back) == sum)
	}
	mb := float64(size) / 1e6
	t.Logf("%d MiB through bureau-agent: upload %s (%.1f MB/s), download %s (%.1f MB/s)", size>>20,
		upTook.Round(100*time.Millisecond), mb/upTook.Seconds(), time.Since(down).Round(100*time.Millisecond), mb/time.Since(down).Seconds())
	s.call(token, "DELETE", base+"/files?path=big.bin", nil, nil)
}
