package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/api"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/webtls"
)

// webSettings are serve's checked settings for how clients reach it.
type webSettings struct {
	public  *url.URL
	trusted []netip.Prefix
	mode    webtls.Mode
}

// checkWeb checks the public URL, TLS mode and trusted proxies before
// anything starts, so that a typo stops serve with a message.
func checkWeb(cfg *config.Config) (webSettings, error) {
	var w webSettings
	var err error
	if w.mode, err = webtls.ParseMode(cfg.TLS); err != nil {
		return w, err
	}
	if w.public, err = cfg.Public(); err != nil {
		return w, err
	}
	if w.trusted, err = parseProxies(cfg.TrustedProxies); err != nil {
		return w, err
	}
	if w.mode != webtls.ModeOff && cfg.HTTPListen != "off" {
		if _, _, err := net.SplitHostPort(cfg.HTTPListen); err != nil {
			return w, fmt.Errorf("BUREAU_HTTP_LISTEN=%q: want host:port, :port or off (%v)", cfg.HTTPListen, err)
		}
	}
	return w, nil
}

// parseProxies reads BUREAU_TRUSTED_PROXIES: addresses or CIDRs,
// comma-separated.
func parseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("BUREAU_TRUSTED_PROXIES: %q is neither an address nor a CIDR", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// desktopGetter finds a desktop by ID (manager.Manager).
type desktopGetter interface {
	Get(ctx context.Context, id string) (*desktop.Desktop, error)
}

// maxNamesPerDesktop bounds the certificates auto mode asks for per
// desktop: one per port someone opened, each an order at the CA.
const maxNamesPerDesktop = 20

// liveNames decides which live URL names get a certificate in auto mode:
// <port>-<desktop>.<preview domain> of a desktop that exists, at most
// maxNamesPerDesktop per desktop — never a name sent by whoever connects.
type liveNames struct {
	domain   string
	desktops desktopGetter
	mu       sync.Mutex
	seen     map[string]map[int]bool // desktop ID → ports given a name
}

func (l *liveNames) allowed(ctx context.Context, name string) error {
	id, port, ok := api.LiveHost(name, l.domain)
	if !ok {
		return fmt.Errorf("no certificate for %q: not this bureau's name nor a live URL under %q", name, l.domain)
	}
	if _, err := l.desktops.Get(ctx, id); err != nil {
		return fmt.Errorf("no certificate for %q: %w", name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ports := l.seen[id]
	if ports == nil {
		ports = map[int]bool{}
		l.seen[id] = ports
	}
	if !ports[port] && len(ports) >= maxNamesPerDesktop {
		return fmt.Errorf("no certificate for %q: desktop %s has %d live URL names already (use a wildcard certificate: BUREAU_TLS=files)", name, id, maxNamesPerDesktop)
	}
	ports[port] = true
	return nil
}

// newLiveNames is the live URL names' certificate policy (nil without a
// preview domain).
func newLiveNames(domain string, desktops desktopGetter) *liveNames {
	if domain == "" {
		return nil
	}
	return &liveNames{domain: domain, desktops: desktops, seen: map[string]map[int]bool{}}
}

// certificateNames is names' policy for api.Deps (nil without one).
func certificateNames(names *liveNames) func(context.Context, string) error {
	if names == nil {
		return nil
	}
	return names.allowed
}

// newCerts makes the certificates for HTTPS (nil when it is off); names
// (may be nil) decides which live URL names get one in auto mode.
func newCerts(cfg *config.Config, w webSettings, names *liveNames, log *slog.Logger) (*webtls.Certs, error) {
	if w.mode == webtls.ModeOff {
		return nil, nil
	}
	c := webtls.Config{Mode: w.mode, CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey,
		CacheDir: filepath.Join(cfg.DataDir, "acme"), Directory: cfg.ACMEDirectory, Email: cfg.ACMEEmail}
	if w.public != nil {
		c.PublicHost = w.public.Hostname()
	}
	// No CA issues certificates for .localhost names.
	if names != nil && names.domain != "localhost" {
		c.Allowed = names.allowed
	}
	if cfg.ACMERoots != "" {
		pem, err := os.ReadFile(cfg.ACMERoots)
		if err != nil {
			return nil, fmt.Errorf("BUREAU_ACME_ROOTS: %w", err)
		}
		c.Roots = x509.NewCertPool()
		if !c.Roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("BUREAU_ACME_ROOTS=%s holds no PEM certificate", cfg.ACMERoots)
		}
	}
	return webtls.New(c, log)
}

// listen serves handler on cfg.Listen: plain HTTP, or HTTPS with certs
// and, on cfg.HTTPListen, the redirect (and ACME challenges). It returns
// when ctx ends (after a graceful shutdown) or a listener fails.
func listen(ctx context.Context, cfg *config.Config, handler http.Handler, certs *webtls.Certs, log *slog.Logger) error {
	srv := &http.Server{Addr: cfg.Listen, Handler: handler, ReadHeaderTimeout: 10 * time.Second, Protocols: protocols(certs != nil)}
	errc := make(chan error, 2)
	servers := []*http.Server{srv}
	if certs == nil {
		go func() { errc <- srv.ListenAndServe() }()
		log.Info("serving", "listen", cfg.Listen, "tls", "off")
	} else {
		srv.TLSConfig = certs.TLSConfig()
		go func() { errc <- srv.ListenAndServeTLS("", "") }()
		go certs.Run(ctx)
		log.Info("serving", "listen", cfg.Listen, "tls", certs.Status().Mode)
		if cfg.HTTPListen != "off" {
			_, port, _ := net.SplitHostPort(cfg.Listen)
			redirect := &http.Server{Addr: cfg.HTTPListen, Handler: certs.HTTPHandler(port), ReadHeaderTimeout: 10 * time.Second}
			servers = append(servers, redirect)
			go func() { errc <- fmt.Errorf("BUREAU_HTTP_LISTEN %s: %w", cfg.HTTPListen, redirect.ListenAndServe()) }()
			log.Info("redirecting to HTTPS", "listen", cfg.HTTPListen)
		}
	}
	select {
	case err := <-errc:
		for _, s := range servers {
			s.Close()
		}
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down; desktops keep running")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, s := range servers {
		if err := s.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// protocols: HTTP/1.1, and HTTP/2 — over TLS, or without TLS for clients
// that speak it from the start (h2c with prior knowledge, as a TLS proxy
// in front of bureau does); WebSockets stay on HTTP/1.1.
func protocols(tls bool) *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	if tls {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	return &p
}
