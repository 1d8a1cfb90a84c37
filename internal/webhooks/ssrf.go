package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// AllowPrivateSetting is the environment setting that lets endpoints
// reach ranges refused by default.
const AllowPrivateSetting = "BUREAU_WEBHOOK_ALLOW_PRIVATE"

// refused are the ranges a webhook may not reach unless allowed: the
// host itself, private networks, link-local (cloud metadata at
// 169.254.169.254), CGNAT, multicast and unspecified addresses.
var refused = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Guard keeps webhooks off addresses they must not reach, when a URL is
// registered and again at each connection (the name may resolve
// elsewhere by then: DNS rebinding).
type Guard struct {
	// Allow are ranges an admin allowed (BUREAU_WEBHOOK_ALLOW_PRIVATE).
	Allow []netip.Prefix
	// Lookup resolves a host name (nil: the system resolver).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// RefusedError says which range an address falls in.
type RefusedError struct {
	Addr  netip.Addr
	Range netip.Prefix
	What  string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is in %s (%s), which webhooks may not reach unless an admin allows the range with %s",
		e.Addr, e.Range, e.What, AllowPrivateSetting)
}

// Check refuses addr if it is in a refused range no allowed one covers.
func (g *Guard) Check(addr netip.Addr) error {
	addr = addr.Unmap()
	for _, p := range g.Allow {
		if p.Contains(addr) {
			return nil
		}
	}
	for _, r := range refused {
		if r.prefix.Contains(addr) {
			return &RefusedError{Addr: addr, Range: r.prefix, What: r.what}
		}
	}
	return nil
}

func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	if g.Lookup != nil {
		return g.Lookup(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// CheckURL checks a target URL: http or https, a host, and every address
// the host resolves to allowed.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http:// or https:// URL", raw)
	case u.Hostname() == "":
		return fmt.Errorf("%q names no host", raw)
	case u.User != nil:
		return fmt.Errorf("%q: no user or password in the URL", raw)
	}
	addrs, err := g.lookup(ctx, u.Hostname())
	if err != nil {
		return fmt.Errorf("%s does not resolve: %w", u.Hostname(), err)
	}
	for _, a := range addrs {
		if err := g.Check(a); err != nil {
			return err
		}
	}
	return nil
}

// DialContext resolves addr's host, refuses it if any address is not
// allowed, and dials an allowed address (checked once more as the socket
// connects).
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s: no address", host)
	}
	for _, a := range addrs {
		if err := g.Check(a); err != nil {
			return nil, err
		}
	}
	d := net.Dialer{Control: g.control}
	var lastErr error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// control checks the address a socket is about to connect to.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook dial %s: %w", address, err)
	}
	return g.Check(ap.Addr())
}
