package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// Placer lists the hosts desktops may run on, each with what bureau's
// desktops take there, the local host first.
type Placer interface {
	Candidates(ctx context.Context) ([]placement.Host, error)
}

// Placement is how the manager places desktops among hosts.
type Placement struct {
	// Hosts, when set, lists the hosts. Without it every desktop runs
	// where its create names (bureau's own host by default).
	Hosts Placer
	// Policy is how much of each host desktops may be given.
	Policy placement.Policy
	// Auto places a create that names no host on the host that weighs
	// most (placement.Policy.Choose); WithHosts does so only while bureau
	// has a remote host (on its own host alone there is nothing to
	// weigh); neither, it runs on bureau's own host.
	Auto, WithHosts bool
}

// placer decides which host a desktop runs on: the one its create names
// (hostFor) or the one placement chooses (where), and whether a host has
// room for a desktop as it is recorded there (fitsOn) or woken there
// (roomOnRemote).
type placer struct {
	// sites checks the remote host a create names (desktopHosts.named).
	sites siteNamer
	// From Config: how desktops are placed (Placement), and what desktops
	// on bureau's own host run under (Accelerator).
	placement Placement
	accel     desktop.Accelerator
}

// siteNamer reaches the remote host a request names (desktopHosts.named).
type siteNamer interface {
	named(ctx context.Context, host string) (*Site, error)
}

// placing says whether a create that names no host is placed by weight.
func (pl *placer) placing(ctx context.Context) bool {
	p := pl.placement
	switch {
	case p.Hosts == nil:
		return false
	case p.Auto:
		return true
	case !p.WithHosts:
		return false
	}
	hs, err := p.Hosts.Candidates(ctx)
	return err == nil && p.placesAmong(hs)
}

// placesAmong is placing with the hosts as placement sees them at hand.
func (p Placement) placesAmong(hosts []placement.Host) bool {
	return p.Auto || p.WithHosts && slices.ContainsFunc(hosts, func(h placement.Host) bool { return h.Name != desktop.LocalHost })
}

// spot is the host a create runs on.
type spot struct {
	host  string
	accel desktop.Accelerator
	// placed: chosen by placement, so another host may be tried when
	// this one turns out full as the desktop is recorded.
	placed bool
}

// hostFullError: a host had no room for a desktop as it was recorded.
type hostFullError struct {
	host string
	why  error
}

func (e *hostFullError) Error() string {
	return fmt.Sprintf("host %s has no room for it: %v", e.host, e.why)
}

func (e *hostFullError) Unwrap() []error { return []error{desktop.ErrCapacity, e.why} }

// where decides the host a create runs on: the one it names (bureau's own,
// or a remote one ready for desktops; not for clones yet), else the one
// placement chooses among those carrying its labels, skipping skip.
func (pl *placer) where(ctx context.Context, req CreateRequest, clone bool, skip map[string]string) (spot, error) {
	if len(req.PlaceLabels) > 0 && req.Host != "" {
		return spot{}, &desktop.ValidationError{Field: "placement", Message: "name a host or placement labels, not both"}
	}
	auto := false
	if req.Host == "" {
		// Labels ask for placement, even among bureau's own host alone.
		auto = len(req.PlaceLabels) > 0 && pl.placement.WithHosts && pl.placement.Hosts != nil || pl.placing(ctx)
	}
	if req.Host == "" && len(req.PlaceLabels) > 0 && !auto {
		return spot{}, &desktop.ValidationError{Field: "placement", Message: "placement is off on this bureau (BUREAU_PLACEMENT=off): name a host instead"}
	}
	if req.Host == "" && (!auto || clone) {
		req.Host = desktop.LocalHost
	}
	if req.Host != "" {
		accel, err := pl.hostFor(ctx, req, clone)
		return spot{host: req.Host, accel: accel}, err
	}
	hosts, err := pl.placement.Hosts.Candidates(ctx)
	if err != nil {
		return spot{}, fmt.Errorf("placement: %w", err)
	}
	h, err := pl.placement.Policy.Choose(hosts, pl.placementRequest(req.Spec, req.PlaceLabels, skip))
	if err != nil {
		return spot{}, fmt.Errorf("%w: %w", desktop.ErrCapacity, err)
	}
	req.Host = h.Name
	accel, err := pl.hostFor(ctx, req, false)
	return spot{host: h.Name, accel: accel, placed: true}, err
}

