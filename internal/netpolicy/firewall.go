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

	lookups    chan struct{}  // a slot per lookup under way (maxLookups)
	background sync.WaitGroup // lookups started by Set, Load and Forget

	// mu guards what follows and orders applies; no lookup runs under it.
	mu       sync.Mutex
	desktops map[string]entry
	openable []netip.Prefix // reserved ranges host-name allows may open
	// answers caches each host name's last good answer, so rules render
	// without waiting and a failed lookup does not drop a rule.
	answers map[string]*answer
	warned  map[string]bool // warnings plan gave, so each is given once
	last    string
}

// entry is what the rules need of a desktop.
type entry struct {
	policy desktop.NetworkPolicy
	owner  string
	ip     netip.Addr // its only source address; invalid = not known yet
	tap    string     // its NIC's device on the host
}

func entryOf(d *desktop.Desktop) entry {
	ip, _ := netip.ParseAddr(d.NetIP)
	if ip = ip.Unmap(); !ip.Is4() {
		ip = netip.Addr{} // not known: the guard lets it only ask for one
	}
	return entry{policy: d.Network, owner: d.Owner, ip: ip, tap: desktop.TapNameOn(d.ID, d.Host)}
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
	return &Firewall{tag: tag, net: n, resolver: r, apply: apply, log: log, lookups: make(chan struct{}, maxLookups),
		desktops: map[string]entry{}, answers: map[string]*answer{}}
}

// SetOpenable sets the reserved ranges owners may open (the install's
// setting): a host name to allow may open its addresses there. It takes
// effect at the next change or refresh.
func (f *Firewall) SetOpenable(ps []netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.openable = slices.Clone(ps)
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

// Load replaces every desktop's rules (at start-up). Host names are looked
// up in the background; their rules follow as answers arrive.
func (f *Firewall) Load(ctx context.Context, ds []*desktop.Desktop) error {
	f.mu.Lock()
	f.desktops = map[string]entry{}
	for _, d := range ds {
		f.desktops[d.ID] = entryOf(d)
	}
	err := f.sync(ctx, true)
	due := f.due()
	f.mu.Unlock()
	f.resolveLater(ctx, due)
	return err
}

// Set applies a desktop's policy and address; its traffic follows them at
// once, but for host names not looked up yet, which follow as their
// answers arrive. When they cannot be applied the rules stay as they were.
func (f *Firewall) Set(ctx context.Context, d *desktop.Desktop) error {
	f.mu.Lock()
	old, had := f.desktops[d.ID]
	f.desktops[d.ID] = entryOf(d)
	err := f.sync(ctx, true)
	if err != nil {
		if had {
			f.desktops[d.ID] = old
		} else {
			delete(f.desktops, d.ID)
		}
	}
	due := f.due()
	f.mu.Unlock()
	f.resolveLater(ctx, due)
	return err
}

// Forget drops a deleted desktop's rules.
func (f *Firewall) Forget(ctx context.Context, id string) error {
	f.mu.Lock()
	delete(f.desktops, id)
	err := f.sync(ctx, true)
	due := f.due() // names the owner's cap left out may fit now
	f.mu.Unlock()
	f.resolveLater(ctx, due)
	return err
}

// Refresh looks host names up again every interval once their answers
// expire, applying the rules when one changed, until ctx ends.
func (f *Firewall) Refresh(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.refresh(ctx)
		}
	}
}

// refresh is one round of Refresh: it applies rules a failed apply left
// behind and looks expired names up, returning when they are done.
func (f *Firewall) refresh(ctx context.Context) {
	f.mu.Lock()
	if err := f.sync(ctx, false); err != nil {
		f.log.Error("refreshing desktop network rules", "err", err)
	}
	due := f.due()
	f.mu.Unlock()
	f.resolve(ctx, due)
}

// sync renders the rules from the cached answers and, when they changed
// (or force), applies them. f.mu is held.
func (f *Firewall) sync(ctx context.Context, force bool) error {
	rules, _ := f.plan()
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
