package webtls

import (
	"crypto/tls"
	"crypto/x509"
	"sort"
	"strings"
	"time"
)

// ExpiryWarning is how close to its expiry a certificate is warned about
// (health, bureau doctor): time for a renewal that failed to be noticed.
const ExpiryWarning = 14 * 24 * time.Hour

// NameStatus is one certificate's state.
type NameStatus struct {
	// Name is the name the certificate was asked for (files mode: its
	// first name).
	Name string `json:"name"`
	// Names are the names the certificate covers.
	Names    []string  `json:"names,omitempty"`
	Issuer   string    `json:"issuer,omitempty"`
	NotAfter time.Time `json:"not_after,omitzero"`
	// LastError is the last failure to get it (auto mode), NextTry when
	// it is tried again.
	LastError string    `json:"last_error,omitempty"`
	FailedAt  time.Time `json:"failed_at,omitzero"`
	NextTry   time.Time `json:"next_try,omitzero"`
	failures  int
}

// Status is what /api/v1/tls, /api/v1/info, health and metrics say about
// certificates.
type Status struct {
	Mode  Mode         `json:"mode"`
	Names []NameStatus `json:"certificates"`
}

// Status returns the certificates' state, sorted by name.
func (c *Certs) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Mode: c.cfg.Mode, Names: []NameStatus{}}
	for _, n := range c.names {
		s.Names = append(s.Names, *n)
	}
	sort.Slice(s.Names, func(i, j int) bool { return s.Names[i].Name < s.Names[j].Name })
	return s
}

// Soonest is the earliest expiry among the certificates served (zero if
// none yet) and its name: health warns when it is near.
func (s Status) Soonest() (string, time.Time) {
	var name string
	var at time.Time
	for _, n := range s.Names {
		if !n.NotAfter.IsZero() && (at.IsZero() || n.NotAfter.Before(at)) {
			name, at = n.Name, n.NotAfter
		}
	}
	return name, at
}

// served notes a certificate handed out for name ("": its own first name).
func (c *Certs) served(cert *tls.Certificate, name string) {
	leaf := cert.Leaf
	if leaf == nil && len(cert.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	if leaf == nil {
		return
	}
	if name == "" {
		name = leaf.Subject.CommonName
		if len(leaf.DNSNames) > 0 {
			name = leaf.DNSNames[0]
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.entry(name)
	if n.NotAfter.Equal(leaf.NotAfter) && n.LastError == "" {
		return
	}
	if !n.NotAfter.IsZero() && !n.NotAfter.Equal(leaf.NotAfter) {
		c.log.Info("certificate renewed", "name", name, "not_after", leaf.NotAfter)
	}
	n.Names, n.Issuer, n.NotAfter = leaf.DNSNames, issuerName(leaf), leaf.NotAfter
	n.LastError, n.FailedAt, n.NextTry, n.failures = "", time.Time{}, time.Time{}, 0
}

// failed notes a failure to get name's certificate; wait 0 picks the
// back-off (1 minute, doubling up to an hour).
func (c *Certs) failed(name string, err error, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.entry(name)
	n.failures++
	if wait == 0 {
		wait = time.Minute << min(n.failures-1, 6)
		wait = min(wait, time.Hour)
	}
	now := c.now()
	n.LastError, n.FailedAt, n.NextTry = err.Error(), now, now.Add(wait)
	if wait >= time.Minute {
		c.log.Warn("no certificate", "name", name, "err", err, "next_try", n.NextTry)
	}
}

// backingOff is how long name's next attempt must wait (0: try now).
func (c *Certs) backingOff(name string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.names[name]
	if !ok || n.NextTry.IsZero() {
		return 0
	}
	return max(n.NextTry.Sub(c.now()), 0)
}

func (c *Certs) entry(name string) *NameStatus {
	n, ok := c.names[name]
	if !ok {
		n = &NameStatus{Name: name}
		c.names[name] = n
	}
	return n
}

func issuerName(leaf *x509.Certificate) string {
	if leaf.Issuer.CommonName != "" {
		return leaf.Issuer.CommonName
	}
	return strings.Join(leaf.Issuer.Organization, ", ")
}
