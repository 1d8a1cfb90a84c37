package webtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/webtls/pebbletest"
)

// TestAutoWithPebble gets certificates from a real ACME CA (Pebble, on the
// loopback): for the public name at start (http-01 through the redirect
// port), for a live URL name on demand at its first handshake
// (tls-alpn-01), none for a name the policy refuses; then watches the
// public name's certificate renewed before it expires.
func TestAutoWithPebble(t *testing.T) {
	const validity = 30 * time.Second
	p := pebbletest.StartT(t, pebbletest.Options{ValidityPeriod: validity})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	roots, _, err := p.IssuerRoots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Mode: ModeAuto, PublicHost: "bureau.test", CacheDir: t.TempDir(), Directory: p.DirectoryURL, Roots: p.ClientRoots(),
		Allowed: func(_ context.Context, name string) error {
			if name == "3000-abc.bureau.test" {
				return nil
			}
			return errors.New("no such desktop")
		}}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := "127.0.0.1:" + strconv.Itoa(p.TLSPort)
	ln, err := tls.Listen("tcp", tlsAddr, c.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "bureau") })}
	go srv.Serve(ln)
	defer srv.Close()
	hln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p.HTTPPort))
	if err != nil {
		t.Fatal(err)
	}
	redirect := &http.Server{Handler: c.HTTPHandler(strconv.Itoa(p.TLSPort))}
	go redirect.Serve(hln)
	defer redirect.Close()

	begun := time.Now()
	go c.Run(ctx)
	var first *x509.Certificate
	for first == nil {
		if time.Since(begun) > 30*time.Second {
			t.Fatalf("no certificate for bureau.test after 30 s: %+v", c.Status())
		}
		if st := c.Status(); len(st.Names) == 1 && !st.Names[0].NotAfter.IsZero() {
			first, err = handshake(t, tlsAddr, "bureau.test", roots)
			if err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("bureau.test: certificate from %s in %s, valid until %s", first.Issuer.CommonName, time.Since(begun).Round(time.Millisecond), first.NotAfter.Format(time.TimeOnly))
	// (handshake verified the chain against Pebble's issuing roots.)

	// A live URL's name gets one at its first handshake.
	begun = time.Now()
	live, err := handshake(t, tlsAddr, "3000-abc.bureau.test", roots)
	if err != nil {
		t.Fatalf("live URL name: %v", err)
	}
	t.Logf("3000-abc.bureau.test: certificate on demand in %s", time.Since(begun).Round(time.Millisecond))
	if live.SerialNumber.Cmp(first.SerialNumber) == 0 || live.VerifyHostname("3000-abc.bureau.test") != nil {
		t.Fatalf("live URL name served %v", live.DNSNames)
	}
	// Any other name gets none, and is not remembered.
	if _, err := handshake(t, tlsAddr, "evil.test", roots); err == nil {
		t.Fatal("a certificate for a name the policy refuses")
	}
	for _, n := range c.Status().Names {
		if n.Name == "evil.test" {
			t.Fatalf("a refused name is kept: %+v", n)
		}
	}

	// Plain HTTP redirects to HTTPS.
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+strconv.Itoa(p.HTTPPort)+"/api/v1/info", nil)
	req.Host = "bureau.test"
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := "https://bureau.test:" + strconv.Itoa(p.TLSPort) + "/api/v1/info"; resp.StatusCode != 308 || resp.Header.Get("Location") != want {
		t.Fatalf("redirect: %d %q, want 308 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}

	// Renewed before it expires (autocert renews with a third of the
	// lifetime left), served without a restart.
	for {
		got, err := handshake(t, tlsAddr, "bureau.test", roots)
		if err != nil {
			t.Fatal(err)
		}
		if got.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Logf("renewed %s before expiry; new one valid until %s", first.NotAfter.Sub(time.Now()).Round(time.Second), got.NotAfter.Format(time.TimeOnly))
			if _, at := c.Status().Soonest(); at.Before(first.NotAfter) {
				t.Errorf("status still shows the old expiry: %s", at)
			}
			break
		}
		if time.Now().After(first.NotAfter) {
			t.Fatalf("not renewed before it expired at %s", first.NotAfter)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if st := c.Status(); len(st.Names) != 2 || !strings.HasPrefix(st.Names[0].Issuer, "Pebble") || st.Names[0].LastError != "" {
		t.Fatalf("status: %+v", st)
	}
}
