// Package pebbletest starts a real ACME server (Let's Encrypt's Pebble,
// with pebble-challtestsrv as the DNS server it resolves names with, on
// loopback) for tests of certificate issuance.
package pebbletest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/testproc"
)

// DefaultDir is where scripts/pebble-setup.sh puts pebble,
// pebble-challtestsrv and the certificates of Pebble's own HTTPS.
const DefaultDir = "/var/cache/bureau/tools/pebble-v2.10.3"

// ErrNoPebble reports that no Pebble was found.
var ErrNoPebble = errors.New("no Pebble ($BUREAU_PEBBLE_DIR or " + DefaultDir + "): run scripts/pebble-setup.sh to build it")

// Binaries returns the pebble and pebble-challtestsrv binaries to run and
// the directory of the certificates for Pebble's own HTTPS
// (localhost/cert.pem, localhost/key.pem and the pebble.minica.pem that
// signed them): from $BUREAU_PEBBLE_DIR, else DefaultDir.
func Binaries() (pebble, challtestsrv, certDir string, err error) {
	dir := DefaultDir
	env := os.Getenv("BUREAU_PEBBLE_DIR")
	if env != "" {
		dir = env
	}
	pebble = filepath.Join(dir, "pebble")
	challtestsrv = filepath.Join(dir, "pebble-challtestsrv")
	certDir = filepath.Join(dir, "certs")
	for _, p := range []string{pebble, challtestsrv, filepath.Join(certDir, "localhost", "cert.pem"), filepath.Join(certDir, "localhost", "key.pem"), filepath.Join(certDir, "pebble.minica.pem")} {
		if _, err := os.Stat(p); err != nil {
			if env != "" {
				return "", "", "", fmt.Errorf("BUREAU_PEBBLE_DIR=%s: %w (unset it, or run scripts/pebble-setup.sh to build Pebble)", env, err)
			}
			return "", "", "", fmt.Errorf("%w (%v)", ErrNoPebble, err)
		}
	}
	return pebble, challtestsrv, certDir, nil
}

// Options configures the ACME server Start runs.
type Options struct {
	// HTTPPort is the port Pebble's validation authority connects to for
	// http-01 challenges (the server under test listens there); 0: a free
	// port Start picks, in Pebble.HTTPPort.
	HTTPPort int
	// TLSPort is the port it connects to for tls-alpn-01 challenges; 0: a
	// free port Start picks, in Pebble.TLSPort.
	TLSPort int
	// ValidityPeriod is the lifetime of the certificates Pebble issues,
	// rounded up to whole seconds (Pebble sets NotAfter one second short
	// of NotBefore plus the period); 0: Pebble's default, 90 days.
	ValidityPeriod time.Duration
}

// Pebble is a running ACME server.
type Pebble struct {
	// DirectoryURL is the ACME directory: https://127.0.0.1:P/dir, served
	// with a certificate ClientRoots trusts.
	DirectoryURL string
	// ManagementURL is Pebble's management API (the roots and
	// intermediates it issues with), over the same HTTPS.
	ManagementURL string
	// ChallSrvURL is pebble-challtestsrv's management API (plain HTTP),
	// which sets the DNS answers Pebble gets.
	ChallSrvURL string
	// DNSServer is the DNS server (host:port, TCP and UDP) Pebble
	// resolves names with. It answers A queries with 127.0.0.1 unless
	// AddA says otherwise, and AAAA queries with nothing.
	DNSServer string
	// HTTPPort and TLSPort are the ports Pebble validates http-01 and
	// tls-alpn-01 challenges on.
	HTTPPort, TLSPort int

	rootsPEM []byte
	roots    *x509.CertPool
}

// ClientRoots returns a pool that trusts Pebble's own HTTPS: what an ACME
// client needs to reach DirectoryURL (not the roots of the certificates
// Pebble issues: see IssuerRoots).
func (p *Pebble) ClientRoots() *x509.CertPool { return p.roots.Clone() }

