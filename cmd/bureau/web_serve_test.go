package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
)

func TestCheckWeb(t *testing.T) {
	for _, c := range []struct {
		cfg  config.Config
		want string // "" = accepted
	}{
		{config.Config{TLS: "off"}, ""},
		{config.Config{TLS: "auto", PublicURL: "https://b.example.com", HTTPListen: ":80", TrustedProxies: "10.0.0.1, 192.168.0.0/16,::1"}, ""},
		{config.Config{TLS: "auto", PublicURL: "https://b.example.com", HTTPListen: "off"}, ""},
		{config.Config{TLS: "yes"}, "off, files or auto"},
		{config.Config{TLS: "off", PublicURL: "b.example.com"}, "needs a scheme"},
		{config.Config{TLS: "off", PublicURL: "https://b.example.com/bureau"}, "no path"},
		{config.Config{TLS: "off", TrustedProxies: "proxy.example.com"}, "neither an address nor a CIDR"},
		{config.Config{TLS: "files", HTTPListen: "80"}, "BUREAU_HTTP_LISTEN"},
	} {
		w, err := checkWeb(&c.cfg)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.cfg, err)
			}
			if c.cfg.TrustedProxies != "" && fmt.Sprint(w.trusted) != "[10.0.0.1/32 192.168.0.0/16 ::1/128]" {
				t.Errorf("trusted %v", w.trusted)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want it to say %q", c.cfg, err, c.want)
		}
	}
}

type getter map[string]bool

func (g getter) Get(_ context.Context, id string) (*desktop.Desktop, error) {
	if !g[id] {
		return nil, desktop.ErrNotFound
	}
	return &desktop.Desktop{ID: id}, nil
}

// Auto mode asks its CA only for live URL names of desktops that exist,
// and a bounded number per desktop.
func TestLiveNamesAllowed(t *testing.T) {
	l := newLiveNames("b.example.com", getter{"abc": true})
	if newLiveNames("", getter{}) != nil || certificateNames(nil) != nil {
		t.Fatal("a policy without a preview domain")
	}
	ctx := context.Background()
	if err := l.allowed(ctx, "3000-abc.b.example.com"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"3000-zzz.b.example.com", "evil.example.com", "3000-abc.other.example.com", "b.example.com"} {
		if err := l.allowed(ctx, name); err == nil {
			t.Errorf("%s allowed", name)
		}
	}
	for port := 1; port < maxNamesPerDesktop; port++ {
		if err := l.allowed(ctx, fmt.Sprintf("%d-abc.b.example.com", port)); err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
	}
	if err := l.allowed(ctx, "9999-abc.b.example.com"); err == nil || !strings.Contains(err.Error(), "wildcard") {
		t.Fatalf("past the cap: %v", err)
	}
	if err := l.allowed(ctx, "3000-abc.b.example.com"); err != nil {
		t.Fatalf("a name already given, past the cap: %v", err)
	}
}
