package client

import (
	"context"

	"github.com/bureau/bureau/internal/agent/wire"
)

// Window, WindowAct and Screen are the X session's windows as
// bureau-agent gives them (see wire/windows.go).
type (
	Window    = wire.Window
	WindowAct = wire.WindowAct
	Screen    = wire.Screen
)

// Windows lists the X session's managed windows, oldest first (docks and
// the desktop left out), and its screen.
func (c *Client) Windows(ctx context.Context, domain string) ([]Window, Screen, error) {
	st, resp, err := c.open(ctx, domain, wire.Request{Op: wire.OpWindows})
	if err != nil {
		return nil, Screen{}, err
	}
	st.Close()
	if resp.Windows == nil {
		resp.Windows = []Window{}
	}
	var scr Screen
	if resp.Screen != nil {
		scr = *resp.Screen
	}
	return resp.Windows, scr, nil
}

// WindowAction does act to window id ("0x…") and returns the window once
// the window manager shows it done (or after about a second, as it is
// then); nil when a close took. A window that is not open is
// desktop.ErrNotFound.
func (c *Client) WindowAction(ctx context.Context, domain, id string, act WindowAct) (*Window, error) {
	st, resp, err := c.open(ctx, domain, wire.Request{Op: wire.OpWindow, ID: id, Window: &act})
	if err != nil {
		return nil, err
	}
	st.Close()
	return resp.Window, nil
}
