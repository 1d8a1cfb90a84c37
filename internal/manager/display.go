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
	d, err := m.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.State != desktop.StateRunning {
		return nil, &desktop.TransitionError{Op: "open the display of", State: d.State}
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", vncSocket(d))
	if err != nil {
		return nil, fmt.Errorf("dial the display of desktop %s: %w", id, err)
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
	return m.desktopDir(id)
}

// desktopDir is the folder of desktop (or spare) id.
func (m *Manager) desktopDir(id string) string { return filepath.Join(m.cfg.DataDir, "desktops", id) }
