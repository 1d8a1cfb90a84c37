package server

import (
	"fmt"
	"slices"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/jezek/xgb/xproto"
)

// Asking the window manager for an action, as EWMH and ICCCM have clients
// and pagers do: client messages to the root window. Source indication 2
// (a pager) says a user asked, so the window manager does not second-guess
// it as it may an application's own request.

const (
	sourcePager = 2
	// _NET_WM_STATE actions.
	stateRemove, stateAdd = 0, 1
	iconicState           = 3 // ICCCM WM_CHANGE_STATE
	gravityNorthWest      = 1
)

// message sends a 32-bit client message about w to the root, where the
// window manager listens.
func (c *xconn) message(w xproto.Window, kind string, data ...uint32) error {
	var d [5]uint32
	copy(d[:], data)
	ev := xproto.ClientMessageEvent{Format: 32, Window: w, Type: c.atoms[kind],
		Data: xproto.ClientMessageDataUnionData32New(d[:])}
	mask := uint32(xproto.EventMaskSubstructureNotify | xproto.EventMaskSubstructureRedirect)
	if err := xproto.SendEventChecked(c.x, false, c.root, mask, string(ev.Bytes())).Check(); err != nil {
		return fmt.Errorf("%s to %s: %w", kind, wire.FormatWindowID(uint32(w)), err)
	}
	return nil
}

// ask sends the request for act on w (the window id is w's).
func (c *xconn) ask(id xproto.Window, w wire.Window, act wire.WindowAct) error {
	maxV, maxH := uint32(c.atoms["_NET_WM_STATE_MAXIMIZED_VERT"]), uint32(c.atoms["_NET_WM_STATE_MAXIMIZED_HORZ"])
	switch act.Action {
	case wire.WindowFocus:
		return c.message(id, "_NET_ACTIVE_WINDOW", sourcePager, xproto.TimeCurrentTime)
	case wire.WindowMinimize:
		return c.message(id, "WM_CHANGE_STATE", iconicState)
	case wire.WindowMaximize:
		return c.message(id, "_NET_WM_STATE", stateAdd, maxV, maxH, sourcePager)
	case wire.WindowUnmaximize:
		return c.message(id, "_NET_WM_STATE", stateRemove, maxV, maxH, sourcePager)
	case wire.WindowClose:
		return c.message(id, "_NET_CLOSE_WINDOW", xproto.TimeCurrentTime, sourcePager)
	case wire.WindowMove, wire.WindowResize:
		return c.moveResize(id, w, act)
	}
	return &invalidAct{"unknown window action " + act.Action}
}

// moveResize asks for the client area at act's X, Y and of its Width,
// Height. With NorthWest gravity a window manager places the frame's
// corner at the position asked for, so the request names the corner:
// the client's position less the frame. Without a window manager that
// speaks EWMH the window is configured directly.
func (c *xconn) moveResize(id xproto.Window, w wire.Window, act wire.WindowAct) error {
	var flags, mask uint32
	var vals []uint32
	if act.X != nil {
		flags |= 1<<8 | 1<<9
		mask |= xproto.ConfigWindowX | xproto.ConfigWindowY
		vals = append(vals, uint32(int32(*act.X-w.Frame.Left)), uint32(int32(*act.Y-w.Frame.Top)))
	}
	if act.Width != 0 {
		flags |= 1<<10 | 1<<11
		mask |= xproto.ConfigWindowWidth | xproto.ConfigWindowHeight
		vals = append(vals, uint32(act.Width), uint32(act.Height))
	}
	supported, err := c.prop(c.root, c.atoms["_NET_SUPPORTED"]).Reply()
	if err != nil {
		return err
	}
	if slices.Contains(cards(supported), uint32(c.atoms["_NET_MOVERESIZE_WINDOW"])) {
		var xywh [4]uint32
		i := 0
		if act.X != nil {
			xywh[0], xywh[1] = vals[0], vals[1]
			i = 2
		}
		if act.Width != 0 {
			xywh[2], xywh[3] = vals[i], vals[i+1]
		}
		return c.message(id, "_NET_MOVERESIZE_WINDOW", gravityNorthWest|flags|sourcePager<<12, xywh[0], xywh[1], xywh[2], xywh[3])
	}
	if err := xproto.ConfigureWindowChecked(c.x, id, uint16(mask), vals).Check(); err != nil {
		return fmt.Errorf("configure %s: %w", wire.FormatWindowID(uint32(id)), err)
	}
	return nil
}
