package pebbletest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/acme"
)

// TestStart starts Pebble, checks what it reports, and that stop takes it
// down.
func TestStart(t *testing.T) {
	ctx := context.Background()
	begun := time.Now()
	p, stop, err := Start(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up in %s at %s", time.Since(begun).Round(time.Millisecond), p.DirectoryURL)
	if !strings.HasPrefix(p.DirectoryURL, "https://127.0.0.1:") || !strings.HasSuffix(p.DirectoryURL, "/dir") {
		t.Errorf("DirectoryURL %s", p.DirectoryURL)
	}
	if p.HTTPPort == 0 || p.TLSPort == 0 || p.HTTPPort == p.TLSPort {
		t.Errorf("ports: http-01 %d, tls-alpn-01 %d", p.HTTPPort, p.TLSPort)
	}
	if len(p.ClientRootsPEM()) == 0 {
		t.Error("no ClientRootsPEM")
	}
	_, rootsPEM, err := p.IssuerRoots(ctx)
	if err != nil || strings.Count(string(rootsPEM), "BEGIN CERTIFICATE") != 1 {
		t.Errorf("IssuerRoots: %v\n%s", err, rootsPEM)
	}
	begun = time.Now()
	stop()
	stop() // twice is fine
	t.Logf("stopped in %s", time.Since(begun).Round(time.Millisecond))
	for _, addr := range []string{strings.TrimSuffix(strings.TrimPrefix(p.DirectoryURL, "https://"), "/dir"), p.DNSServer} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still answers after stop", addr)
		}
	}
}

// TestIssue obtains a certificate for a name over http-01 from a server
// on the loopback address AddA gave the name (not the default 127.0.0.1),
// and checks its chain against IssuerRoots and its lifetime against
// ValidityPeriod.
func TestIssue(t *testing.T) {
	for _, validity := range []time.Duration{time.Hour, 0} {
		t.Run(strconv.Itoa(int(validity.Seconds()))+"s", func(t *testing.T) {
			t.Parallel()
			const host, addr = "bureau.test", "127.0.0.2"
			// The server under test listens first, on a port of its own.
			l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			tokens := map[string]string{} // path: key authorization
			served := 0
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				body, ok := tokens[r.URL.Path]
				served++
				mu.Unlock()
				if !ok || r.Host != host+":"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port) {
					t.Errorf("unexpected request for %s %s", r.Host, r.URL.Path)
					http.NotFound(w, r)
					return
				}
				w.Write([]byte(body))
			})}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })

			p := StartT(t, Options{HTTPPort: l.Addr().(*net.TCPAddr).Port, ValidityPeriod: validity})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := p.AddA(ctx, host, addr); err != nil {
				t.Fatal(err)
			}

			begun := time.Now()
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			c := &acme.Client{Key: key, DirectoryURL: p.DirectoryURL, HTTPClient: p.HTTPClient()}
			if _, err := c.Register(ctx, &acme.Account{}, acme.AcceptTOS); err != nil {
				t.Fatalf("register: %v", err)
			}
			order, err := c.AuthorizeOrder(ctx, acme.DomainIDs(host))
			if err != nil {
				t.Fatalf("order: %v", err)
			}
			for _, u := range order.AuthzURLs {
				z, err := c.GetAuthorization(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				var chal *acme.Challenge
				for _, ch := range z.Challenges {
					if ch.Type == "http-01" {
						chal = ch
					}
				}
				if chal == nil {
					t.Fatalf("no http-01 challenge for %s", z.Identifier.Value)
				}
				resp, err := c.HTTP01ChallengeResponse(chal.Token)
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				tokens[c.HTTP01ChallengePath(chal.Token)] = resp
				mu.Unlock()
				if _, err := c.Accept(ctx, chal); err != nil {
					t.Fatalf("accept: %v", err)
				}
				if _, err := c.WaitAuthorization(ctx, u); err != nil {
					t.Fatalf("authorization: %v", err)
				}
			}
			if order, err = c.WaitOrder(ctx, order.URI); err != nil {
				var oe *acme.OrderError
				if errors.As(err, &oe) {
					t.Fatalf("order: %v: %v", err, oe.Problem)
				}
				t.Fatalf("order: %v", err)
			}
			certKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{host}}, certKey)
			if err != nil {
				t.Fatal(err)
			}
			// Not CreateOrderCert: Pebble's finalize response has no
			// Location for it to wait on.
			der, _, err := c.CreateCertFromOrder(ctx, order, csr, true)
			if err != nil {
				t.Fatalf("finalize: %v", err)
			}
			mu.Lock()
			if served == 0 {
				t.Error("Pebble never asked the server for its http-01 response")
			}
			mu.Unlock()
			t.Logf("issued in %s (%d certificates in the chain)", time.Since(begun).Round(time.Millisecond), len(der))

			var chain []*x509.Certificate
			for _, b := range der {
				cert, err := x509.ParseCertificate(b)
				if err != nil {
					t.Fatal(err)
				}
				chain = append(chain, cert)
			}
			inter := x509.NewCertPool()
			for _, cert := range chain[1:] {
				inter.AddCert(cert)
			}
			roots, _, err := p.IssuerRoots(ctx)
			if err != nil {
				t.Fatal(err)
			}
			leaf := chain[0]
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter}); err != nil {
				t.Errorf("verify against IssuerRoots: %v", err)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: p.ClientRoots(), Intermediates: inter}); err == nil {
				t.Error("the issued certificate verifies against ClientRoots too")
			}
			life := leaf.NotAfter.Sub(leaf.NotBefore)
			want := validity
			if want == 0 {
				want = 90 * 24 * time.Hour
			}
			if life > want || life < want-time.Minute {
				t.Errorf("lifetime %s (%s to %s), want %s", life, leaf.NotBefore, leaf.NotAfter, want)
			}
		})
	}
}
