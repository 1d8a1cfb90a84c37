//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/coder/websocket"
)

// benchAgent compares bureau-agent with QEMU's guest agent on the same
// desktop in one run: exec round trip, upload and download, terminal echo
// and the port dialer against a direct connection inside the guest.
func benchAgent(t *testing.T, s *server, d *apiv1.Desktop, addRow func(name, value string)) {
	base := "/api/v1/desktops/" + d.ID
	s.agentUp(adminToken, d, 3*time.Minute)
	for _, via := range []struct{ name, q string }{{"bureau-agent", ""}, {"qemu-ga", "?agent=qemu-ga"}} {
		times := timeN(reps(), func() {
			var res struct {
				ExitCode int `json:"exit_code"`
			}
			benchCall(t, s, adminToken, "POST", base+"/exec"+via.q, map[string]any{"cmd": "true"}, &res)
		})
		addRow(fmt.Sprintf("exec round trip via %s p50 / %s (%d runs)", via.name, tail(reps()), reps()), fmt.Sprintf("%s / %s", pct(times, 50), pct(times, 99)))
	}

	size := 64 << 20
	if benchShort() {
		size = 8 << 20
	}
	data := make([]byte, size)
	rand.Read(data)
	mb := float64(size) / 1e6
	rate := map[string][2]float64{}
	for _, via := range []struct{ name, q string }{{"bureau-agent", ""}, {"qemu-ga", "&agent=qemu-ga"}} {
		up := time.Now()
		benchPut(t, s, adminToken, base+"/files?path=bench.bin"+via.q, "application/octet-stream", data)
		upRate := mb / time.Since(up).Seconds()
		down := time.Now()
		var back []byte
		benchCall(t, s, adminToken, "GET", base+"/files?path=bench.bin"+via.q, nil, &back)
		if !bytes.Equal(back, data) {
			t.Fatalf("download via %s: %d bytes, not the %d uploaded", via.name, len(back), len(data))
		}
		rate[via.name] = [2]float64{upRate, mb / time.Since(down).Seconds()}
		addRow(fmt.Sprintf("%d MiB upload / download via %s", size>>20, via.name), fmt.Sprintf("%.1f / %.1f MB/s", upRate, rate[via.name][1]))
	}
	addRow("bureau-agent / qemu-ga upload, download", fmt.Sprintf("%.1f×, %.1f×", rate["bureau-agent"][0]/rate["qemu-ga"][0], rate["bureau-agent"][1]/rate["qemu-ga"][1]))

	// Terminal echo: one keystroke until it comes back.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+base+"/pty",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + adminToken}}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	defer ws.CloseNow()
	ws.Write(ctx, websocket.MessageBinary, []byte("stty -echoctl; PS1=; echo ready\n"))
	waitFor := func(want string) {
		var seen strings.Builder
		for !strings.Contains(seen.String(), want) {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("terminal read: %v (saw %q)", err, seen.String())
			}
			seen.Write(b)
		}
	}
	waitFor("ready\r\n")
	echo := timeN(reps()*5, func() {
		if err := ws.Write(ctx, websocket.MessageBinary, []byte("x")); err != nil {
			t.Fatalf("terminal write: %v", err)
		}
		waitFor("x")
	})
	addRow(fmt.Sprintf("terminal keystroke echo p50 / %s (%d keys)", tail(reps()*5), reps()*5), fmt.Sprintf("%s / %s", pct(echo, 50), pct(echo, 99)))

	// The port dialer against a direct connection inside the guest.
	s.guest(d, fmt.Sprintf("mkdir -p /tmp/benchweb && head -c %d /dev/urandom > /tmp/benchweb/blob && chmod -R a+rX /tmp/benchweb", size))
	var p struct{ ID string }
	if code := s.call(adminToken, "POST", base+"/exec", map[string]any{"cmd": "exec python3 -m http.server 8131 --bind 127.0.0.1 --directory /tmp/benchweb", "background": true}, &p); code != 202 {
		t.Fatalf("bench web server: %d", code)
	}
	defer s.call(adminToken, "DELETE", base+"/processes/"+p.ID+"?signal=KILL", nil, nil)
	deadline := time.Now().Add(time.Minute)
	for {
		if code, _ := s.getPort(adminToken, d, "8131", "/"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bench web server not reachable")
		}
		time.Sleep(500 * time.Millisecond)
	}
	req, _ := http.NewRequest("GET", s.url+base+"/ports/8131/blob", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	got := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", req.URL.Path, resp.StatusCode, bytes.TrimSpace(b))
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	viaDialer := float64(n) / 1e6 / time.Since(got).Seconds()
	out, _ := s.guest(d, `python3 -c 'import time,urllib.request as u
t=time.time(); n=len(u.urlopen("http://127.0.0.1:8131/blob").read()); print(n/1e6/(time.time()-t))'`)
	direct, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if n != int64(size) || direct == 0 {
		t.Fatalf("port dialer bench: %d bytes, direct %q", n, out)
	}
	addRow(fmt.Sprintf("%d MiB over HTTP: port dialer / direct inside the guest", size>>20), fmt.Sprintf("%.1f / %.1f MB/s", viaDialer, direct))
	s.guest(d, "rm -rf /tmp/benchweb /home/agent/bench.bin")
}
