package manager

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/bureau/bureau/internal/desktop"
)

// DialVNC connects to a running desktop's display: QEMU's VNC server on a
// unix socket in the desktop's directory, never on a network port.
func (m *Manager) DialVNC(ctx context.Context, id string) (net.Conn, error) {
	d, err := m.ops.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.State != desktop.StateRunning {
		return nil, &desktop.TransitionError{Op: "open the display of", State: d.State}
	}
	return m.hosts.dialDisplay(ctx, d)
}

// DialDisplay connects bureau itself (its live framebuffer) to the display
// of the desktop whose VM is domain, in any state its QEMU runs in.
func (m *Manager) DialDisplay(ctx context.Context, domain string) (net.Conn, error) {
	id, ok := desktop.IDOfDomain(domain)
	if !ok {
		return nil, fmt.Errorf("%s is not a desktop's VM", domain)
	}
	d, err := m.ops.live(ctx, id)
	if err != nil {
		return nil, err
	}
	return m.hosts.dialDisplay(ctx, d)
}

// dialDisplay connects to d's VNC socket and checks that d's own QEMU
// answers: the socket lies in a folder d's QEMU user may write to, so a
// QEMU taken over could put another desktop's socket there.
// On a remote host the socket is dialed through SSH and the host checks
// who serves it.
func (h *desktopHosts) dialDisplay(ctx context.Context, d *desktop.Desktop) (net.Conn, error) {
	if d.Remote() {
		s, err := h.site(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("the display of desktop %s: %w", d.ID, err)
		}
		conn, err := s.Display(ctx, vncSocket(d), d.VMUID)
		if err != nil {
			return nil, fmt.Errorf("the display of desktop %s on host %s: %w", d.ID, d.Host, err)
		}
		return conn, nil
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", vncSocket(d))
	if err != nil {
		return nil, fmt.Errorf("dial the display of desktop %s: %w", d.ID, err)
	}
	if err := peerIs(conn, d.VMUID); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the display of desktop %s: %w", d.ID, err)
	}
	return conn, nil
}

func vncSocket(d *desktop.Desktop) string { return filepath.Join(d.Dir, "vnc.sock") }

// ScreenDir is the folder of the desktop whose VM is domain: its QEMU may
// write there (screenshots). "" for a VM that is not a desktop's.
func (m *Manager) ScreenDir(domain string) string {
	id, ok := desktop.IDOfDomain(domain)
	if !ok {
		return ""
	}
	return desktopFolder(m.cfg.DataDir, id)
}

// desktopFolder is the folder of desktop (or spare) id under dataDir.
func desktopFolder(dataDir, id string) string { return filepath.Join(dataDir, "desktops", id) }
