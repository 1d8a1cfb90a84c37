package netpolicy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Host names in policies are looked up in the background and their
// answers cached: a lookup can take seconds, and one owner's slow DNS must
// not hold up any desktop's rules. Rules are rendered from the cache at
// once (a name not answered yet contributes nothing) and again when an
// answer arrives.
const (
	// answerTTL is how long an answer is used before it is looked up
	// again (when Refresh runs or a desktop's rules change).
	answerTTL = 5 * time.Minute
	// retryAfter is how soon a failed lookup is tried again.
	retryAfter = time.Minute
	// lookupTimeout bounds one lookup.
	lookupTimeout = 5 * time.Second
	// maxLookups is how many lookups run at once, for all desktops.
	maxLookups = 4
	// MaxHostNamesPerOwner bounds the distinct host names one owner's
	// desktops name together; the rest are not looked up.
	MaxHostNamesPerOwner = 64
)

// answer is what is known of one host name.
type answer struct {
	prefixes []netip.Prefix // last good answer; nil: none yet
	expires  time.Time      // looked up again after this
	busy     bool           // a lookup is under way
}

// due marks the names the rules use whose answer is missing or expired as
// being looked up, and returns them; it forgets the answers of names no
// rule uses. f.mu is held.
func (f *Firewall) due() []string {
	_, wanted := f.plan()
	for h, a := range f.answers {
		if !wanted[h] && !a.busy {
			delete(f.answers, h)
		}
	}
	if f.resolver == nil {
		return nil
	}
	now := time.Now()
	var hosts []string
	for h := range wanted {
		a := f.answers[h]
		if a == nil {
			a = &answer{}
			f.answers[h] = a
		}
		if a.busy || now.Before(a.expires) {
			continue
		}
		a.busy = true
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return hosts
}

// resolveLater looks hosts up in the background (see resolve). Its lookups
// outlive ctx's cancellation (the request that changed a policy ends
// before they do) but not its values; each is bounded by lookupTimeout.
func (f *Firewall) resolveLater(ctx context.Context, hosts []string) {
	if len(hosts) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	f.background.Go(func() { f.resolve(ctx, hosts) })
}

// resolve looks hosts up, at most maxLookups at once and never under
// f.mu, and applies the rules again as each answer that changed arrives.
// It returns when all are done.
func (f *Firewall) resolve(ctx context.Context, hosts []string) {
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() {
			select {
			case f.lookups <- struct{}{}:
			case <-ctx.Done():
				f.mu.Lock()
				if a := f.answers[h]; a != nil {
					a.busy = false // looked up next time
				}
				f.mu.Unlock()
				return
			}
			ps, err := f.lookup(ctx, h)
			<-f.lookups
			f.settle(ctx, h, ps, err)
		})
	}
	wg.Wait()
}

// lookup asks the resolver for host's IPv4 addresses.
func (f *Firewall) lookup(ctx context.Context, host string) ([]netip.Prefix, error) {
	if f.resolver == nil {
		return nil, fmt.Errorf("look up %s: no resolver", host)
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := f.resolver.LookupNetIP(lctx, "ip4", host)
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", host, err)
	}
	ps := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			ps = append(ps, netip.PrefixFrom(a, 32))
		}
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("look up %s: no IPv4 address", host)
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return ps, nil
}

// settle records host's answer (err: keep the last good one) and, when it
// changed, applies the rules again.
func (f *Firewall) settle(ctx context.Context, host string, ps []netip.Prefix, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.answers[host] // kept while busy
	a.busy = false
	if err != nil {
		a.expires = time.Now().Add(retryAfter)
		f.log.Warn("network policy: host name does not resolve; keeping its last answer", "host", host, "kept", a.prefixes, "err", err)
		return
	}
	a.expires = time.Now().Add(answerTTL)
	if slices.Equal(a.prefixes, ps) {
		return
	}
	a.prefixes = ps
	if err := f.sync(ctx, false); err != nil {
		f.log.Error("applying desktop network rules after a host name's answer changed", "host", host, "err", err)
	}
}

// plan is every desktop's rules from the cached answers, and the host
// names they use within each owner's MaxHostNamesPerOwner. It warns once
// of what it leaves out. f.mu is held.
func (f *Firewall) plan() ([]Rules, map[string]bool) {
	ids := make([]string, 0, len(f.desktops))
	for id := range f.desktops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	p := planner{f: f, wanted: map[string]bool{}, names: map[string]map[string]bool{}, warned: map[string]bool{}}
	rules := make([]Rules, 0, len(ids))
	for _, id := range ids {
		e := f.desktops[id]
		rules = append(rules, Rules{ID: id, Tap: e.tap, MAC: desktop.MAC(id), IP: e.ip,
			Allow: p.prefixes(id, e.owner, e.policy.AllowOut, true), Deny: p.prefixes(id, e.owner, e.policy.DenyOut, false),
			DenyDNS: e.policy.DenyDNS})
	}
	// Only warnings that still hold are kept, so one that stops and
	// starts again is given again, and the map does not grow.
	f.warned = p.warned
	return rules, p.wanted
}

// planner is one plan's state.
type planner struct {
	f      *Firewall
	wanted map[string]bool            // host names to keep answered
	names  map[string]map[string]bool // owner → the host names counted
	warned map[string]bool
}

// prefixes turns desktop id's policy entries into prefixes: literal ones as
// they are, host names (within the owner's cap) as their cached answers,
// less, for an allow, what a host name may not open.
func (p *planner) prefixes(id, owner string, entries []string, allow bool) []netip.Prefix {
	names := p.names[owner]
	if names == nil {
		names = map[string]bool{}
		p.names[owner] = names
	}
	var out []netip.Prefix
	for _, en := range entries {
		pr, host, err := desktop.ParseNetworkEntry(en)
		if err != nil {
			continue // validated on the way in
		}
		if host == "" {
			out = append(out, pr)
			continue
		}
		if !names[host] && len(names) >= MaxHostNamesPerOwner {
			p.warn("cap\x00"+owner+"\x00"+host, "network policy: too many host names; this one is not looked up",
				"owner", owner, "desktop", id, "host", host, "max", MaxHostNamesPerOwner)
			continue
		}
		names[host], p.wanted[host] = true, true
		a := p.f.answers[host]
		if a == nil {
			continue
		}
		for _, q := range a.prefixes {
			if allow && !p.f.mayOpen(q) {
				p.warn("addr\x00"+host+"\x00"+q.String(), "network policy: a host name to allow resolves to a reserved address; it stays closed",
					"host", host, "addr", q.Addr())
				continue
			}
			out = append(out, q)
		}
	}
	return out
}

// warn logs msg unless the last plan did for key.
func (p *planner) warn(key, msg string, args ...any) {
	if !p.f.warned[key] {
		p.f.log.Warn(msg, args...)
	}
	p.warned[key] = true
}

// mayOpen says whether an allow entry's host name may open p, an address
// it resolved to. A name's answer is whatever its DNS says (DNS rebinding),
// so it opens no reserved range but the install's owner-openable ones, and
// never link-local or loopback. Literal entries are checked by the API.
func (f *Firewall) mayOpen(p netip.Prefix) bool {
	if desktop.Overlaps(p, desktop.NeverOpen) {
		return false
	}
	return !desktop.Overlaps(p, desktop.ReservedRanges) || desktop.Within(p, f.openable)
}
