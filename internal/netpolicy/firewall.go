package netpolicy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Resolver looks host names up (net.Resolver fits).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Applier loads an nftables script atomically.
type Applier func(ctx context.Context, script string) error

// Firewall holds every desktop's policy and keeps the host's rules in step
// with them.
type Firewall struct {
	tag      string
	net      Net
	resolver Resolver
	apply    Applier
	log      *slog.Logger

	mu       sync.Mutex
	desktops map[string]entry
	// resolved keeps each host name's last good answer, so a failed
	// lookup does not drop a desktop's rule for it.
	resolved map[string][]netip.Prefix
	last     string
}

// entry is what the rules need of a desktop.
type entry struct {
	policy desktop.NetworkPolicy
	ip     netip.Addr // its only source address; invalid = not bound
	tap    string     // its NIC's device on the host
}

func entryOf(d *desktop.Desktop) entry {
	ip, _ := netip.ParseAddr(d.NetIP)
	return entry{policy: d.Network, ip: ip, tap: desktop.TapNameOn(d.ID, d.Host)}
}

// InstanceTag names a bureau instance's tables after its data directory,
// so two instances on one host do not replace each other's rules.
func InstanceTag(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return hex.EncodeToString(sum[:4])
}

// New makes a firewall for the desktops' network n; apply defaults to nft.
func New(tag string, n Net, r Resolver, apply Applier, log *slog.Logger) *Firewall {
	if apply == nil {
		apply = Nft
	}
	return &Firewall{tag: tag, net: n, resolver: r, apply: apply, log: log,
		desktops: map[string]entry{}, resolved: map[string][]netip.Prefix{}}
}

// Nft loads script with `nft -f -`.
func Nft(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = bytes.NewBufferString(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Load replaces every desktop's rules (at start-up).
func (f *Firewall) Load(ctx context.Context, ds []*desktop.Desktop) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.desktops = map[string]entry{}
	for _, d := range ds {
		f.desktops[d.ID] = entryOf(d)
	}
	return f.sync(ctx, true)
}

// Set applies a desktop's policy and address; its traffic follows them at
// once. When they cannot be applied the rules stay as they were.
func (f *Firewall) Set(ctx context.Context, d *desktop.Desktop) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, had := f.desktops[d.ID]
	f.desktops[d.ID] = entryOf(d)
	if err := f.sync(ctx, true); err != nil {
		if had {
			f.desktops[d.ID] = old
		} else {
			delete(f.desktops, d.ID)
		}
		return err
	}
	return nil
}

// Forget drops a deleted desktop's rules.
func (f *Firewall) Forget(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.desktops, id)
	return f.sync(ctx, true)
}

// Refresh looks host names up again every interval and applies the rules
// when an answer changed, until ctx ends.
func (f *Firewall) Refresh(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.mu.Lock()
			if err := f.sync(ctx, false); err != nil {
				f.log.Error("refreshing desktop network rules", "err", err)
			}
			f.mu.Unlock()
		}
	}
}

// sync renders and, when it changed (or force), applies the rules. f.mu is
// held.
func (f *Firewall) sync(ctx context.Context, force bool) error {
	ids := make([]string, 0, len(f.desktops))
	for id := range f.desktops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	rules := make([]Rules, 0, len(ids))
	for _, id := range ids {
		e := f.desktops[id]
		rules = append(rules, Rules{ID: id, Tap: e.tap, MAC: desktop.MAC(id), IP: e.ip,
			Allow: f.prefixes(ctx, id, e.policy.AllowOut), Deny: f.prefixes(ctx, id, e.policy.DenyOut)})
	}
	script := Render(f.tag, f.net, rules)
	if !force && script == f.last {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := f.apply(actx, script); err != nil {
		return fmt.Errorf("apply desktop network rules: %w", err)
	}
	f.last = script
	return nil
}

// prefixes turns policy entries into prefixes, looking host names up.
func (f *Firewall) prefixes(ctx context.Context, id string, entries []string) []netip.Prefix {
	var out []netip.Prefix
	for _, e := range entries {
		p, host, err := desktop.ParseNetworkEntry(e)
		if err != nil {
			continue // validated on the way in
		}
		if host == "" {
			out = append(out, p)
			continue
		}
		out = append(out, f.lookup(ctx, id, host)...)
	}
	return out
}

func (f *Firewall) lookup(ctx context.Context, id, host string) []netip.Prefix {
	if f.resolver == nil {
		return f.resolved[host]
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := f.resolver.LookupNetIP(lctx, "ip4", host)
	if err != nil || len(addrs) == 0 {
		f.log.Warn("network policy: host name does not resolve; keeping its last answer", "desktop", id, "host", host, "err", err)
		return f.resolved[host]
	}
	ps := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			ps = append(ps, netip.PrefixFrom(a, 32))
		}
	}
	f.resolved[host] = ps
	return ps
}
