package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/webtls"
)

// checkPublicURL checks BUREAU_PUBLIC_URL by serve's own rule
// (config.Public): http(s), a host, and nothing after it; https when
// bureau serves TLS itself.
func checkPublicURL(c config.Config) finding {
	fix := "BUREAU_PUBLIC_URL=https://bureau.example.com (scheme and host, optionally a port; no path)"
	if c.PublicURL == "" {
		return warn("BUREAU_PUBLIC_URL is unset: links bureau makes use the host each request came to", fix)
	}
	u, err := c.Public()
	if err != nil {
		return fail(err.Error(), fix)
	}
	return ok(u.String())
}

// checkTLS checks BUREAU_TLS and, in files mode, its certificate: the
// certificate and key load as a pair, the certificate is valid now and
// for more than webtls.ExpiryWarning, and it names publicHost (wildcards
// count).
func checkTLS(mode, certFile, keyFile, publicHost string) finding {
	m, err := webtls.ParseMode(mode)
	if err != nil {
		return fail(err.Error(), "BUREAU_TLS=off, files or auto")
	}
	switch m {
	case webtls.ModeOff:
		return ok("off: plain HTTP: only behind a TLS proxy or on loopback")
	case webtls.ModeAuto:
		if publicHost == "" {
			return fail("BUREAU_TLS=auto without BUREAU_PUBLIC_URL: no name to get a certificate for", "BUREAU_PUBLIC_URL=https://<this host's DNS name>")
		}
		return ok("auto: certificates from the ACME CA for " + publicHost + " (it must reach this host on :443 or :80)")
	}
	if certFile == "" || keyFile == "" {
		return fail("BUREAU_TLS=files without BUREAU_TLS_CERT and BUREAU_TLS_KEY", "BUREAU_TLS_CERT=<PEM chain> and BUREAU_TLS_KEY=<PEM key>")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fail(fmt.Sprintf("%s and %s: %v", certFile, keyFile, err), "BUREAU_TLS_CERT and BUREAU_TLS_KEY: a certificate and its own private key, PEM")
	}
	leaf := pair.Leaf
	if leaf == nil { // GODEBUG=x509keypairleaf=0
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fail(fmt.Sprintf("%s: %v", certFile, err), "BUREAU_TLS_CERT: a PEM certificate")
		}
	}
	names := strings.Join(leaf.DNSNames, ", ")
	now := time.Now()
	switch left := leaf.NotAfter.Sub(now); {
	case now.Before(leaf.NotBefore):
		return fail(fmt.Sprintf("%s is not valid before %s", certFile, leaf.NotBefore.UTC().Format(time.RFC3339)), "check this host's clock, or use a certificate valid now")
	case left <= 0:
		return fail(fmt.Sprintf("%s expired %s", certFile, leaf.NotAfter.UTC().Format(time.RFC3339)), "renew the certificate (bureau reloads the files when they change), or BUREAU_TLS=auto")
	case publicHost != "" && leaf.VerifyHostname(publicHost) != nil:
		return fail(fmt.Sprintf("%s does not cover %s (it names %s)", certFile, publicHost, names), "a certificate for "+publicHost+" (or a wildcard covering it), or fix BUREAU_PUBLIC_URL")
	case left < webtls.ExpiryWarning:
		return warn(fmt.Sprintf("%s expires in %s (%s)", certFile, left.Round(time.Hour), leaf.NotAfter.UTC().Format(time.RFC3339)), "renew the certificate (bureau reloads the files when they change)")
	}
	detail := fmt.Sprintf("files: %s for %s, until %s", certFile, names, leaf.NotAfter.UTC().Format("2006-01-02"))
	if publicHost == "" {
		detail += " (no BUREAU_PUBLIC_URL to check it against)"
	}
	return ok(detail)
}

// resolver looks names up (net.DefaultResolver; a fake in tests).
type resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

var doctorResolver resolver = net.DefaultResolver

// checkDNS checks that publicHost resolves and, for a real preview
// domain, that a name nobody registered under it does too: live URLs
// (<port>-<desktop>.<domain>) need a wildcard record.
func checkDNS(ctx context.Context, publicHost, previewDomain string) finding {
	var found, problems, fixes []string
	switch {
	case publicHost == "":
		found = append(found, "no public URL to resolve")
	case publicHost == "localhost" || net.ParseIP(publicHost) != nil:
		found = append(found, publicHost+" needs no DNS")
	default:
		if addrs, err := doctorResolver.LookupHost(ctx, publicHost); err != nil {
			problems = append(problems, fmt.Sprintf("%s does not resolve (%v)", publicHost, lookupError(err)))
			fixes = append(fixes, "add a DNS record "+publicHost+" → this host")
		} else {
			found = append(found, publicHost+" → "+strings.Join(addrs, ", "))
		}
	}
	domain := strings.TrimPrefix(strings.ToLower(previewDomain), "*.")
	switch domain {
	case "":
		found = append(found, "no preview domain: live URLs are /preview/ paths")
	case "localhost":
		found = append(found, "live URLs under *.localhost need no DNS")
	default:
		probe := "doctor-" + randomHex(6) + "." + domain
		if addrs, err := doctorResolver.LookupHost(ctx, probe); err != nil {
			problems = append(problems, fmt.Sprintf("no wildcard record for live URLs: %s does not resolve (%v)", probe, lookupError(err)))
			fixes = append(fixes, "add a wildcard DNS record *."+domain+" → this host")
		} else {
			found = append(found, "*."+domain+" → "+strings.Join(addrs, ", "))
		}
	}
	if len(problems) > 0 {
		return warn(strings.Join(append(problems, found...), "; "), strings.Join(fixes, "; "))
	}
	return ok(strings.Join(found, "; "))
}

// lookupError is a resolver's error without the name it repeats.
func lookupError(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.Err
	}
	return err.Error()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