// ClientRootsPEM returns ClientRoots' certificate in PEM.
func (p *Pebble) ClientRootsPEM() []byte { return bytes.Clone(p.rootsPEM) }

// HTTPClient returns a client that trusts Pebble's own HTTPS and never
// goes through a proxy: an acme.Client's HTTPClient.
func (p *Pebble) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tlsConfig(p.roots),
		Proxy:               nil,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// IssuerRoots fetches the roots Pebble signs issued certificates with
// (chained through intermediates it sends with them) from its management
// API: /roots/0, and /roots/1 and on when it has alternate chains. They
// are made afresh each time Pebble starts. It returns them as a pool and
// in PEM.
func (p *Pebble) IssuerRoots(ctx context.Context) (*x509.CertPool, []byte, error) {
	c := p.HTTPClient()
	defer c.CloseIdleConnections()
	pool := x509.NewCertPool()
	var all []byte
	for i := 0; i < 100; i++ {
		u := p.ManagementURL + "/roots/" + strconv.Itoa(i)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, nil, err
		}
		res, err := c.Do(req)
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", u, err)
		}
		if res.StatusCode == http.StatusNotFound && i > 0 {
			break
		}
		if res.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %s", u, res.Status)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, fmt.Errorf("GET %s: no certificate in %q", u, b)
		}
		all = append(all, b...)
	}
	return pool, all, nil
}

// AddA makes the DNS server answer A queries for host with ip (on top of
// any addresses added before) instead of 127.0.0.1.
func (p *Pebble) AddA(ctx context.Context, host, ip string) error {
	return challSrvPost(ctx, p.ChallSrvURL, "/add-a", map[string]any{"host": host, "addresses": []string{ip}})
}

