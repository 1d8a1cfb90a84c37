//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// benchURLApp serves /small (100 bytes) and /big (BIG bytes) with
// keep-alive, on port 8132, writing each answer through a buffer.
const benchURLApp = `import http.server, os
BIG = int(os.environ["BIG"])
CHUNK = b"x" * (1 << 20)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and a small body leave in one segment (no Nagle/delayed-ACK stall)
    def log_message(self, *a): pass
    def do_GET(self):
        n = 100 if self.path == "/small" else BIG
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        while n > 0:
            k = min(n, len(CHUNK)); self.wfile.write(CHUNK[:k]); n -= k
http.server.ThreadingHTTPServer(("127.0.0.1", 8132), H).serve_forever()
`

// benchURLInGuest measures the same requests inside the guest: N small
// GETs on one connection (p50, p99 in ms) and one big GET (MB/s).
const benchURLInGuest = `import http.client, sys, time
n = int(sys.argv[1]); c = http.client.HTTPConnection("127.0.0.1", 8132); t = []
for _ in range(n):
    s = time.perf_counter(); c.request("GET", "/small"); c.getresponse().read(); t.append(time.perf_counter() - s)
t.sort(); s = time.perf_counter(); c.request("GET", "/big"); b = len(c.getresponse().read()); d = time.perf_counter() - s
print("%.3f %.3f %.1f" % (t[(n * 50 + 99) // 100 - 1] * 1000, t[(n * 99 + 99) // 100 - 1] * 1000, b / 1e6 / d))
`

// benchURL compares requests to an app through its live URL (path form
// and host form) with the same requests inside the guest.
func benchURL(t *testing.T, s *server, d *apiv1.Desktop, addRow func(name, value string)) {
	base := "/api/v1/desktops/" + d.ID
	big, n := 64<<20, reps()*10
	if benchShort() {
		big = 8 << 20
	}
	s.agentUp(adminToken, d, 3*time.Minute)
	if code := s.putRaw(adminToken, base+"/files?path=benchurl/app.py", "text/x-python", []byte(benchURLApp)); code != 201 {
		t.Fatalf("upload the bench app: %d", code)
	}
	s.putRaw(adminToken, base+"/files?path=benchurl/load.py", "text/x-python", []byte(benchURLInGuest))
	req := map[string]any{"name": "benchurl", "cmd": "exec python3 app.py", "cwd": "benchurl", "port": 8132, "env": map[string]string{"BIG": fmt.Sprint(big)}}
	if code := s.call(adminToken, "POST", base+"/services", req, nil); code != 201 {
		t.Fatalf("bench service: %d", code)
	}
	defer s.call(adminToken, "DELETE", base+"/services/benchurl", nil, nil)

	pathURL := s.url + "/preview/" + d.ID + "/8132"
	u, _ := url.Parse(s.url)
	host := fmt.Sprintf("8132-%s.localhost:%s", d.ID, u.Port())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	get := func(u, host string) int64 {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if host != "" {
			req.Host = host
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		got, _ := io.Copy(io.Discard, resp.Body)
		return got
	}
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", pathURL+"/small", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the bench app does not answer at its live URL")
		}
		time.Sleep(500 * time.Millisecond)
	}

	out, code := s.guest(d, fmt.Sprintf("cd /home/agent/benchurl && python3 load.py %d", n))
	var inP50, inP99, inRate float64
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "%f %f %f", &inP50, &inP99, &inRate); code != 0 || err != nil {
		t.Fatalf("in-guest load: %d %q %v", code, out, err)
	}
	viaPath := timeN(n, func() { get(pathURL+"/small", "") })
	viaHost := timeN(n, func() { get(s.url+"/small", host) })
	begun := time.Now()
	if got := get(pathURL+"/big", ""); got != int64(big) {
		t.Fatalf("big GET through the live URL: %d bytes", got)
	}
	rate := float64(big) / 1e6 / time.Since(begun).Seconds()

	addRow(fmt.Sprintf("live URL: 100-byte GET p50 / %s (%d, one connection): inside the guest", tail(n), n), fmt.Sprintf("%.1fms / %.1fms", inP50, inP99))
	addRow("live URL: … through /preview/<desktop>/<port>/", fmt.Sprintf("%s / %s", pct(viaPath, 50), pct(viaPath, 99)))
	addRow("live URL: … through <port>-<desktop>.localhost", fmt.Sprintf("%s / %s", pct(viaHost, 50), pct(viaHost, 99)))
	addRow(fmt.Sprintf("live URL: %d MiB GET: inside the guest / through the live URL", big>>20), fmt.Sprintf("%.1f / %.1f MB/s", inRate, rate))
}
