package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/webtls"
)

// lockedBuffer is a log sink for a server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lastClient is the client address of the last request logged for path.
func lastClient(t *testing.T, log *lockedBuffer, path string) string {
	t.Helper()
	client := ""
	for _, line := range strings.Split(log.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["path"] == path {
			client, _ = rec["client"].(string)
		}
	}
	return client
}

// A proxy's X-Forwarded-* headers count only from a trusted proxy: from
// anyone else, a client could make bureau believe it came over HTTPS or
// from another address.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	forwarded := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
	for _, c := range []struct {
		name    string
		trusted []netip.Prefix
		scheme  string
		client  string
	}{
		{"no proxy trusted", nil, "http", "127.0.0.1"},
		{"another proxy trusted", []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}, "http", "127.0.0.1"},
		{"this proxy trusted", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "https", "203.0.113.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := &lockedBuffer{}
			e := newEnvDeps(t, nil, func(d *Deps) {
				d.TrustedProxies = c.trusted
				d.Log = slog.New(slog.NewJSONHandler(log, nil))
			})
			id := runningDesktop(t, e, e.alice)
			hdr := map[string]string{"Authorization": "Bearer " + e.alice, "Content-Type": "application/json"}
			for k, v := range forwarded {
				hdr[k] = v
			}
			req, _ := http.NewRequest("PUT", e.srv.URL+"/api/v1/desktops/"+id+"/urls/8080", strings.NewReader(`{"public":true}`))
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var u struct {
				PathURL string `json:"path_url"`
			}
			json.NewDecoder(resp.Body).Decode(&u)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(u.PathURL, c.scheme+"://") {
				t.Fatalf("live URL: %d %q, want it on %s", resp.StatusCode, u.PathURL, c.scheme)
			}
			if got := resp.Header.Get("Strict-Transport-Security"); (c.scheme == "https") != (got != "") {
				t.Errorf("HSTS %q over %s", got, c.scheme)
			}
			if got := lastClient(t, log, "/api/v1/desktops/:id/urls/:port"); got != c.client {
				t.Errorf("logged client %q, want %q", got, c.client)
			}
		})
	}
}

// With a public URL, the links bureau hands out use it, whatever name the
// request came by (a proxy's upstream address, the loopback).
func TestLinksUsePublicURL(t *testing.T) {
	pub, _ := url.Parse("https://bureau.example.com")
	e := newEnvDeps(t, nil, func(d *Deps) { d.PublicURL = pub; d.PreviewDomain = "bureau.example.com" })
	id := runningDesktop(t, e, e.alice)

	code, con := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/console", `{}`)
	if code != 201 || !strings.HasPrefix(con["url"].(string), "https://bureau.example.com/console/"+id+"?token=") {
		t.Fatalf("console link: %d %v", code, con)
	}
	code, u := e.do(t, e.alice, "PUT", "/api/v1/desktops/"+id+"/urls/3000", `{"public":true}`)
	if code != 200 || u["url"] != "https://3000-"+id+".bureau.example.com/" || u["path_url"] != "https://bureau.example.com/preview/"+id+"/3000/" {
		t.Fatalf("live URL: %d %v", code, u)
	}
	code, sh := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/shares", `{"port":3000}`)
	if code != 201 || !strings.HasPrefix(sh["url"].(string), "https://3000-"+id+".bureau.example.com/?") {
		t.Fatalf("share link: %d %v", code, sh)
	}
	code, info := e.do(t, e.alice, "GET", "/api/v1/info", "")
	if code != 200 || info["public_url"] != "https://bureau.example.com" || info["tls"] != "off" {
		t.Fatalf("info: %d %v", code, info)
	}
	resp, err := http.Get(e.srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct{ URL string } `json:"servers"`
	}
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "https://bureau.example.com" {
		t.Fatalf("OpenAPI servers: %+v", doc.Servers)
	}
}

// fakeTLS is bureau's certificates as webtls would report them.
type fakeTLS struct {
	name string
	at   time.Time
}

func (f fakeTLS) Status() webtls.Status {
	return webtls.Status{Mode: webtls.ModeAuto, Names: []webtls.NameStatus{{Name: f.name, NotAfter: f.at, Issuer: "Pebble"}}}
}