// challSrvPost posts a JSON request to pebble-challtestsrv's management
// API.
func challSrvPost(ctx context.Context, base, path string, body any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	res, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("pebble-challtestsrv %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 1000))
		return fmt.Errorf("pebble-challtestsrv %s: %s %s", path, res.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// StartT starts Pebble on loopback for the test (files in t.TempDir())
// and stops it at cleanup. Without Pebble the test fails: it never skips.
func StartT(t testing.TB, o Options) *Pebble {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begun := time.Now()
	p, stop, err := Start(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatalf("start Pebble: %v", err)
	}
	t.Cleanup(stop)
	t.Logf("Pebble at %s up in %s", p.DirectoryURL, time.Since(begun).Round(time.Millisecond))
	return p
}

// Start starts pebble-challtestsrv (its DNS server only) and Pebble on
// loopback, their configuration and logs (challtestsrv.log, pebble.log)
// in a subdirectory of dir, and waits until the DNS server answers as
// told and Pebble serves its directory and first root. stop kills both
// process groups and waits for them; it may be called more than once. It
// tries up to three times with fresh ports (another process may take one
// first).
//
// Pebble runs with PEBBLE_VA_NOSLEEP=1 (it validates challenges at once,
// not after up to 5 s), PEBBLE_WFE_NONCEREJECT=0 (no random badNonce
// errors, which clients retry anyway) and PEBBLE_AUTHZREUSE=0 (every
// order is validated afresh), and an ECDSA issuing hierarchy.
func Start(ctx context.Context, dir string, o Options) (p *Pebble, stop func(), err error) {
	pebble, challtestsrv, certDir, err := Binaries()
	if err != nil {
		return nil, nil, err
	}
	if err := checkCert(filepath.Join(certDir, "localhost", "cert.pem")); err != nil {
		return nil, nil, err
	}
	for try := 1; ; try++ {
		p, stop, err = start(ctx, pebble, challtestsrv, certDir, dir, o, try)
		if err == nil || ctx.Err() != nil || try == 3 {
			return p, stop, err
		}
	}
}

// checkCert fails once the certificate of Pebble's own HTTPS, which
// comes with Pebble's source, has expired.
func checkCert(name string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return fmt.Errorf("no certificate in %s", name)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if time.Now().After(c.NotAfter) {
		return fmt.Errorf("%s (Pebble's own HTTPS certificate, from its source) expired on %s: move scripts/pebble-setup.sh to a newer Pebble", name, c.NotAfter.Format(time.DateOnly))
	}
	return nil
}

func start(ctx context.Context, pebble, challtestsrv, certDir, dir string, o Options, try int) (*Pebble, func(), error) {
	rootsPEM, err := os.ReadFile(filepath.Join(certDir, "pebble.minica.pem"))
	if err != nil {
		return nil, nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootsPEM) {
		return nil, nil, fmt.Errorf("no certificate in %s", filepath.Join(certDir, "pebble.minica.pem"))
	}
	run := filepath.Join(dir, fmt.Sprintf("pebble-%d", try))
	if err := os.MkdirAll(run, 0o700); err != nil {
		return nil, nil, err
	}
	ports, err := testproc.FreePorts(6)
	if err != nil {
		return nil, nil, err
	}
	p := &Pebble{
		DirectoryURL:  "https://" + testproc.Loopback(ports[0]) + "/dir",
		ManagementURL: "https://" + testproc.Loopback(ports[1]),
		ChallSrvURL:   "http://" + testproc.Loopback(ports[2]),
		DNSServer:     testproc.Loopback(ports[3]),
		HTTPPort:      o.HTTPPort,
		TLSPort:       o.TLSPort,
		rootsPEM:      rootsPEM,
		roots:         roots,
	}
	if p.HTTPPort == 0 {
		p.HTTPPort = ports[4]
	}
	if p.TLSPort == 0 {
		p.TLSPort = ports[5]
	}
	cfg := map[string]any{
		"listenAddress":           testproc.Loopback(ports[0]),
		"managementListenAddress": testproc.Loopback(ports[1]),
		"certificate":             filepath.Join(certDir, "localhost", "cert.pem"),
		"privateKey":              filepath.Join(certDir, "localhost", "key.pem"),
		"httpPort":                p.HTTPPort,
		"tlsPort":                 p.TLSPort,
		"ocspResponderURL":        "",
		"keyAlgorithm":            "ecdsa",
	}
	if o.ValidityPeriod > 0 {
		// The one profile, so orders that name none (Pebble picks one at
		// random then) get it too.
		secs := (o.ValidityPeriod + time.Second - 1) / time.Second
		cfg["profiles"] = map[string]any{"default": map[string]any{
			"description":    "bureau pebbletest",
			"validityPeriod": int64(secs),
		}}
	}
	b, _ := json.MarshalIndent(map[string]any{"pebble": cfg}, "", "\t")
	config := filepath.Join(run, "pebble.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return nil, nil, err
	}

	dns, err := testproc.Start(filepath.Join(run, "challtestsrv.log"), run, nil, challtestsrv,
		"-management="+testproc.Loopback(ports[2]), "-dnsserver="+p.DNSServer,
		"-defaultIPv4=127.0.0.1", "-defaultIPv6=",
		"-http01=", "-https01=", "-tlsalpn01=", "-doh=")
	if err != nil {
		return nil, nil, err
	}
	if err := dnsReady(ctx, p, dns.Exited); err != nil {
		dns.Stop()
		return nil, nil, fmt.Errorf("pebble-challtestsrv (log %s): %w%s", dns.Log, err, dns.Tail())
	}
	ca, err := testproc.Start(filepath.Join(run, "pebble.log"), run,
		[]string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"},
		pebble, "-config="+config, "-dnsserver="+p.DNSServer)
	if err != nil {
		dns.Stop()
		return nil, nil, err
	}
	stop := func() {
		ca.Stop()
		dns.Stop()
	}
	if err := pebbleReady(ctx, p, ca.Exited); err != nil {
		stop()
		return nil, nil, fmt.Errorf("Pebble (log %s): %w%s", ca.Log, err, ca.Tail())
	}
	return p, stop, nil
}
