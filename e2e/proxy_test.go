//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// proxiedTrust is what TestDesktopLifecycle's server trusts as a reverse
// proxy (BUREAU_TRUSTED_PROXIES): the proxies the behind_proxy check runs
// reach it from 127.0.0.1; its other checks send no X-Forwarded-*.
const proxiedTrust = "127.0.0.1/32"

// testBehindProxy runs the documented proxy configurations
// (packaging/proxy) in front of the running desktop's server, as an
// operator would with BUREAU_TLS=off: Caddy with HTTPS from its own CA,
// certificates on demand for names bureau allows, and nginx with a
// certificate the test makes. Through each: the API, the console in
// Chromium (Caddy) or its WebSocket (nginx), a live URL by its wildcard
// name, and the client address bureau logs is the caller's, not the
// proxy's — while a client that is no proxy cannot forge it.
func testBehindProxy(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	for _, bin := range []string{"caddy", "nginx", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is needed for the proxy checks (make setup-test installs it)", bin)
		}
	}
	upstream := strings.TrimPrefix(s.url, "http://")
	live := agentPort + "-" + d.ID + ".localhost" // testBureauAgent's web server

	t.Run("caddy", func(t *testing.T) {
		port, root := startCaddy(t, upstream)
		base := "https://localhost:" + port
		curl := proxyCurl(root, port, "localhost", live, "8123-nosuchdesktop.localhost")
		checkThroughProxy(t, s, token, d, base, curl, live, "127.0.0.2")
		if out, err := curl("https://8123-nosuchdesktop.localhost:" + port + "/"); err == nil {
			t.Errorf("Caddy got a certificate for a name that is no desktop's: %s", out)
		}
		// The console page in a real browser, through the proxy: its
		// display and terminal WebSockets.
		ps := s.with(t)
		ps.url, ps.client = base, tlsClient(root)
		g := ps.openConsole(token, d, false)
		if !strings.HasPrefix(g.URL, "/console/") {
			t.Fatalf("console link %q", g.URL)
		}
		shot := filepath.Join(os.TempDir(), "bureau-e2e-console", "through-caddy.png")
		if r := ps.browse(g, "", shot); r.State != "connected" || !r.NonBlank || !r.TerminalSeen {
			t.Errorf("console through Caddy: %+v (see %s)", r, shot)
		}
	})
	t.Run("nginx", func(t *testing.T) {
		port, root := startNginx(t, upstream, live)
		base := "https://localhost:" + port
		curl := proxyCurl(root, port, "localhost", live)
		checkThroughProxy(t, s, token, d, base, curl, live, "127.0.0.4")
		g := s.openConsole(token, d, true)
		if w, h, name := rfbServerInitWith(t, tlsClient(root), base, d.ID, g.Token); w < 640 || h < 480 || !strings.Contains(name, d.ID) {
			t.Errorf("console WebSocket through nginx: %dx%d %q", w, h, name)
		}
	})
}

// checkThroughProxy checks the API and a live URL through the proxy at
// base, and that bureau logs the caller's address (from) for them.
func checkThroughProxy(t *testing.T, s *server, token string, d *apiv1.Desktop, base string, curl func(...string) (string, error), live, from string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "https://"))
	id := fmt.Sprintf("proxy-%d", time.Now().UnixNano())
	out, err := curl("--interface", from, "-D", "-", "-H", "Authorization: Bearer "+token, "-H", "X-Request-Id: "+id, base+"/api/v1/desktops/"+d.ID)
	if err != nil || !strings.Contains(out, `"id":"`+d.ID+`"`) {
		t.Fatalf("the API through the proxy: %v\n%s", err, out)
	}
	// bureau believed the proxy: the client came over HTTPS.
	if !strings.Contains(strings.ToLower(out), "strict-transport-security:") {
		t.Errorf("no HSTS through a TLS proxy: %s", out)
	}
	if got := loggedClient(t, s, id); got != from {
		t.Errorf("bureau logged client %q for a request from %s through the proxy", got, from)
	}
	out, err = curl("-H", "Authorization: Bearer "+token, "https://"+live+":"+port+"/")
	if err != nil || !strings.Contains(out, "Directory listing") {
		t.Errorf("live URL %s through the proxy: %v\n%.300s", live, err, out)
	}
	// Straight to bureau, a client's X-Forwarded-* are not believed.
	forged := id + "-forged"
	req, _ := http.NewRequest("GET", s.url+"/api/v1/desktops/"+d.ID, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Request-Id", forged)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	c := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Strict-Transport-Security") != "" {
		t.Error("a client that is no proxy made bureau believe it came over HTTPS")
	}
	if got := loggedClient(t, s, forged); got != "127.0.0.3" {
		t.Errorf("bureau logged client %q for a forged X-Forwarded-For from 127.0.0.3", got)
	}
}

