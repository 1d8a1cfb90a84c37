package link

import (
	"context"
	"fmt"
	"sync"

	"github.com/bureau/bureau/internal/desktop"
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
	m   map[string]*Conn
}

// SetRemotes routes domains of remote hosts to their hosts' libvirtd.
func (c *Conn) SetRemotes(r Remotes) {
	c.remotes = &remoteSet{cfg: r, m: map[string]*Conn{}}
}

// On is the connection of the host domain runs on.
func (c *Conn) On(ctx context.Context, domain string) (*Conn, error) {
	if c.remotes == nil || c.remotes.cfg.Where == nil {
		return c, nil
	}
	host := c.remotes.cfg.Where(domain)
	if host == "" || host == "local" {
		return c, nil
	}
	return c.Remote(ctx, host)
}

// Remote is the connection to a remote host's libvirtd (made on first
// use; its events arrive on c's Events).
func (c *Conn) Remote(ctx context.Context, host string) (*Conn, error) {
	if c.remotes == nil {
		return nil, fmt.Errorf("host %s: this bureau runs desktops on its own host only", host)
	}
	rs := c.remotes
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
	r = &Conn{uri: uri, host: host, log: c.log.With("host", host), events: c.events, resync: c.resync}
	rs.m[host] = r
	return r, nil
}

// ForgetRemote closes a removed host's connection.
func (c *Conn) ForgetRemote(host string) {
	if c.remotes == nil {
		return
	}
	c.remotes.mu.Lock()
	r := c.remotes.m[host]
	delete(c.remotes.m, host)
	c.remotes.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// HasRemoteHosts says whether c lists remote hosts (RemoteHosts).
func (c *Conn) HasRemoteHosts() bool {
	return c.remotes != nil && c.remotes.cfg.Hosts != nil
}

// RemoteHosts lists the remote hosts and their libvirt URIs
// (Remotes.Hosts); only when HasRemoteHosts.
func (c *Conn) RemoteHosts(ctx context.Context) (map[string]string, error) {
	return c.remotes.cfg.Hosts(ctx)
}

// OnHost is the connection to host ("local": c's own).
func (c *Conn) OnHost(ctx context.Context, host string) (*Conn, error) {
	if host == "local" {
		return c, nil
	}
	return c.Remote(ctx, host)
}

// HostOf names the host a domain runs on ("local": this connection's).
func (c *Conn) HostOf(domain string) string {
	if c.remotes != nil && c.remotes.cfg.Where != nil {
		return HostName(c.remotes.cfg.Where(domain))
	}
	return HostName(c.host)
}

// HostName is a host's name with "" as "local".
func HostName(host string) string {
	if host == "" {
		return "local"
	}
	return host
}
