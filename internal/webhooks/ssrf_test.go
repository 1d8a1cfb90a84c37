package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestGuardRanges(t *testing.T) {
	g := &Guard{}
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "::1", "::", "fd00::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254"} {
		if err := g.Check(netip.MustParseAddr(a)); err == nil {
			t.Errorf("%s allowed", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "100.128.0.1", "172.32.0.1"} {
		if err := g.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	var re *RefusedError
	if err := g.Check(netip.MustParseAddr("169.254.169.254")); !errors.As(err, &re) || !strings.Contains(err.Error(), AllowPrivateSetting) ||
		!strings.Contains(err.Error(), "169.254.0.0/16") {
		t.Errorf("metadata: %v", err)
	}
	allowed := &Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	for _, a := range []string{"127.0.0.1", "fd00::1", "::ffff:127.0.0.2"} {
		if err := allowed.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s refused though allowed: %v", a, err)
		}
	}
	if err := allowed.Check(netip.MustParseAddr("10.0.0.1")); err == nil {
		t.Error("10.0.0.1 allowed by 127.0.0.0/8")
	}
}

func TestGuardURL(t *testing.T) {
	ctx := context.Background()
	g := &Guard{Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "public.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		case "sneaky.example": // one public, one private address
			return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")}, nil
		}
		return nil, errors.New("no such host")
	}}
	if err := g.CheckURL(ctx, "https://public.example/hook"); err != nil {
		t.Errorf("public: %v", err)
	}
	for _, u := range []string{"ftp://public.example/", "https:///x", "https://sneaky.example/", "http://127.0.0.1:8080/",
		"http://[::1]/", "http://169.254.169.254/latest/meta-data", "https://nowhere.example/", "https://u:p@public.example/", "not a url"} {
		if err := g.CheckURL(ctx, u); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
}

// A name that resolved to a public address when registered and to the
// host itself when dialed (DNS rebinding) is refused at dial time.
func TestGuardDNSRebinding(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var lookups atomic.Int32
	g := &Guard{Lookup: func(context.Context, string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}
	u := "http://rebind.example:" + port + "/"
	if err := g.CheckURL(context.Background(), u); err != nil {
		t.Fatalf("registration: %v", err)
	}
	_, err := newClient(g).Post(u, "application/json", strings.NewReader("{}"))
	var re *RefusedError
	if !errors.As(err, &re) || hits.Load() != 0 {
		t.Fatalf("rebound dial: %v (hits %d)", err, hits.Load())
	}
	// The socket's own check: a literal address refused in Control.
	if err := g.control("tcp4", "169.254.169.254:80", nil); err == nil {
		t.Fatal("control let the metadata address through")
	}
}