// loggedClient is the client address of the request with request ID id in
// the server's log ("" if none).
func loggedClient(t *testing.T, s *server, id string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(s.logPath)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec struct {
				Msg, Client string
				RequestID   string `json:"request_id"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "request" && rec.RequestID == id {
				return rec.Client
			}
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// proxyCurl runs curl trusting root, with names resolved to the loopback.
func proxyCurl(root, port string, names ...string) func(...string) (string, error) {
	return func(args ...string) (string, error) {
		a := []string{"-sS", "--max-time", "30", "--cacert", root}
		for _, n := range names {
			a = append(a, "--resolve", n+":"+port+":127.0.0.1")
		}
		out, err := exec.Command("curl", append(a, args...)...).CombinedOutput()
		return string(out), err
	}
}

// tlsClient is an HTTP client trusting root (a PEM file).
func tlsClient(root string) *http.Client {
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(root)
	pool.AppendCertsFromPEM(b)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// freePort is a free loopback TCP port.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// runProxy starts a proxy process, stopped at the end of the test.
func runProxy(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = append(os.Environ(), env...), logf, logf, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s's log (end):\n%s", name, tailBytes(b, 2000))
		}
	})
}

// startCaddy runs packaging/proxy/Caddyfile with Caddy's own CA on a free
// port, and returns the port and the CA's root certificate.
func startCaddy(t *testing.T, upstream string) (port, root string) {
	t.Helper()
	dir := t.TempDir()
	port = freePort(t)
	runProxy(t, dir, []string{"XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "HOME=" + dir,
		"CADDY_ADMIN=127.0.0.1:" + freePort(t), "CADDY_HTTP_PORT=" + freePort(t), "CADDY_HTTPS_PORT=" + port,
		"CADDY_ISSUER=internal", "BUREAU_DOMAIN=localhost", "BUREAU_APPS_DOMAIN=localhost", "BUREAU_UPSTREAM=" + upstream},
		"caddy", "run", "--adapter", "caddyfile", "--config", filepath.Join(repoRoot(t), "packaging/proxy/Caddyfile"))
	root = filepath.Join(dir, "data/caddy/pki/authorities/local/root.crt")
	waitProxy(t, root, port)
	return port, root
}

// startNginx runs packaging/proxy/nginx.conf with its names, ports and
// certificate paths swapped for loopback ones, and a certificate for
// localhost and the live URL name; returns the port and the certificate.
func startNginx(t *testing.T, upstream, live string) (port, root string) {
	t.Helper()
	dir := t.TempDir()
	port = freePort(t)
	root = writeCert(t, dir, "localhost", live)
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "packaging/proxy/nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for _, r := range [][2]string{
		{"listen 443 ssl", "listen 127.0.0.1:" + port + " ssl"},
		{"listen 80;", "listen 127.0.0.1:" + freePort(t) + ";"},
		{"/etc/ssl/bureau/", dir + "/"},
		{"http://127.0.0.1:8080", "http://" + upstream},
		{"bureau-apps.example", "localhost"},
		{"bureau.example.com", "localhost"},
	} {
		if !strings.Contains(conf, r[0]) {
			t.Fatalf("packaging/proxy/nginx.conf no longer has %q: update this test with it", r[0])
		}
		conf = strings.ReplaceAll(conf, r[0], r[1])
	}
	os.WriteFile(filepath.Join(dir, "bureau.conf"), []byte(conf), 0o644)
	main := fmt.Sprintf("daemon off;\npid %[1]s/nginx.pid;\nerror_log %[1]s/error.log;\nevents {}\nhttp {\n\taccess_log %[1]s/access.log;\n\tinclude %[1]s/bureau.conf;\n}\n", dir)
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644)
	runProxy(t, dir, nil, "nginx", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	waitProxy(t, root, port)
	return port, root
}

// waitProxy waits until the proxy answers bureau's health over HTTPS.
func waitProxy(t *testing.T, root, port string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// (Caddy writes its CA's root when it first issues.)
		if _, err := os.Stat(root); err == nil {
			if resp, err := tlsClient(root).Get("https://localhost:" + port + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy on port %s did not answer bureau's /healthz in 30 s", port)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeCert writes a self-signed certificate for names and its key to
// dir/fullchain.pem and dir/privkey.pem, and returns the certificate's path.
func writeCert(t *testing.T, dir string, names ...string) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	cert := filepath.Join(dir, "fullchain.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(dir, "privkey.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	return cert
}
