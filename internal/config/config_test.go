package config

import (
	"strings"
	"testing"
)

func TestPublic(t *testing.T) {
	for _, c := range []struct {
		url, tls, want, err string
	}{
		{"", "off", "", ""},
		{"https://Bureau.Example.com", "auto", "https://bureau.example.com", ""},
		{"http://10.0.0.5:8080", "off", "http://10.0.0.5:8080", ""},
		{"bureau.example.com", "off", "", "needs a scheme"},
		{"ftp://bureau.example.com", "off", "", "needs a scheme"},
		{"https://bureau.example.com/bureau", "off", "", "no path"},
		{"https://bureau.example.com?x=1", "off", "", "no path"},
		{"https://user@bureau.example.com", "off", "", "no path"},
		{"https://:443", "off", "", "names no host"},
		{"http://bureau.example.com", "files", "", "https://"},
	} {
		u, err := Config{PublicURL: c.url, TLS: c.tls}.Public()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want it to say %q", c.url, err, c.err)
			}
			continue
		}
		got := ""
		if u != nil {
			got = u.String()
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.url, got, err, c.want)
		}
	}
}

func TestTLSDefaults(t *testing.T) {
	t.Setenv("BUREAU_TLS", "auto")
	t.Setenv("BUREAU_LISTEN", "")
	t.Setenv("BUREAU_HTTP_LISTEN", "")
	t.Setenv("BUREAU_PUBLIC_URL", "https://bureau.example.com/")
	t.Setenv("BUREAU_URL", "")
	c := FromEnv()
	if c.Listen != ":443" || c.HTTPListen != ":80" || c.PublicURL != "https://bureau.example.com" || c.URL != c.PublicURL {
		t.Fatalf("with TLS on: listen %q, http %q, public %q, url %q", c.Listen, c.HTTPListen, c.PublicURL, c.URL)
	}
	t.Setenv("BUREAU_TLS", "off")
	t.Setenv("BUREAU_PUBLIC_URL", "")
	c = FromEnv()
	if c.Listen != "127.0.0.1:8080" || c.HTTPListen != "" || c.URL != "http://127.0.0.1:8080" {
		t.Fatalf("with TLS off: listen %q, http %q, url %q", c.Listen, c.HTTPListen, c.URL)
	}
}