// hostFor checks the host a create asks for (bureau's own, or a remote
// one that is ready for desktops; not for clones yet) and says which
// accelerator desktops use there.
func (pl *placer) hostFor(ctx context.Context, req CreateRequest, clone bool) (desktop.Accelerator, error) {
	if req.Host == desktop.LocalHost {
		return pl.accel, nil
	}
	if clone {
		return "", &desktop.ValidationError{Field: "host", Message: "a clone runs on its source's host; clones of snapshots are " + desktop.ErrNotOnRemoteHost.Error()}
	}
	s, err := pl.sites.named(ctx, req.Host)
	if err != nil {
		return "", err
	}
	if s.Accelerator == "" {
		return desktop.AccelTCG, nil
	}
	return s.Accelerator, nil
}

// placementRequest is what a desktop of spec asks of its host.
func (pl *placer) placementRequest(spec desktop.Spec, labels, skip map[string]string) placement.Request {
	return placement.Request{MemoryMiB: int64(spec.MemoryMiB), DiskMiB: newDesktopDiskMiB, Labels: labels, Skip: skip}
}

// fitsOn is the check the store runs on d's host, with what its desktops
// take at that moment, as d is recorded (nil: no check beyond the local
// host's own): d's memory (none when memHeld) must fit there. A remote
// host is always checked; bureau's own only when placement is on, else
// only whether it is draining.
func (pl *placer) fitsOn(ctx context.Context, d *desktop.Desktop, memHeld bool) (func(placement.Load) error, error) {
	if pl.placement.Hosts == nil {
		return nil, nil
	}
	hosts, err := pl.placement.Hosts.Candidates(ctx)
	if err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}
	h, err := hostIn(hosts, d.Host)
	if errors.Is(err, desktop.ErrHostGone) && !d.Remote() {
		return nil, nil // not recorded yet: bureau records its own host at start
	}
	if err != nil {
		return nil, err
	}
	if !d.Remote() && !pl.placement.placesAmong(hosts) {
		// Only a drain keeps desktops off bureau's own host.
		if h.Draining {
			return nil, &hostFullError{host: h.Name, why: errors.New("draining: its desktops are moving off it")}
		}
		return nil, nil
	}
	req := pl.placementRequest(d.Spec, nil, nil)
	if memHeld {
		req.MemoryMiB = 0
	}
	policy := pl.placement.Policy
	return func(l placement.Load) error {
		h.Load = l
		if err := policy.Fits(h, req); err != nil {
			return &hostFullError{host: h.Name, why: err}
		}
		return nil
	}, nil
}

// candidate is one host as placement sees it.
func (pl *placer) candidate(ctx context.Context, host string) (placement.Host, error) {
	hosts, err := pl.placement.Hosts.Candidates(ctx)
	if err != nil {
		return placement.Host{}, fmt.Errorf("placement: %w", err)
	}
	return hostIn(hosts, host)
}

// hostIn is host among hosts.
func hostIn(hosts []placement.Host, host string) (placement.Host, error) {
	i := slices.IndexFunc(hosts, func(h placement.Host) bool { return h.Name == host })
	if i < 0 {
		return placement.Host{}, fmt.Errorf("host %s: %w", host, desktop.ErrHostGone)
	}
	return hosts[i], nil
}

// roomOnRemote refuses to run d (memMiB of it) on its remote host when
// placement says the host has no room for it.
func (pl *placer) roomOnRemote(ctx context.Context, d *desktop.Desktop, memMiB int) error {
	if pl.placement.Hosts == nil {
		return nil
	}
	h, err := pl.candidate(ctx, d.Host)
	if err != nil {
		return err
	}
	if err := pl.placement.Policy.Fits(h, placement.Request{MemoryMiB: int64(memMiB)}); err != nil {
		return &hostFullError{host: h.Name, why: err}
	}
	return nil
}

// placedWhy says where a placed create went, for its event.
func placedWhy(s spot, labels map[string]string) string {
	if !s.placed {
		return ""
	}
	if len(labels) == 0 {
		return ", placed by weight"
	}
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		ls = append(ls, k+"="+labels[k])
	}
	return ", placed by weight among hosts labelled " + strings.Join(ls, ",")
}

// fullHost says which host a refused record found full and why, if that
// was why.
func fullHost(err error) (*hostFullError, bool) {
	var hf *hostFullError
	return hf, errors.As(err, &hf)
}
