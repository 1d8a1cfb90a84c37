package webtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate for names, valid for ttl, to
// dir's cert.pem and key.pem, and returns it.
func writePair(t *testing.T, dir string, ttl time.Duration, names ...string) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(ttl),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// serveTLS serves "hello" over HTTPS with c's configuration.
func serveTLS(t *testing.T, c *Certs) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	srv.TLS = c.TLSConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// handshake connects to addr as name and returns the certificate served.
func handshake(t *testing.T, addr, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func TestFilesServedAndReloaded(t *testing.T) {
	dir := t.TempDir()
	first := writePair(t, dir, 24*time.Hour, "bureau.test", "*.bureau.test")
	c, err := New(Config{Mode: ModeFiles, CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, c)
	roots := x509.NewCertPool()
	roots.AddCert(first)
	for _, name := range []string{"bureau.test", "8080-abc.bureau.test"} {
		got, err := handshake(t, addr, name, roots)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Fatalf("%s: served serial %s, want %s", name, got.SerialNumber, first.SerialNumber)
		}
	}
	st := c.Status()
	if st.Mode != ModeFiles || len(st.Names) != 1 || st.Names[0].Name != "bureau.test" || !st.Names[0].NotAfter.Equal(first.NotAfter.UTC()) && !st.Names[0].NotAfter.Equal(first.NotAfter) {
		t.Fatalf("status: %+v", st)
	}

	// A half-written change (a key that does not match) keeps the old
	// pair in service.
	os.WriteFile(filepath.Join(dir, "key.pem"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	time.Sleep(recheckEvery + 100*time.Millisecond)
	if got, err := handshake(t, addr, "bureau.test", roots); err != nil || got.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatalf("after a broken change: %v, %v", got, err)
	}

	// A renewal is served without a restart.
	second := writePair(t, dir, 48*time.Hour, "bureau.test")
	roots.AddCert(second)
	time.Sleep(recheckEvery + 100*time.Millisecond)
	got, err := handshake(t, addr, "bureau.test", roots)
	if err != nil {
		t.Fatal(err)
	}
	if got.SerialNumber.Cmp(second.SerialNumber) != 0 {
		t.Fatalf("after renewal: serial %s, want %s", got.SerialNumber, second.SerialNumber)
	}
	if name, at := c.Status().Soonest(); name != "bureau.test" || !at.Equal(second.NotAfter) {
		t.Fatalf("soonest: %s %s, want %s", name, at, second.NotAfter)
	}
}

func TestFilesRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, time.Hour, "bureau.test")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: ModeFiles}, "BUREAU_TLS_CERT"},
		{Config{Mode: ModeFiles, CertFile: filepath.Join(dir, "nope.pem"), KeyFile: filepath.Join(dir, "key.pem")}, "nope.pem"},
		{Config{Mode: ModeFiles, CertFile: filepath.Join(dir, "key.pem"), KeyFile: filepath.Join(dir, "key.pem")}, "key.pem"},
		{Config{Mode: ModeAuto}, "BUREAU_PUBLIC_URL"},
		{Config{Mode: ModeOff}, "serves no certificates"},
	} {
		_, err := New(c.cfg, quiet())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeOff, "off": ModeOff, "FILES": ModeFiles, " auto ": ModeAuto} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("on"); err == nil || !strings.Contains(err.Error(), "off, files or auto") {
		t.Errorf("ParseMode(on): %v", err)
	}
}

func TestRedirect(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, time.Hour, "bureau.test")
	c, err := New(Config{Mode: ModeFiles, CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		port, method, host, uri string
		code                    int
		location                string
	}{
		{"443", "GET", "bureau.test", "/api/v1/info?x=1", 308, "https://bureau.test/api/v1/info?x=1"},
		{"8443", "GET", "bureau.test:8080", "/", 308, "https://bureau.test:8443/"},
		{"", "HEAD", "3000-abc.bureau.test", "/a", 308, "https://3000-abc.bureau.test/a"},
		{"443", "GET", "[::1]:80", "/", 308, "https://[::1]/"},
		{"443", "POST", "bureau.test", "/api/v1/desktops", 400, "https://bureau.test/api/v1/desktops"},
		{"443", "GET", "", "/", 400, ""},
	} {
		r := httptest.NewRequest(tc.method, "http://x"+tc.uri, nil)
		r.Host = tc.host
		w := httptest.NewRecorder()
		c.HTTPHandler(tc.port).ServeHTTP(w, r)
		if w.Code != tc.code || w.Header().Get("Location") != tc.location {
			t.Errorf("%s %s%s (port %s): %d %q, want %d %q", tc.method, tc.host, tc.uri, tc.port, w.Code, w.Header().Get("Location"), tc.code, tc.location)
		}
	}
}

func TestBackOff(t *testing.T) {
	c := &Certs{cfg: Config{Mode: ModeAuto}, log: quiet(), names: map[string]*NameStatus{}}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		c.failed("a.test", io.ErrUnexpectedEOF, 0)
		if got := c.backingOff("a.test"); got != want {
			t.Fatalf("failure %d: back-off %s, want %s", i+1, got, want)
		}
	}
	for range 10 {
		c.failed("a.test", io.ErrUnexpectedEOF, 0)
	}
	if got := c.backingOff("a.test"); got != time.Hour {
		t.Fatalf("back-off after many failures: %s, want 1h", got)
	}
	st := c.Status()
	if len(st.Names) != 1 || st.Names[0].LastError != io.ErrUnexpectedEOF.Error() || !st.Names[0].NextTry.Equal(now.Add(time.Hour)) {
		t.Fatalf("status: %+v", st)
	}
	if c.backingOff("b.test") != 0 {
		t.Fatal("a name never tried waits")
	}
}