// Health says when the certificate expires and warns two weeks ahead;
// info says so in strings (its contract), /tls in detail.
func TestHealthWarnsOfExpiry(t *testing.T) {
	for _, c := range []struct {
		left time.Duration
		warn bool
	}{{60 * 24 * time.Hour, false}, {3 * 24 * time.Hour, true}} {
		at := time.Now().Add(c.left).Truncate(time.Second)
		e := newEnvDeps(t, nil, func(d *Deps) { d.TLS = fakeTLS{"bureau.example.com", at} })
		code, h := e.do(t, "", "GET", "/healthz", "")
		if code != 200 || h["status"] != "ok" || h["tls_not_after"] != at.UTC().Format(time.RFC3339) {
			t.Fatalf("health: %d %v", code, h)
		}
		w, _ := h["warnings"].([]any)
		if c.warn != (len(w) == 1 && strings.Contains(w[0].(string), "bureau.example.com expires in")) {
			t.Errorf("%s left: warnings %v", c.left, w)
		}
		code, info := e.do(t, e.bob, "GET", "/api/v1/info", "")
		if code != 200 || info["tls"] != "auto" || info["tls_not_after"] != at.UTC().Format(time.RFC3339) || info["tls_error"] != nil {
			t.Fatalf("info: %d %v", code, info)
		}
		code, st := e.do(t, e.bob, "GET", "/api/v1/tls", "")
		certs, _ := st["certificates"].([]any)
		if code != 200 || st["mode"] != "auto" || len(certs) != 1 || certs[0].(map[string]any)["issuer"] != "Pebble" {
			t.Fatalf("tls: %d %v", code, st)
		}
	}
}

func TestLiveHost(t *testing.T) {
	for _, c := range []struct {
		host, domain, id string
		port             int
	}{
		{"3000-abc123.bureau.example.com", "bureau.example.com", "abc123", 3000},
		{"3000-ABC123.Bureau.Example.com", "bureau.example.com", "abc123", 3000},
		{"3000-abc123.other.example.com", "bureau.example.com", "", 0},
		{"70000-abc123.bureau.example.com", "bureau.example.com", "", 0},
		{"0-abc123.bureau.example.com", "bureau.example.com", "", 0},
		{"3000-abc123.bureau.example.com:8443", "bureau.example.com", "", 0},
		{"bureau.example.com", "bureau.example.com", "", 0},
		{"3000-abc123.evil.bureau.example.com", "bureau.example.com", "", 0},
		{"3000-abc123.bureau.example.com", "", "", 0},
	} {
		id, port, ok := LiveHost(c.host, c.domain)
		if id != c.id || port != c.port || ok != (c.id != "") {
			t.Errorf("LiveHost(%q, %q) = %q %d %v", c.host, c.domain, id, port, ok)
		}
	}
}

// A proxy that gets certificates on demand asks bureau first: yes for the
// public name and live URL names of desktops that exist, no for others;
// and only trusted proxies may ask.
func TestCertificateAsk(t *testing.T) {
	pub, _ := url.Parse("https://bureau.example.com")
	allowed := func(_ context.Context, name string) error {
		if name == "3000-abc.bureau.example.com" {
			return nil
		}
		return desktop.ErrNotFound
	}
	for _, trusted := range []bool{true, false} {
		e := newEnvDeps(t, nil, func(d *Deps) {
			d.PublicURL, d.CertificateNames = pub, allowed
			if trusted {
				d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
		})
		for domain, want := range map[string]int{"bureau.example.com": 200, "3000-ABC.bureau.example.com": 200, "3000-nope.bureau.example.com": 404, "evil.example.org": 404, "": 422} {
			resp, err := http.Get(e.srv.URL + "/tls/allowed?domain=" + url.QueryEscape(domain))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if !trusted {
				want = 403
			}
			if resp.StatusCode != want {
				t.Errorf("trusted %t, %q: %d, want %d", trusted, domain, resp.StatusCode, want)
			}
		}
	}
}

// A certificate that cannot be got shows in info, as a string.
func TestInfoSaysWhyNoCertificate(t *testing.T) {
	next := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)
	e := newEnvDeps(t, nil, func(d *Deps) { d.TLS = failingTLS{next} })
	code, info := e.do(t, e.bob, "GET", "/api/v1/info", "")
	if code != 200 || info["tls"] != "auto" || info["tls_not_after"] != nil ||
		info["tls_error"] != "bureau.example.com: rateLimited (next try 2026-11-27T13:00:00Z)" {
		t.Fatalf("info: %d %v", code, info)
	}
}

type failingTLS struct{ next time.Time }

func (f failingTLS) Status() webtls.Status {
	return webtls.Status{Mode: webtls.ModeAuto, Names: []webtls.NameStatus{{Name: "bureau.example.com", LastError: "rateLimited", NextTry: f.next}}}
}
