//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/webtls/pebbletest"
)

// TestTLSBench prints what HTTPS costs through bureau (make bench-tls):
// a new connection's handshake and first request, a request on a kept
// connection, and a live URL's download — first over plain HTTP, then
// with the same server restarted with BUREAU_TLS=auto (a certificate from
// Pebble on loopback) while its desktop keeps running.
func TestTLSBench(t *testing.T) {
	if os.Getenv("BUREAU_BENCH_TLS") != "1" {
		t.Skip("set BUREAU_BENCH_TLS=1 (make bench-tls)")
	}
	const size = 128 << 20
	s := newServerWith(t, func(s *server) { s.env = append(s.env, "BUREAU_WARM_SPARES=0") })
	var d apiv1.Desktop
	if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "tls-bench"}, &d); code != http.StatusAccepted {
		t.Fatalf("create: %d", code)
	}
	s.waitState(adminToken, d.ID, desktop.StateRunning, 5*time.Minute)
	s.waitAgent(&d, 5*time.Minute)
	s.agentUp(adminToken, &d, 5*time.Minute)
	base := "/api/v1/desktops/" + d.ID
	s.guest(&d, fmt.Sprintf("mkdir -p /tmp/tlsweb && head -c %d /dev/urandom > /tmp/tlsweb/blob && chmod -R a+rX /tmp/tlsweb", size))
	var p struct{ ID string }
	if code := s.call(adminToken, "POST", base+"/exec", map[string]any{"cmd": "exec python3 -m http.server 8132 --bind 127.0.0.1 --directory /tmp/tlsweb", "background": true}, &p); code != 202 {
		t.Fatalf("web server: %d", code)
	}
	deadline := time.Now().Add(time.Minute)
	for code, _ := s.getPort(adminToken, &d, "8132", "/"); code != 200; code, _ = s.getPort(adminToken, &d, "8132", "/") {
		if time.Now().After(deadline) {
			t.Fatal("web server not reachable")
		}
		time.Sleep(500 * time.Millisecond)
	}

	type figures struct {
		fresh, kept []time.Duration
		mbps        float64
	}
	measure := func(s *server, dial func(context.Context, string, string) (net.Conn, error), tlsConf *tls.Config) figures {
		var f figures
		for range 200 {
			// A new connection each time: the handshake and the request.
			c := &http.Client{Transport: &http.Transport{DialContext: dial, TLSClientConfig: tlsConf, DisableKeepAlives: true}}
			begun := time.Now()
			resp, err := c.Get(s.url + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			f.fresh = append(f.fresh, time.Since(begun))
		}
		kept := &http.Client{Transport: &http.Transport{DialContext: dial, TLSClientConfig: tlsConf}}
		for range 500 {
			req, _ := http.NewRequest("GET", s.url+"/api/v1/info", nil)
			req.Header.Set("Authorization", "Bearer "+adminToken)
			begun := time.Now()
			resp, err := kept.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			f.kept = append(f.kept, time.Since(begun))
		}
		best := 0.0
		for range 3 {
			req, _ := http.NewRequest("GET", s.url+"/preview/"+d.ID+"/8132/blob", nil)
			req.Header.Set("Authorization", "Bearer "+adminToken)
			begun := time.Now()
			resp, err := kept.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || n != size {
				t.Fatalf("live URL download: %d, %d bytes", resp.StatusCode, n)
			}
			best = max(best, float64(n)/(1<<20)/time.Since(begun).Seconds())
		}
		f.mbps = best
		sort.Slice(f.fresh, func(i, j int) bool { return f.fresh[i] < f.fresh[j] })
		sort.Slice(f.kept, func(i, j int) bool { return f.kept[i] < f.kept[j] })
		return f
	}
	plainDial := (&net.Dialer{}).DialContext
	plain := measure(s, plainDial, nil)

	// The same server, restarted with HTTPS from Pebble.
	pb := pebbletest.StartT(t, pebbletest.Options{})
	_, issuerPEM, err := pb.IssuerRoots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	acmeRoots := filepath.Join(t.TempDir(), "pebble.pem")
	os.WriteFile(acmeRoots, pb.ClientRootsPEM(), 0o644)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(issuerPEM)
	tlsPort := strconv.Itoa(pb.TLSPort)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+tlsPort)
	}
	tlsConf := &tls.Config{RootCAs: roots}
	s.stop()
	s.listen, s.base = "127.0.0.1:"+tlsPort, "https://bureau.test:"+tlsPort
	s.client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: dial, TLSClientConfig: tlsConf}}
	s.env = append(s.env, "BUREAU_TLS=auto", "BUREAU_PUBLIC_URL="+s.base, "BUREAU_HTTP_LISTEN=127.0.0.1:"+strconv.Itoa(pb.HTTPPort),
		"BUREAU_ACME_DIRECTORY="+pb.DirectoryURL, "BUREAU_ACME_ROOTS="+acmeRoots, "BUREAU_PREVIEW_DOMAIN=bureau.test")
	s.start()
	secure := measure(s, dial, tlsConf)

	µs := func(sorted []time.Duration, p int) string {
		i := max((len(sorted)*p+99)/100-1, 0)
		return sorted[i].Round(10 * time.Microsecond).String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| through bureau (loopback, TLS 1.3, ECDSA P-256) | HTTP | HTTPS |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| new connection + GET /healthz, p50 / p99 (200) | %s / %s | %s / %s |\n", µs(plain.fresh, 50), µs(plain.fresh, 99), µs(secure.fresh, 50), µs(secure.fresh, 99))
	fmt.Fprintf(&b, "| GET /api/v1/info on a kept connection, p50 / p99 (500) | %s / %s | %s / %s |\n", µs(plain.kept, 50), µs(plain.kept, 99), µs(secure.kept, 50), µs(secure.kept, 99))
	fmt.Fprintf(&b, "| live URL download, %d MiB, best of 3 | %.0f MB/s | %.0f MB/s |\n", size>>20, plain.mbps, secure.mbps)
	t.Log(b.String())
}
