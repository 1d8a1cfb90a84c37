// Package webtls serves bureau over HTTPS: certificates from files the
// operator gives (reloaded when they change) or from an ACME CA (Let's
// Encrypt by default) through x/crypto's autocert, the redirect from HTTP,
// and what the certificates' state is for /api/v1/info, health and
// metrics.
package webtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Mode is how bureau gets its certificates.
type Mode string

const (
	// ModeOff serves plain HTTP: on the loopback, or behind a TLS proxy.
	ModeOff Mode = "off"
	// ModeFiles serves the certificate and key the operator gives.
	ModeFiles Mode = "files"
	// ModeAuto gets certificates from an ACME CA.
	ModeAuto Mode = "auto"
)

// ParseMode reads a BUREAU_TLS value ("" is off).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", ModeOff:
		return ModeOff, nil
	case ModeFiles, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("BUREAU_TLS=%q: want off, files or auto", s)
}

// Config is what Certs needs.
type Config struct {
	Mode Mode
	// CertFile and KeyFile (files mode) are PEM files; a wildcard
	// certificate (*.<preview domain>) covers every live URL.
	CertFile, KeyFile string
	// PublicHost is the name people reach bureau's API and console by
	// (BUREAU_PUBLIC_URL's host): auto mode gets its certificate first.
	PublicHost string
	// CacheDir (auto mode) keeps the account key and certificates.
	CacheDir string
	// Directory is the ACME directory URL ("": Let's Encrypt's).
	Directory string
	// Email is the ACME account's contact ("": none).
	Email string
	// Roots, when set, are the only CAs trusted for the ACME directory's
	// HTTPS (a private CA such as Pebble's); nil trusts the system's.
	Roots *x509.CertPool
	// RenewBefore is how long before expiry auto mode renews (0: 30 days).
	RenewBefore time.Duration
	// Allowed says whether a name other than PublicHost (a live URL's
	// <port>-<desktop>.<domain>) may get a certificate in auto mode: nil
	// allows none. It must refuse names that belong to no desktop, or
	// anyone could make bureau ask its CA for any name it is sent.
	Allowed func(ctx context.Context, name string) error
}

// Certs hands certificates to the TLS server and keeps their state.
type Certs struct {
	cfg   Config
	log   *slog.Logger
	get   func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	http  func(fallback http.Handler) http.Handler // ACME http-01 answers, or nil
	warm  func(ctx context.Context) error          // gets PublicHost's certificate
	now   func() time.Time
	mu    sync.Mutex
	names map[string]*NameStatus
}

// New prepares certificates for cfg.Mode (files: the files must load now;
// an error names what is wrong). Run starts the background work.
func New(cfg Config, log *slog.Logger) (*Certs, error) {
	c := &Certs{cfg: cfg, log: log, now: time.Now, names: map[string]*NameStatus{}}
	switch cfg.Mode {
	case ModeFiles:
		if cfg.CertFile == "" || cfg.KeyFile == "" {
			return nil, errors.New("BUREAU_TLS=files needs BUREAU_TLS_CERT and BUREAU_TLS_KEY")
		}
		f, err := newFileCert(cfg.CertFile, cfg.KeyFile, log)
		if err != nil {
			return nil, err
		}
		c.get = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			cert, err := f.get()
			if err == nil {
				c.served(cert, "")
			}
			return cert, err
		}
		if cert, err := f.get(); err == nil {
			c.served(cert, "")
		}
	case ModeAuto:
		if cfg.PublicHost == "" {
			return nil, errors.New("BUREAU_TLS=auto needs BUREAU_PUBLIC_URL: the name to get a certificate for")
		}
		if err := c.newAuto(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("webtls: mode %q serves no certificates", cfg.Mode)
	}
	return c, nil
}

// TLSConfig is the HTTPS server's configuration: TLS 1.2 and up with Go's
// default (forward-secret, AEAD) cipher suites, HTTP/2, and the ACME
// TLS-ALPN-01 protocol in auto mode.
func (c *Certs) TLSConfig() *tls.Config {
	protos := []string{"h2", "http/1.1"}
	if c.cfg.Mode == ModeAuto {
		protos = append(protos, acmeALPN)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get, NextProtos: protos}
}

// Run gets PublicHost's certificate in auto mode (again and again with
// back-off while the CA refuses; the server keeps serving meanwhile) and
// returns when ctx ends.
func (c *Certs) Run(ctx context.Context) {
	if c.warm == nil {
		return
	}
	wait := time.Second
	for {
		err := c.warm(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		c.failed(c.cfg.PublicHost, err, wait)
		c.log.Warn("no certificate yet; trying again", "name", c.cfg.PublicHost, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Minute)
	}
}
