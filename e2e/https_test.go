//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/bureau/bureau/internal/webtls/pebbletest"
)

// TestHTTPS runs bureau with BUREAU_TLS=auto against a real ACME CA
// (Pebble, with its DNS test server, on the loopback): bureau gets a
// certificate for its public name and, on demand, for a live URL name of
// a desktop that exists, none for other names; curl with Pebble's root
// verifies them; plain HTTP redirects; the links and the contract use
// the public URL. The desktop it creates is only needed to exist: it is
// deleted without waiting for its boot.
func TestHTTPS(t *testing.T) {
	needE2E(t)
	p := pebbletest.StartT(t, pebbletest.Options{})
	_, issuerPEM, err := p.IssuerRoots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	acmeRoots, issuer := filepath.Join(dir, "pebble-https.pem"), filepath.Join(dir, "issuer.pem")
	os.WriteFile(acmeRoots, p.ClientRootsPEM(), 0o644)
	os.WriteFile(issuer, issuerPEM, 0o644)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(issuerPEM)
	tlsPort, httpPort := strconv.Itoa(p.TLSPort), strconv.Itoa(p.HTTPPort)
	base := "https://bureau.test:" + tlsPort
	// Every name is this machine: bureau.test as Pebble's DNS says.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: roots}}}
	begun := time.Now()
	s := newServerWith(t, func(s *server) {
		s.listen, s.base, s.client = "127.0.0.1:"+tlsPort, base, client
		s.env = append(s.env, "BUREAU_TLS=auto", "BUREAU_PUBLIC_URL="+base, "BUREAU_HTTP_LISTEN=127.0.0.1:"+httpPort,
			"BUREAU_ACME_DIRECTORY="+p.DirectoryURL, "BUREAU_ACME_ROOTS="+acmeRoots, "BUREAU_PREVIEW_DOMAIN=bureau.test", "BUREAU_WARM_SPARES=0")
	})
	t.Logf("bureau up over HTTPS with a certificate from Pebble in %s", time.Since(begun).Round(time.Millisecond))

	curl := func(name string, args ...string) (string, error) {
		a := append([]string{"-sS", "--max-time", "20", "--cacert", issuer, "--resolve", name + ":" + tlsPort + ":127.0.0.1", "--resolve", name + ":" + httpPort + ":127.0.0.1"}, args...)
		out, err := exec.Command("curl", a...).CombinedOutput()
		return string(out), err
	}
	t.Run("certificate_verifies", func(t *testing.T) {
		out, err := curl("bureau.test", "-D", "-", base+"/healthz")
		if err != nil || !strings.Contains(out, `"tls_not_after"`) || !strings.Contains(strings.ToLower(out), "strict-transport-security: max-age=") {
			t.Fatalf("curl %s/healthz: %v\n%s", base, err, out)
		}
		var info map[string]string
		if code := s.call(adminToken, "GET", "/api/v1/info", nil, &info); code != 200 || info["public_url"] != base || info["tls"] != "auto" || info["tls_not_after"] == "" {
			t.Fatalf("info: %d %+v", code, info)
		}
		var st struct {
			Mode         string `json:"mode"`
			Certificates []struct {
				Name, Issuer string
				NotAfter     time.Time `json:"not_after"`
			} `json:"certificates"`
		}
		if code := s.call(adminToken, "GET", "/api/v1/tls", nil, &st); code != 200 || st.Mode != "auto" ||
			len(st.Certificates) != 1 || st.Certificates[0].Name != "bureau.test" || !strings.HasPrefix(st.Certificates[0].Issuer, "Pebble") {
			t.Fatalf("tls: %d %+v", code, st)
		}
		var metrics []byte
		s.call(adminToken, "GET", "/metrics", nil, &metrics)
		if !strings.Contains(string(metrics), `bureau_tls_certificate_expiry_timestamp_seconds{name="bureau.test"}`) {
			t.Errorf("no certificate expiry in /metrics")
		}
	})
	t.Run("http_redirects", func(t *testing.T) {
		out, err := curl("bureau.test", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", "http://bureau.test:"+httpPort+"/api/v1/info?x=1")
		if want := "308 " + base + "/api/v1/info?x=1"; err != nil || out != want {
			t.Fatalf("plain HTTP: %q %v, want %q", out, err, want)
		}
	})
	t.Run("openapi_servers", func(t *testing.T) {
		var doc struct {
			Servers []struct{ URL string } `json:"servers"`
		}
		if code := s.call("", "GET", "/api/v1/openapi.json", nil, &doc); code != 200 || len(doc.Servers) != 1 || doc.Servers[0].URL != base {
			t.Fatalf("servers: %d %+v", code, doc.Servers)
		}
	})
	t.Run("live_url_names", func(t *testing.T) {
		var d apiv1.Desktop
		if code := s.call(adminToken, "POST", "/api/v1/desktops", map[string]any{"name": "tls"}, &d); code != 202 {
			t.Fatalf("create: %d", code)
		}
		defer s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
		var u apiv1.URL
		name := "3000-" + d.ID + ".bureau.test"
		if code := s.call(adminToken, "PUT", "/api/v1/desktops/"+d.ID+"/urls/3000", map[string]any{"public": true}, &u); code != 200 || u.URL != "https://"+name+":"+tlsPort+"/" {
			t.Fatalf("live URL: %d %+v", code, u)
		}
		begun := time.Now()
		// The handshake is what is checked: what the booting desktop's
		// port answers does not matter (curl's exit 28 is a time-out
		// after it).
		out, err := curl(name, "-o", "/dev/null", "--max-time", "5", "-w", "%{ssl_verify_result}", u.URL)
		if out != "0" || (err != nil && !strings.Contains(err.Error(), "exit status 28")) {
			t.Fatalf("curl %s: %q %v", u.URL, out, err)
		}
		t.Logf("%s: a certificate on demand, verified by curl, in %s", name, time.Since(begun).Round(time.Millisecond))
		for _, other := range []string{"3000-nosuchdesktop.bureau.test", "bureau.example.org"} {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 20 * time.Second}, "tcp", "127.0.0.1:"+tlsPort, &tls.Config{ServerName: other, RootCAs: roots})
			if err == nil {
				conn.Close()
				t.Errorf("%s: a certificate for a name that is no desktop's", other)
			}
		}
	})
}
