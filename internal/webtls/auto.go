package webtls

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// acmeALPN is the TLS-ALPN-01 challenge's protocol (RFC 8737).
const acmeALPN = acme.ALPNProto

// newAuto sets Certs up to get certificates from the ACME CA through
// autocert: for PublicHost, and on demand for names cfg.Allowed accepts.
// A name whose last attempt failed is not tried again before its back-off
// ends (autocert itself would try at every handshake and run into the
// CA's rate limits).
func (c *Certs) newAuto() error {
	if err := os.MkdirAll(c.cfg.CacheDir, 0o700); err != nil {
		return fmt.Errorf("ACME cache %s: %w", c.cfg.CacheDir, err)
	}
	client := &acme.Client{DirectoryURL: c.cfg.Directory, UserAgent: "bureau"}
	if c.cfg.Directory == "" {
		client.DirectoryURL = autocert.DefaultACMEDirectory
	}
	if c.cfg.Roots != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: c.cfg.Roots, MinVersion: tls.VersionTLS12}
		client.HTTPClient = &http.Client{Transport: tr, Timeout: time.Minute}
	}
	m := &autocert.Manager{
		Prompt:      autocert.AcceptTOS,
		Cache:       autocert.DirCache(c.cfg.CacheDir),
		Client:      client,
		Email:       c.cfg.Email,
		RenewBefore: c.cfg.RenewBefore,
		HostPolicy: func(ctx context.Context, name string) error {
			if err := c.policy(ctx, name); err != nil {
				return refusal{err}
			}
			return nil
		},
	}
	c.get = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if isChallenge(hello) {
			return m.GetCertificate(hello)
		}
		name := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
		if wait := c.backingOff(name); wait > 0 {
			return nil, fmt.Errorf("no certificate for %q: the last attempt failed; next in %s", name, wait.Round(time.Second))
		}
		cert, err := m.GetCertificate(hello) // asks HostPolicy first
		if err != nil {
			// Refused names are not remembered: anyone can send any name.
			if !errors.As(err, new(refusal)) {
				c.failed(name, err, 0)
			}
			return nil, err
		}
		c.served(cert, name)
		return cert, nil
	}
	c.http = m.HTTPHandler
	// autocert bounds an attempt by 5 minutes of its own; ctx is not
	// handed to it.
	c.warm = func(context.Context) error {
		cert, err := m.GetCertificate(modernHello(c.cfg.PublicHost))
		if err != nil {
			return err
		}
		c.served(cert, c.cfg.PublicHost)
		return nil
	}
	return nil
}

// policy allows PublicHost and the names cfg.Allowed accepts.
func (c *Certs) policy(ctx context.Context, name string) error {
	if strings.EqualFold(name, c.cfg.PublicHost) {
		return nil
	}
	if c.cfg.Allowed == nil {
		return fmt.Errorf("no certificate for %q: only %s gets one", name, c.cfg.PublicHost)
	}
	return c.cfg.Allowed(ctx, name)
}

// refusal is the policy's no, told apart from a failure to get a
// certificate.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// isChallenge says whether hello is the CA's TLS-ALPN-01 validation.
func isChallenge(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acmeALPN
}

// modernHello is a handshake from a client that takes ECDSA
// certificates, to get PublicHost's certificate before anyone connects
// (autocert picks the key type by what the client offers).
func modernHello(name string) *tls.ClientHelloInfo {
	return &tls.ClientHelloInfo{
		ServerName:        name,
		CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_AES_128_GCM_SHA256},
		SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
		SupportedCurves:   []tls.CurveID{tls.X25519, tls.CurveP256},
		SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
	}
}
