// Package link is the connection layer every package under
// internal/hypervisor/libvirt shares: a connection to one libvirtd (Conn),
// reconnected as needed, that routes a domain's calls to the connection of
// the host the domain runs on (Remotes, hosts.go), bounds every libvirt
// call by a deadline so a wedged guest or daemon never hangs the caller
// (Call, DomainOn, WithDomain: call.go), delivers the domains' lifecycle
// events (events.go), carries QMP commands (Monitor, monitor.go), and
// translates libvirt's errors into the desktop package's terms
// (errors.go).
package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// DefaultCallTimeout bounds a libvirt call when the caller's context has no
// earlier deadline.
const DefaultCallTimeout = 60 * time.Second

// Conn is a connection to one libvirtd.
type Conn struct {
	uri string
	log *slog.Logger

	// host is the remote host this connection is to ("" for bureau's own).
	host    string
	remotes *remoteSet

	mu   sync.Mutex
	conn *libvirt.Connect

	// migrations tells a migration's lifecycle events on this connection
	// from a desktop's own.
	migrations migrationEvents

	events chan desktop.VMEvent
	// resync is signalled when events may have been missed: after a
	// reconnect, or when one was dropped.
	resync chan struct{}
}

var registerEventsOnce sync.Once

// Open connects to libvirtd at uri (e.g. qemu:///system) and starts
// delivering lifecycle events of bureau's domains on Events.
func Open(ctx context.Context, uri string, log *slog.Logger) (*Conn, error) {
	registerEventsOnce.Do(func() {
		if err := libvirt.EventRegisterDefaultImpl(); err != nil {
			log.Error("libvirt event loop registration failed", "err", err)
			return
		}
		go func() {
			for {
				if err := libvirt.EventRunDefaultImpl(); err != nil {
					log.Error("libvirt event loop", "err", err)
					time.Sleep(time.Second)
				}
			}
		}()
	})
	c := &Conn{uri: uri, log: log, events: make(chan desktop.VMEvent, 256), resync: make(chan struct{}, 1)}
	if _, err := c.Connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// URI is the libvirt URI of the connection's host.
func (c *Conn) URI() string { return c.uri }

// Host is the remote host this connection is to ("" for bureau's own).
func (c *Conn) Host() string { return c.host }

// Log is the connection's logger (a remote host's names the host).
func (c *Conn) Log() *slog.Logger { return c.log }

// Local says whether libvirtd runs on this machine (no host in the URI).
func (c *Conn) Local() bool {
	return IsLocalURI(c.uri)
}

// Close drops the connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		_, err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}

// Connect returns a live connection, reconnecting (and re-registering for
// events) when libvirtd restarted or the socket dropped.
func (c *Conn) Connect(ctx context.Context) (*libvirt.Connect, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reconnect := false
	if c.conn != nil {
		if alive, err := c.conn.IsAlive(); err == nil && alive {
			return c.conn, nil
		}
		// Calls begun on it may still be returning (a host that froze
		// and came back): libvirt-go frees the connection's data on
		// close, which those would then use. A dead connection fails its
		// calls at once, so it is closed once they had time to return.
		dead := c.conn
		time.AfterFunc(deadConnGrace, func() { dead.Close() })
		c.conn = nil
		reconnect = true
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to libvirt at %s: %w", c.uri, err)
	}
	// A remote host's health is the hosts registry's to watch (its own
	// link, with keepalive). Here, a keepalive that closes a connection
	// with calls still waiting on a host that froze crashed bureau inside
	// libvirt once the host answered again (libvirt 9.0): those calls wait
	// instead, each bounded for its caller by Call's deadline.
	if c.host == "" {
		if err := conn.SetKeepAlive(5, 3); err != nil {
			c.log.Warn("libvirt keepalive", "err", err)
		}
	}
	if _, err := conn.DomainEventLifecycleRegister(nil, c.onLifecycle); err != nil {
		c.log.Warn("libvirt lifecycle events unavailable", "err", err)
	}
	c.conn = conn
	if reconnect {
		// Changes while the connection was down sent no events.
		c.log.Info("reconnected to libvirt", "uri", c.uri)
		c.signalResync()
	}
	return conn, nil
}

// restartGrace is how long connecting to this machine's libvirtd is tried
// again while its socket is missing or refuses — what it does while it
// restarts (1–3 s here) — so that an operation begun during a restart
// rides through it instead of failing (and leaving its desktop in error).
const restartGrace = 10 * time.Second

// dial connects to libvirtd, trying a local one again for restartGrace
// while it looks to be restarting.
func (c *Conn) dial(ctx context.Context) (*libvirt.Connect, error) {
	deadline := time.Now().Add(restartGrace)
	for {
		conn, err := Call(ctx, func() (*libvirt.Connect, error) { return libvirt.NewConnect(c.uri) })
		if err == nil || !c.Local() || !restarting(err) || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// restarting says whether err is what connecting to a local libvirtd says
// while it restarts: its socket is not there, or nothing listens on it.
func restarting(err error) bool {
	var lerr libvirt.Error
	if !errors.As(err, &lerr) || lerr.Code != libvirt.ERR_SYSTEM_ERROR {
		return false
	}
	return strings.Contains(lerr.Message, "No such file or directory") || strings.Contains(lerr.Message, "Connection refused")
}

// deadConnGrace is how long a dead connection is kept before it is closed.
const deadConnGrace = 2 * time.Minute
