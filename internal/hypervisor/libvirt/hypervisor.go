// Package libvirt is bureau's only cgo package: it drives QEMU through
// libvirtd (domains, lifecycle events, screenshots, guest agent, QMP) and
// translates libvirt's states and errors into the desktop package's terms.
// Every call carries a deadline so a wedged guest or daemon never hangs the
// caller.
package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"libvirt.org/go/libvirt"
)

// DefaultCallTimeout bounds a libvirt call when the caller's context has no
// earlier deadline.
const DefaultCallTimeout = 60 * time.Second

// Hypervisor is a connection to one libvirtd.
type Hypervisor struct {
	uri string
	log *slog.Logger
	// AgentViaStream reaches bureau-agent through libvirt's channel stream
	// even on a local host (as on a remote one).
	AgentViaStream bool
	// ScreenDir, when set, names a domain's folder its QEMU may write
	// ("" for none): screenshots are written there by QEMU and read back
	// instead of streamed through libvirt (faster on a local host).
	ScreenDir func(domain string) string

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
func Open(ctx context.Context, uri string, log *slog.Logger) (*Hypervisor, error) {
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
	h := &Hypervisor{uri: uri, log: log, events: make(chan desktop.VMEvent, 256), resync: make(chan struct{}, 1)}
	if _, err := h.connect(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// Events delivers lifecycle changes of domains named "bureau-…".
func (h *Hypervisor) Events() <-chan desktop.VMEvent { return h.events }

// Resync is signalled when events may have been missed.
func (h *Hypervisor) Resync() <-chan struct{} { return h.resync }

func (h *Hypervisor) signalResync() {
	select {
	case h.resync <- struct{}{}:
	default:
	}
}

// Close drops the connection.
func (h *Hypervisor) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil {
		_, err := h.conn.Close()
		h.conn = nil
		return err
	}
	return nil
}

// connect returns a live connection, reconnecting (and re-registering for
// events) when libvirtd restarted or the socket dropped.
func (h *Hypervisor) connect(ctx context.Context) (*libvirt.Connect, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	reconnect := false
	if h.conn != nil {
		if alive, err := h.conn.IsAlive(); err == nil && alive {
			return h.conn, nil
		}
		// Calls begun on it may still be returning (a host that froze
		// and came back): libvirt-go frees the connection's data on
		// close, which those would then use. A dead connection fails its
		// calls at once, so it is closed once they had time to return.
		dead := h.conn
		time.AfterFunc(deadConnGrace, func() { dead.Close() })
		h.conn = nil
		reconnect = true
	}
	conn, err := call(ctx, func() (*libvirt.Connect, error) { return libvirt.NewConnect(h.uri) })
	if err != nil {
		return nil, fmt.Errorf("connect to libvirt at %s: %w", h.uri, err)
	}
	// A remote host's health is the hosts registry's to watch (its own
	// link, with keepalive). Here, a keepalive that closes a connection
	// with calls still waiting on a host that froze crashed bureau inside
	// libvirt once the host answered again (libvirt 9.0): those calls wait
	// instead, each bounded for its caller by call's deadline.
	if h.host == "" {
		if err := conn.SetKeepAlive(5, 3); err != nil {
			h.log.Warn("libvirt keepalive", "err", err)
		}
	}
	if _, err := conn.DomainEventLifecycleRegister(nil, h.onLifecycle); err != nil {
		h.log.Warn("libvirt lifecycle events unavailable", "err", err)
	}
	h.conn = conn
	if reconnect {
		// Changes while the connection was down sent no events.
		h.log.Info("reconnected to libvirt", "uri", h.uri)
		h.signalResync()
	}
	return conn, nil
}

// deadConnGrace is how long a dead connection is kept before it is closed.
const deadConnGrace = 2 * time.Minute

// call runs fn with the context's deadline (or DefaultCallTimeout). libvirt's
// C calls cannot be interrupted, so on timeout fn finishes in the background
// and its result is dropped.
func call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("libvirt call: %w", ctx.Err())
	}
}

// domainOn is withDomain on hv's own host, whatever Remotes.Where says.
// A domain not there is an error wrapping ErrNoDomain.
func domainOn[T any](ctx context.Context, hv *Hypervisor, name string, fn func(*libvirt.Domain) (T, error)) (T, error) {
	var zero T
	conn, err := hv.connect(ctx)
	if err != nil {
		return zero, err
	}
	return call(ctx, func() (T, error) {
		dom, err := conn.LookupDomainByName(name)
		if err != nil {
			return zero, translate(name, err)
		}
		defer dom.Free()
		return fn(dom)
	})
}

// withDomain looks a domain up on the host it runs on (Remotes.Where) and
// runs fn on it within the deadline.
func withDomain[T any](ctx context.Context, h *Hypervisor, name string, fn func(*libvirt.Domain) (T, error)) (T, error) {
	h, err := h.on(ctx, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return domainOn(ctx, h, name, func(d *libvirt.Domain) (T, error) {
		v, err := fn(d)
		return v, translate(name, err)
	})
}

// isCode says whether err is libvirt's error code.
func isCode(err error, code libvirt.ErrorNumber) bool {
	var lerr libvirt.Error
	return errors.As(err, &lerr) && lerr.Code == code
}

// ErrNoDomain means the domain does not exist.
var ErrNoDomain = errors.New("no such domain")

func translate(name string, err error) error {
	if err == nil {
		return nil
	}
	var lerr libvirt.Error
	if errors.As(err, &lerr) {
		switch lerr.Code {
		case libvirt.ERR_NO_DOMAIN:
			return fmt.Errorf("domain %s: %w", name, ErrNoDomain)
		case libvirt.ERR_AGENT_UNRESPONSIVE, libvirt.ERR_AGENT_UNSYNCED:
			return fmt.Errorf("domain %s: guest agent not answering: %w", name, desktop.ErrUnavailable)
		case libvirt.ERR_OPERATION_INVALID:
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, desktop.ErrUnavailable)
		case libvirt.ERR_NO_DOMAIN_SNAPSHOT:
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, desktop.ErrNoSnapshot)
		}
		if connectionLost(lerr) {
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, desktop.ErrHostLost)
		}
		if strings.Contains(lerr.Message, noSpace) {
			// libvirt reports the errno of a failed write only as its text.
			return fmt.Errorf("domain %s: %s: %w", name, lerr.Message, syscall.ENOSPC)
		}
		return fmt.Errorf("domain %s: %s", name, lerr.Message)
	}
	return fmt.Errorf("domain %s: %w", name, err)
}

// connectionLost says whether a call failed because its connection to
// libvirtd broke (libvirtd restarted mid-call: "End of file while reading
// data", "client socket is closed"), not because of what it asked.
func connectionLost(lerr libvirt.Error) bool {
	switch lerr.Code {
	case libvirt.ERR_NO_CONNECT, libvirt.ERR_INVALID_CONN, libvirt.ERR_RPC:
		return true
	}
	return lerr.Domain == libvirt.FROM_RPC ||
		strings.Contains(lerr.Message, "End of file while reading data") || strings.Contains(lerr.Message, "client socket is closed")
}

// noSpace is strerror(ENOSPC) as libvirt and QEMU print it (glibc's text;
// Go's syscall.ENOSPC.Error() is lower-case).
const noSpace = "No space left on device"

func isBureauDomain(name string) bool { return strings.HasPrefix(name, "bureau-") }
