package libvirt

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// Remotes tells the hypervisor where each domain runs when bureau has
// several hosts: every call about a domain goes to the libvirt connection
// of its host, and events and listings of all hosts come back through the
// one Hypervisor the rest of bureau holds.
type Remotes struct {
	// Where names the host a domain runs on; "" or "local" is the host
	// of the Hypervisor's own connection.
	Where func(domain string) string
	// Hosts lists the remote hosts and their libvirt URIs.
	Hosts func(ctx context.Context) (map[string]string, error)
}

// remoteSet holds the connections to remote hosts, made on first use.
type remoteSet struct {
	cfg Remotes
	mu  sync.Mutex
	m   map[string]*Hypervisor
}

// SetRemotes routes domains of remote hosts to their hosts' libvirtd.
func (h *Hypervisor) SetRemotes(r Remotes) {
	h.remotes = &remoteSet{cfg: r, m: map[string]*Hypervisor{}}
}

// on is the hypervisor of the host domain runs on.
func (h *Hypervisor) on(ctx context.Context, domain string) (*Hypervisor, error) {
	if h.remotes == nil || h.remotes.cfg.Where == nil {
		return h, nil
	}
	host := h.remotes.cfg.Where(domain)
	if host == "" || host == "local" {
		return h, nil
	}
	return h.Remote(ctx, host)
}

// Remote is the connection to a remote host's libvirtd (made on first
// use; its events arrive on h's Events).
func (h *Hypervisor) Remote(ctx context.Context, host string) (*Hypervisor, error) {
	if h.remotes == nil {
		return nil, fmt.Errorf("host %s: this bureau runs desktops on its own host only", host)
	}
	rs := h.remotes
	rs.mu.Lock()
	r := rs.m[host]
	rs.mu.Unlock()
	if r != nil {
		return r, nil
	}
	uris, err := rs.cfg.Hosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	uri, ok := uris[host]
	if !ok {
		return nil, fmt.Errorf("host %s: %w", host, desktop.ErrHostGone)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.m[host]; r != nil {
		return r, nil
	}
	r = &Hypervisor{uri: uri, host: host, log: h.log.With("host", host), events: h.events, resync: h.resync}
	rs.m[host] = r
	return r, nil
}

// ForgetRemote closes a removed host's connection.
func (h *Hypervisor) ForgetRemote(host string) {
	if h.remotes == nil {
		return
	}
	h.remotes.mu.Lock()
	r := h.remotes.m[host]
	delete(h.remotes.m, host)
	h.remotes.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// listAll is List over this host and every remote one. Hosts that did not
// answer are named in a *desktop.UnreachableError returned with the
// domains of those that did.
func (h *Hypervisor) listAll(ctx context.Context) (map[string]desktop.VMState, error) {
	out, err := h.listOwn(ctx)
	if err != nil || h.remotes == nil || h.remotes.cfg.Hosts == nil {
		return out, err
	}
	uris, err := h.remotes.cfg.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	var lost []string
	var why []string
	for host := range uris {
		r, err := h.Remote(ctx, host)
		var vms map[string]desktop.VMState
		if err == nil {
			vms, err = r.listOwn(ctx)
		}
		if err != nil {
			lost, why = append(lost, host), append(why, host+": "+err.Error())
			continue
		}
		for name, st := range vms {
			out[name] = st
		}
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		sort.Strings(why)
		return out, &desktop.UnreachableError{Hosts: lost, Err: errors.New(strings.Join(why, "; "))}
	}
	return out, nil
}

// localDomain says whether d's libvirtd runs on this machine, where bureau
// hands a VM's files to its QEMU user itself (on a remote host, the
// storage pool made them with that owner).
func localDomain(d *libvirt.Domain) bool {
	c, err := d.DomainGetConnect()
	if err != nil {
		return true
	}
	defer c.Close()
	uri, err := c.GetURI()
	return err != nil || isLocalURI(uri)
}

func isLocalURI(uri string) bool {
	return strings.HasPrefix(uri, "qemu:///") || strings.HasPrefix(uri, "qemu+unix:///") || strings.HasPrefix(uri, "test:///")
}
