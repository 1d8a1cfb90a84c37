// Package prepare makes a remote libvirt host ready for bureau's
// desktops. libvirt carries domains, networks and storage; bureau's
// firewall (its own nftables tables, docs/isolation.md) does not go
// through libvirt, so bureau also signs in to every remote host over SSH,
// with the host key pinned, and applies its tables there. Preparing a host
// means: SSH answers with bureau's key, the host has nft, bureau's desktop
// network is defined and up there (through libvirt), and bureau's
// firewall tables are loaded there (through SSH). It is done when the host
// is added and again over every new libvirt connection, and undone when
// the host is removed.
package prepare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/netpolicy"
	"github.com/bureau/bureau/internal/sshlink"
)

// NetworkLink puts bureau's desktop network on a host through its libvirt
// connection.
type NetworkLink interface {
	EnsureNetwork(ctx context.Context, bridge string, subnet netip.Prefix) error
}

// Preparer readies remote hosts; it implements hosts.Preparer.
type Preparer struct {
	signer   ssh.Signer
	dataDir  string
	resolver netpolicy.Resolver
	log      *slog.Logger
	// Desktops, when set, lists the desktops of a host, whose rules are
	// loaded with the host's base rules.
	Desktops func(ctx context.Context, host string) ([]*desktop.Desktop, error)
	// Openable are the private ranges owners may open, which a host
	// name's answers may then reach too (BUREAU_NETWORK_OWNER_RANGES).
	Openable []netip.Prefix

	mu    sync.Mutex
	hosts map[string]*host
}

// host is what the preparer keeps for one host.
type host struct {
	target string // address and pinned key it was made for
	ssh    *sshlink.Kept
	fw     *netpolicy.Firewall
	tag    string
}

// New makes a preparer signing in with signer. dataDir names this bureau
// instance: each host's tables are named after it and the host, so two
// instances, or two hosts sharing one kernel (tests), keep theirs apart.
func New(signer ssh.Signer, dataDir string, r netpolicy.Resolver, log *slog.Logger) *Preparer {
	return &Preparer{signer: signer, dataDir: dataDir, resolver: r, log: log, hosts: map[string]*host{}}
}

// PublicKey is bureau's key as one authorized_keys line.
func (p *Preparer) PublicKey() string { return sshlink.FormatKey(p.signer.PublicKey()) }

// Prepare signs in to h over SSH, checks its tools and puts bureau's
// network and firewall there. Errors say which field of the host to fix
// (hosts.InvalidError for malformed or missing values, hosts.NotReadyError
// for what the host refused).
func (p *Preparer) Prepare(ctx context.Context, h *hosts.Host, link hosts.Link) error {
	t, err := p.target(ctx, h)
	if err != nil {
		return err
	}
	subnet, err := netip.ParsePrefix(h.Network.Subnet)
	if err != nil || h.Network.Bridge == "" {
		return &hosts.InvalidError{Field: "subnet", Message: fmt.Sprintf("host %s has no desktop network (bridge %q, subnet %q)", h.Name, h.Network.Bridge, h.Network.Subnet)}
	}
	hp := p.host(h.Name, t)
	if _, _, err := hp.ssh.Run(ctx, toolCheck, nil); err != nil {
		return p.sshError(h, err)
	}
	nl, ok := link.(NetworkLink)
	if !ok {
		return fmt.Errorf("host %s: its libvirt link cannot define networks", h.Name)
	}
	if err := nl.EnsureNetwork(ctx, h.Network.Bridge, subnet); err != nil {
		return &hosts.NotReadyError{Field: "subnet", Message: fmt.Sprintf("bureau's desktop network on host %s (bridge %s, subnet %s): %v", h.Name, h.Network.Bridge, subnet, err)}
	}
	fw := p.firewall(h, hp, subnet)
	// The host's tables hold the base rules (desktops never reach the
	// host, each other or private ranges) and each of its desktops' own.
	var ds []*desktop.Desktop
	if p.Desktops != nil {
		if ds, err = p.Desktops(ctx, h.Name); err != nil {
			return fmt.Errorf("host %s: its desktops: %w", h.Name, err)
		}
	}
	if err := fw.Load(ctx, ds); err != nil {
		return &hosts.NotReadyError{Message: fmt.Sprintf("bureau's firewall on host %s: %v", h.Name, err)}
	}
	p.log.Info("host ready for desktops", "host", h.Name, "ssh", h.SSH.Address, "bridge", h.Network.Bridge, "subnet", subnet, "tables", netpolicy.TableName(hp.tag))
	return nil
}

// toolCheck fails with a message naming what bureau needs and the host
// lacks: nft applies bureau's firewall, python3 runs the console relay's
// peer check (internal/vncrelay).
const toolCheck = `for t in nft:nftables python3:python3; do c=${t%%:*}; PATH="$PATH:/usr/sbin:/sbin" command -v "$c" >/dev/null 2>&1 || { echo "$c is not installed on the host (Debian: apt-get install ${t#*:})" >&2; exit 3; }; done`

