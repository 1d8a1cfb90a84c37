package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/capacity"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/hosts/prepare"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/network"
	"github.com/bureau/bureau/internal/manager"
	places "github.com/bureau/bureau/internal/placement"
	"github.com/bureau/bureau/internal/sshlink"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/vncrelay"
)

// sites gives the manager what desktops on remote hosts use there: the
// hosts' libvirt connections (through the hypervisor's routing), storage
// pools, DHCP, and bureau's SSH links and firewalls (the preparer's).
type sites struct {
	st   *store.Store
	h    *hv.Hypervisor
	prep *prepare.Preparer
}

func (s sites) Site(ctx context.Context, name string) (*manager.Site, error) {
	h, err := s.st.GetHost(ctx, name)
	if errors.Is(err, hosts.ErrNotFound) {
		return nil, fmt.Errorf("no host %q (see bureau host list)", name)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case h.Name == hosts.LocalName:
		return nil, errors.New("the local host is not a remote site")
	case h.State != hosts.StateUp:
		return nil, fmt.Errorf("host %s is %s: %s", name, h.State, h.LastError)
	case !h.Ready:
		return nil, fmt.Errorf("host %s is not ready for desktops: %s", name, h.ReadyError)
	}
	subnet, err := netip.ParsePrefix(h.Network.Subnet)
	if err != nil {
		return nil, fmt.Errorf("host %s: its desktop subnet %q: %w", name, h.Network.Subnet, err)
	}
	fw, err := s.prep.Firewall(name)
	if err != nil {
		return nil, err
	}
	link, err := s.prep.SSH(name)
	if err != nil {
		return nil, err
	}
	remote, err := s.h.Remote(ctx, name)
	if err != nil {
		return nil, err
	}
	files, err := s.h.Files(ctx, name)
	if err != nil {
		return nil, err
	}
	files.Sweep = func(ctx context.Context, dir string) error { return sweep(ctx, link, dir) }
	return &manager.Site{Accelerator: desktop.Accelerator(h.Accelerator), Subnet: subnet, Firewall: fw, Addresses: network.Addresses{H: remote, Network: network.DesktopNetwork}, Files: files, Disks: files, Sizes: files,
		Display: func(ctx context.Context, path string, uid int) (net.Conn, error) {
			return vncrelay.Dial(ctx, link, path, uid)
		},
		Address: migrationAddress(h)}, nil
}

// migrationAddress is where migration streams reach host h: its libvirt
// URI's host, else its SSH address's.
func migrationAddress(h *hosts.Host) string {
	if u, err := url.Parse(h.URI); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	if _, hostPort, ok := strings.Cut(h.SSH.Address, "@"); ok {
		if host, _, err := net.SplitHostPort(hostPort); err == nil {
			return host
		}
	}
	return ""
}

// sweep removes the sockets and FIFOs libvirt's storage pools neither list
// nor remove (QEMU leaves its vnc.sock when it ends) from a desktop's
// folder on a host, over SSH.
func sweep(ctx context.Context, link *sshlink.Kept, dir string) error {
	if !filepath.IsAbs(dir) || filepath.Base(filepath.Dir(dir)) != "desktops" || filepath.Clean(dir) != dir || strings.ContainsAny(dir, "'\n") {
		return fmt.Errorf("not a desktop's folder: %q", dir)
	}
	_, _, err := link.Run(ctx, "timeout 30 find '"+dir+"' -maxdepth 1 \\( -type s -o -type p \\) -delete", nil)
	return err
}

// placements says which host each desktop's VM runs on, for the
// hypervisor's routing: read from the store once per desktop, and told
// when a migration moves one.
type placements struct {
	st *store.Store
	m  sync.Map // desktop id → host
}

func (p *placements) where(domain string) string {
	id, ok := desktop.IDOfDomain(domain)
	if !ok {
		return ""
	}
	if h, ok := p.m.Load(id); ok {
		return h.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := p.st.GetDesktop(ctx, id)
	if errors.Is(err, desktop.ErrNotFound) {
		// A spare's or a template's VM: this host's. Not kept, as a
		// desktop may be recorded under that id next.
		return ""
	}
	if err != nil {
		return ""
	}
	p.m.Store(id, d.Host)
	return d.Host
}

// moved records that a desktop's VM now runs on host.
func (p *placements) moved(id, host string) { p.m.Store(id, host) }

// remoteHosts lists the remote hosts' libvirt URIs.
func remoteHosts(st *store.Store) func(ctx context.Context) (map[string]string, error) {
	return func(ctx context.Context) (map[string]string, error) {
		hs, err := st.ListHosts(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, h := range hs {
			if h.Name != hosts.LocalName {
				out[h.Name] = h.URI
			}
		}
		return out, nil
	}
}

// placementOf is how desktops are placed among the hosts: every host
// checked with what bureau's desktops hold there, and creates naming no
// host placed by weight (BUREAU_PLACEMENT: on, off, or auto: once bureau
// has a remote host).
func placementOf(cfg *config.Config, st *store.Store, room capacity.Capacity) manager.Placement {
	return manager.Placement{
		Hosts: places.Lister{Source: st, LocalMemory: room.MemoryMiB},
		Policy: places.Policy{MemoryRatio: float64(max(cfg.MemoryRatioPercent, 1)) / 100,
			ReserveMiB: capacity.MemoryReserveMiB, DiskReserveMiB: capacity.DiskReserveMiB},
		Auto: cfg.Placement == "on", WithHosts: cfg.Placement == "auto",
	}
}

// resumeDrains takes up the drains a restart cut short: every host still
// marked draining, once the hosts were checked (a host still "connecting"
// would look unable to take any desktop), or after a minute.
func resumeDrains(ctx context.Context, st *store.Store, m *manager.Manager, log *slog.Logger) {
	var hs []hosts.Host
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		if hs, err = st.ListHosts(ctx); err != nil {
			log.Error("hosts being drained not read", "err", err)
			return
		}
		if !slices.ContainsFunc(hs, func(h hosts.Host) bool { return h.State == hosts.StateConnecting && h.Name != hosts.LocalName }) ||
			time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	for _, h := range hs {
		if !h.Draining {
			continue
		}
		if _, err := m.Drain(ctx, h.Name, "bureau"); err != nil {
			log.Error("drain not taken up after the restart", "host", h.Name, "err", err)
		}
	}
}
