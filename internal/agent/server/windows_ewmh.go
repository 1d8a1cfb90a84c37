package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// Reading windows the way EWMH (freedesktop's window manager hints) has
// the window manager publish them: the managed windows on the root
// (_NET_CLIENT_LIST), each one's name, class, pid, state, workspace and
// frame as properties of its client window.

// maxProp bounds a property read, in 32-bit units (a title of 16 KiB).
const maxProp = 4096

func (c *xconn) prop(w xproto.Window, atom xproto.Atom) xproto.GetPropertyCookie {
	return xproto.GetProperty(c.x, false, w, atom, xproto.GetPropertyTypeAny, 0, maxProp)
}

// cards are a 32-bit property's values (none when it is unset or of
// another format).
func cards(r *xproto.GetPropertyReply) []uint32 {
	if r == nil || r.Format != 32 {
		return nil
	}
	out := make([]uint32, 0, r.ValueLen)
	for i := 0; i+4 <= len(r.Value) && len(out) < int(r.ValueLen); i += 4 {
		out = append(out, xgb.Get32(r.Value[i:]))
	}
	return out
}

// text is an 8-bit property as UTF-8: STRING is Latin-1, the rest
// (UTF8_STRING, COMPOUND_TEXT's ASCII) is taken as it is.
func text(r *xproto.GetPropertyReply) string {
	if r == nil || r.Format != 8 {
		return ""
	}
	b := r.Value[:min(int(r.ValueLen), len(r.Value))]
	if r.Type == xproto.AtomString && !utf8.Valid(b) {
		rs := make([]rune, len(b))
		for i, ch := range b {
			rs[i] = rune(ch)
		}
		return string(rs)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// gone says whether an X error means the window no longer exists.
func gone(err error) bool {
	switch err.(type) {
	case xproto.WindowError, xproto.DrawableError:
		return true
	}
	return false
}

// root reads the root's hints: the managed windows, the active one, the
// current workspace.
func (c *xconn) rootHints() (clients []uint32, active uint32, current int, err error) {
	cl := c.prop(c.root, c.atoms["_NET_CLIENT_LIST"])
	ac := c.prop(c.root, c.atoms["_NET_ACTIVE_WINDOW"])
	cd := c.prop(c.root, c.atoms["_NET_CURRENT_DESKTOP"])
	var r [3]*xproto.GetPropertyReply
	for i, ck := range []xproto.GetPropertyCookie{cl, ac, cd} {
		if r[i], err = ck.Reply(); err != nil {
			return nil, 0, 0, err
		}
	}
	clients = cards(r[0])
	if a := cards(r[1]); len(a) > 0 {
		active = a[0]
	}
	if d := cards(r[2]); len(d) > 0 {
		current = int(d[0])
	}
	return clients, active, current, nil
}

// list reads every managed window but docks and the desktop.
func (c *xconn) list() ([]wire.Window, wire.Screen, error) {
	geo, err := xproto.GetGeometry(c.x, xproto.Drawable(c.root)).Reply()
	if err != nil {
		return nil, wire.Screen{}, err
	}
	clients, active, current, err := c.rootHints()
	if err != nil {
		return nil, wire.Screen{}, err
	}
	scr := wire.Screen{Width: int(geo.Width), Height: int(geo.Height), Workspace: current}
	out := []wire.Window{}
	for _, id := range clients {
		w, skip, err := c.describe(xproto.Window(id), active)
		if gone(err) || skip {
			continue // closed since the list was read
		}
		if err != nil {
			return nil, scr, err
		}
		out = append(out, w)
	}
	return out, scr, nil
}

// window reads one managed window.
func (c *xconn) window(id xproto.Window) (wire.Window, error) {
	clients, active, _, err := c.rootHints()
	if err != nil {
		return wire.Window{}, err
	}
	notOpen := fmt.Errorf("window %s: %w", wire.FormatWindowID(uint32(id)), os.ErrNotExist)
	if !slices.Contains(clients, uint32(id)) {
		return wire.Window{}, notOpen
	}
	w, skip, err := c.describe(id, active)
	if gone(err) || skip {
		return wire.Window{}, notOpen
	}
	return w, err
}

// describe reads a window's hints and geometry (one round trip); skip
// says it is a dock or the desktop.
func (c *xconn) describe(id xproto.Window, active uint32) (w wire.Window, skip bool, err error) {
	a := c.atoms
	geo := xproto.GetGeometry(c.x, xproto.Drawable(id))
	at := xproto.TranslateCoordinates(c.x, id, c.root, 0, 0)
	names := []xproto.Atom{a["_NET_WM_WINDOW_TYPE"], a["_NET_WM_NAME"], xproto.AtomWmName, xproto.AtomWmClass,
		a["_NET_WM_PID"], a["_NET_WM_STATE"], a["_NET_WM_DESKTOP"], a["_NET_FRAME_EXTENTS"]}
	cookies := make([]xproto.GetPropertyCookie, len(names))
	for i, n := range names {
		cookies[i] = c.prop(id, n)
	}
	g, gerr := geo.Reply()
	t, terr := at.Reply()
	r := make([]*xproto.GetPropertyReply, len(names))
	for i, ck := range cookies {
		r[i], err = ck.Reply()
		if err != nil {
			return w, false, err
		}
	}
	if gerr == nil && g == nil || terr == nil && t == nil {
		return w, false, io.EOF // the connection ended
	}
	if err := errors.Join(gerr, terr); err != nil {
		if gone(gerr) || gone(terr) {
			return w, false, xproto.WindowError{}
		}
		return w, false, err
	}
	for _, ty := range cards(r[0]) {
		if xproto.Atom(ty) == a["_NET_WM_WINDOW_TYPE_DOCK"] || xproto.Atom(ty) == a["_NET_WM_WINDOW_TYPE_DESKTOP"] {
			return w, true, nil
		}
	}
	w = wire.Window{ID: wire.FormatWindowID(uint32(id)), Title: text(r[1]),
		X: int(t.DstX), Y: int(t.DstY), Width: int(g.Width), Height: int(g.Height), Focused: uint32(id) == active}
	if w.Title == "" {
		w.Title = text(r[2])
	}
	class := strings.Split(strings.TrimRight(text(r[3]), "\x00"), "\x00")
	w.Instance = class[0]
	if len(class) > 1 {
		w.Class = class[1]
	}
	if p := cards(r[4]); len(p) > 0 {
		w.PID = int(p[0])
	}
	vert, horz := false, false
	for _, s := range cards(r[5]) {
		switch xproto.Atom(s) {
		case a["_NET_WM_STATE_HIDDEN"]:
			w.Minimized = true
		case a["_NET_WM_STATE_MAXIMIZED_VERT"]:
			vert = true
		case a["_NET_WM_STATE_MAXIMIZED_HORZ"]:
			horz = true
		}
	}
	w.Maximized = vert && horz
	if d := cards(r[6]); len(d) > 0 {
		w.Workspace = int(int32(d[0])) // 0xFFFFFFFF: every workspace, -1
	}
	if f := cards(r[7]); len(f) == 4 {
		w.Frame = wire.Extents{Left: int(f[0]), Right: int(f[1]), Top: int(f[2]), Bottom: int(f[3])}
	}
	return w, false, nil
}
