package pebbletest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/bureau/bureau/internal/testproc"
)

// startTimeout bounds how long a server may take to answer (Pebble
// starts in well under a second).
const startTimeout = 30 * time.Second

// readyHost is the name dnsReady adds an A record for.
const readyHost = "ready.pebbletest.invalid."

// dnsReady waits until pebble-challtestsrv's management API takes an A
// record and its DNS server (over TCP, as Pebble asks) answers with it:
// both are then the process Start ran, not strangers on its ports.
func dnsReady(ctx context.Context, p *Pebble, exited <-chan struct{}) error {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", p.DNSServer)
	}}
	want := netip.MustParseAddr("127.0.0.2")
	added := false
	step := func(ctx context.Context) error {
		if !added {
			if err := p.AddA(ctx, readyHost, want.String()); err != nil {
				return err
			}
			added = true
		}
		ips, err := r.LookupNetIP(ctx, "ip4", readyHost)
		if err != nil {
			return fmt.Errorf("DNS server %s: %w", p.DNSServer, err)
		}
		for _, ip := range ips {
			if ip == want {
				return nil
			}
		}
		return fmt.Errorf("DNS server %s answers %s with %v, not %s", p.DNSServer, readyHost, ips, want)
	}
	return poll(ctx, "pebble-challtestsrv", p.ChallSrvURL, exited, step)
}

// pebbleReady waits until Pebble serves its ACME directory and its first
// issuing root over HTTPS that ClientRoots trusts.
func pebbleReady(ctx context.Context, p *Pebble, exited <-chan struct{}) error {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig(p.roots), Proxy: nil}}
	defer c.CloseIdleConnections()
	get := func(ctx context.Context, u string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		res, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", u, res.Status)
		}
		return b, err
	}
	step := func(ctx context.Context) error {
		b, err := get(ctx, p.DirectoryURL)
		if err != nil {
			return err
		}
		var dir struct{ NewNonce, NewAccount, NewOrder string }
		if err := json.Unmarshal(b, &dir); err != nil || dir.NewOrder == "" {
			return fmt.Errorf("GET %s: not an ACME directory: %q", p.DirectoryURL, b)
		}
		_, err = get(ctx, p.ManagementURL+"/roots/0")
		return err
	}
	return poll(ctx, "pebble", p.DirectoryURL, exited, step)
}

// poll runs step until it succeeds, the server exits or startTimeout
// passes.
func poll(ctx context.Context, name, at string, exited <-chan struct{}, step func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return testproc.Ready(ctx, name, at, exited, 2*time.Second, 20*time.Millisecond, step)
}

// tlsConfig trusts roots only.
func tlsConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}