// target parses h's SSH address and pinned key; without a key it asks the
// host which one it offers and refuses with it, for the admin to check.
func (p *Preparer) target(ctx context.Context, h *hosts.Host) (sshlink.Target, error) {
	if h.SSH.Address == "" {
		return sshlink.Target{}, &hosts.InvalidError{Field: "ssh_address", Message: "bureau reaches a remote host over SSH too (its firewall, consoles): give ssh_address as user@host[:port] (taken from a qemu+ssh URI when left out)"}
	}
	user, addr, err := sshlink.ParseAddr(h.SSH.Address)
	if err != nil {
		return sshlink.Target{}, &hosts.InvalidError{Field: "ssh_address", Message: err.Error()}
	}
	if strings.TrimSpace(h.SSH.HostKey) == "" {
		offered, err := scan(ctx, addr)
		if err != nil {
			return sshlink.Target{}, &hosts.NotReadyError{Field: "ssh_address", Message: fmt.Sprintf("no SSH host key to pin, and asking %s for its key failed: %v", addr, err)}
		}
		return sshlink.Target{}, &hosts.InvalidError{Field: "ssh_host_key", Message: fmt.Sprintf(
			"pin the host's SSH key: %s offered %q; check it against the host's own (/etc/ssh/ssh_host_ed25519_key.pub there) and pass it as ssh_host_key", addr, sshlink.FormatKey(offered))}
	}
	key, err := sshlink.ParseHostKey(h.SSH.HostKey)
	if err != nil {
		return sshlink.Target{}, &hosts.InvalidError{Field: "ssh_host_key", Message: err.Error()}
	}
	h.SSH.Address, h.SSH.HostKey = user+"@"+addr, sshlink.FormatKey(key)
	return sshlink.Target{Addr: addr, User: user, HostKey: key, Signer: p.signer}, nil
}

// sshError says which field a failed sign-in points at.
func (p *Preparer) sshError(h *hosts.Host, err error) error {
	var exit *sshlink.ExitError
	switch {
	case errors.Is(err, sshlink.ErrHostKeyMismatch):
		return &hosts.NotReadyError{Field: "ssh_host_key", Message: err.Error()}
	case errors.Is(err, sshlink.ErrKeyRefused):
		return &hosts.NotReadyError{Field: "ssh_address", Message: err.Error()}
	case errors.As(err, &exit):
		return &hosts.NotReadyError{Message: fmt.Sprintf("host %s: %s", h.Name, strings.TrimSpace(exit.Stderr))}
	}
	return &hosts.NotReadyError{Field: "ssh_address", Message: fmt.Sprintf("host %s over SSH: %v", h.Name, err)}
}

// host returns what is kept for name, made again when its SSH target
// changed.
func (p *Preparer) host(name string, t sshlink.Target) *host {
	id := t.String() + " " + sshlink.FormatKey(t.HostKey)
	p.mu.Lock()
	defer p.mu.Unlock()
	if hp := p.hosts[name]; hp != nil && hp.target == id {
		return hp
	} else if hp != nil {
		hp.ssh.Close()
	}
	hp := &host{target: id, ssh: sshlink.NewKept(t), tag: netpolicy.InstanceTag(p.dataDir + "\x00" + name)}
	p.hosts[name] = hp
	return hp
}

func (p *Preparer) firewall(h *hosts.Host, hp *host, subnet netip.Prefix) *netpolicy.Firewall {
	p.mu.Lock()
	defer p.mu.Unlock()
	if hp.fw == nil {
		n := netpolicy.Net{Bridge: h.Network.Bridge, Subnet: subnet.Masked(), Gateway: subnet.Masked().Addr().Next()}
		hp.fw = netpolicy.New(hp.tag, n, p.resolver, nftOver(hp.ssh), p.log.With("host", h.Name))
		hp.fw.SetOpenable(p.Openable)
	}
	return hp.fw
}

// nftOver applies nftables scripts on a host with `nft -f -` over SSH.
// The host bounds it itself: a root session's command is not signalled
// when bureau gives up on it (sshd refuses signals without privilege
// separation).
func nftOver(k *sshlink.Kept) netpolicy.Applier {
	return func(ctx context.Context, script string) error {
		_, _, err := k.Run(ctx, `PATH="$PATH:/usr/sbin:/sbin" timeout 30 nft -f -`, strings.NewReader(script))
		return err
	}
}

// Firewall is the firewall bureau keeps on a host it made ready.
func (p *Preparer) Firewall(name string) (*netpolicy.Firewall, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if hp := p.hosts[name]; hp != nil && hp.fw != nil {
		return hp.fw, nil
	}
	return nil, fmt.Errorf("host %s is not ready for desktops yet (no firewall there)", name)
}

// SSH is bureau's SSH link to a host it made ready.
func (p *Preparer) SSH(name string) (*sshlink.Kept, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if hp := p.hosts[name]; hp != nil {
		return hp.ssh, nil
	}
	return nil, fmt.Errorf("host %s is not ready for desktops yet (no SSH link)", name)
}

// Forget removes bureau's tables from a removed host (best effort: the
// host may be gone) and closes its SSH link.
func (p *Preparer) Forget(name string) {
	p.mu.Lock()
	hp := p.hosts[name]
	delete(p.hosts, name)
	p.mu.Unlock()
	if hp == nil {
		return
	}
	defer hp.ssh.Close()
	if hp.fw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := nftOver(hp.ssh)(ctx, netpolicy.RemoveScript(hp.tag)); err != nil {
		p.log.Warn("bureau's firewall tables were not removed from a removed host", "host", name, "err", err)
	}
}
