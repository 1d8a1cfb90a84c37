package guestchan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// Channel is bureau-agent's channel in each domain, on the host it runs
// on.
type Channel struct {
	link *link.Conn
	// AgentViaStream reaches bureau-agent through libvirt's channel stream
	// even on a local host (as on a remote one).
	AgentViaStream bool
}

// NewChannel is the bureau-agent channel of the domains c routes to.
func NewChannel(c *link.Conn) *Channel { return &Channel{link: c} }

// DialAgent opens a byte stream to the desktop's bureau-agent channel.
// This is the one place that knows where a host is: on a local libvirtd
// bureau connects to the channel's unix socket; on a remote one (or when
// AgentViaStream is set) it goes through libvirt's channel stream
// (virDomainOpenChannel), carried by the libvirt connection itself.
func (ch *Channel) DialAgent(ctx context.Context, name string) (net.Conn, error) {
	h, err := ch.link.On(ctx, name)
	if err != nil {
		return nil, err
	}
	// AgentViaStream is a setting of bureau's own connection, which
	// remote hosts' connections never had.
	if (h == ch.link && ch.AgentViaStream) || !h.Local() {
		return openChannel(ctx, h, name)
	}
	path, err := link.WithDomain(ctx, h, name, func(d *libvirt.Domain) (string, error) {
		x, err := d.GetXMLDesc(0)
		if err != nil {
			return "", err
		}
		return channelPath(x, wire.Channel)
	})
	if err != nil {
		return nil, err
	}
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", path)
	if errors.Is(err, syscall.EAGAIN) {
		// QEMU serves one client at a time; the others wait in the
		// socket's queue until it is full.
		return nil, fmt.Errorf("the agent channel of %s is held by another client and its queue is full: %w", name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("the agent channel of %s: %w", name, err)
	}
	return c, nil
}

// errNoChannel: the domain was defined before it had the channel.
var errNoChannel = errors.New("the desktop has no bureau-agent channel (defined by an older bureau: a stop and start adds it)")

// channelPath finds a channel's unix socket in a running domain's XML.
func channelPath(domainXML, channel string) (string, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(domainXML); err != nil {
		return "", err
	}
	if dom.Devices != nil {
		for _, c := range dom.Devices.Channels {
			if c.Target != nil && c.Target.VirtIO != nil && c.Target.VirtIO.Name == channel &&
				c.Source != nil && c.Source.UNIX != nil && c.Source.UNIX.Path != "" {
				return c.Source.UNIX.Path, nil
			}
		}
	}
	return "", errNoChannel
}

// openChannel opens the channel through a libvirt stream.
func openChannel(ctx context.Context, h *link.Conn, name string) (net.Conn, error) {
	h, err := h.On(ctx, name)
	if err != nil {
		return nil, err
	}
	conn, err := h.Connect(ctx)
	if err != nil {
		return nil, err
	}
	st, err := link.WithDomain(ctx, h, name, func(d *libvirt.Domain) (*libvirt.Stream, error) {
		st, err := conn.NewStream(0)
		if err != nil {
			return nil, err
		}
		if err := d.OpenChannel(wire.Channel, st, libvirt.DOMAIN_CHANNEL_FORCE); err != nil {
			st.Free()
			return nil, err
		}
		return st, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the agent channel of %s: %w", name, err)
	}
	return &streamConn{st: st}, nil
}

// streamConn is a libvirt stream as a net.Conn (deadlines are not
// supported: callers cancel by closing).
type streamConn struct {
	st   *libvirt.Stream
	wmu  sync.Mutex
	once sync.Once
}

func (s *streamConn) Read(p []byte) (int, error) {
	n, err := s.st.Recv(p)
	if err != nil {
		return 0, fmt.Errorf("agent channel stream: %w", err)
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (s *streamConn) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	total := 0
	for total < len(p) {
		n, err := s.st.Send(p[total:])
		if err != nil {
			return total, fmt.Errorf("agent channel stream: %w", err)
		}
		total += n
	}
	return total, nil
}

func (s *streamConn) Close() error {
	s.once.Do(func() {
		s.st.Abort()
		s.st.Free()
	})
	return nil
}

type streamAddr struct{}

func (streamAddr) Network() string { return "libvirt-stream" }
func (streamAddr) String() string  { return wire.Channel }

func (s *streamConn) LocalAddr() net.Addr              { return streamAddr{} }
func (s *streamConn) RemoteAddr() net.Addr             { return streamAddr{} }
func (s *streamConn) SetDeadline(time.Time) error      { return nil }
func (s *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (s *streamConn) SetWriteDeadline(time.Time) error { return nil }
