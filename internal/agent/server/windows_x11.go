package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// x11Windows is the WindowSystem of an X display, reached through its
// window manager's EWMH hints (windows_ewmh.go). It keeps one connection,
// made when first needed and made again once the server dropped it.
type x11Windows struct {
	display string // ":0"
	log     *slog.Logger
	// authFiles lists the Xauthority files to take cookies from.
	authFiles func(display string) []string

	mu   sync.Mutex
	conn *xconn
}

func newX11Windows(display string, log *slog.Logger) *x11Windows {
	return &x11Windows{display: display, log: log, authFiles: xauthFiles}
}

// xconn is one connection to the X server.
type xconn struct {
	x     *xgb.Conn
	raw   net.Conn
	root  xproto.Window
	atoms map[string]xproto.Atom
	dead  atomic.Bool
}

// atomNames are the atoms the EWMH code uses (WM_NAME and WM_CLASS are
// xproto's predefined atoms).
var atomNames = []string{
	"_NET_SUPPORTED", "_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW", "_NET_CURRENT_DESKTOP",
	"_NET_WM_NAME", "UTF8_STRING", "_NET_WM_PID", "_NET_WM_DESKTOP", "_NET_FRAME_EXTENTS",
	"_NET_WM_STATE", "_NET_WM_STATE_HIDDEN", "_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ",
	"_NET_WM_WINDOW_TYPE", "_NET_WM_WINDOW_TYPE_DOCK", "_NET_WM_WINDOW_TYPE_DESKTOP",
	"_NET_CLOSE_WINDOW", "_NET_MOVERESIZE_WINDOW", "WM_CHANGE_STATE",
}

var quietXGB sync.Once

// session returns the connection, made now if there is none (or it died).
func (x *x11Windows) session(ctx context.Context) (*xconn, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.conn != nil && !x.conn.dead.Load() {
		return x.conn, nil
	}
	if x.conn != nil {
		x.conn.raw.Close()
		x.conn = nil
	}
	// xgb logs what it cannot read (our cookie is not where it looks).
	quietXGB.Do(func() { xgb.Logger = slog.NewLogLogger(x.log.Handler(), slog.LevelDebug) })
	c, err := x.dial(ctx)
	if err != nil {
		return nil, err
	}
	x.conn = c
	return c, nil
}

// dial connects with each cookie the Xauthority files hold for the
// display, then with none.
func (x *x11Windows) dial(ctx context.Context) (*xconn, error) {
	number := strings.TrimPrefix(x.display, ":")
	number, _, _ = strings.Cut(number, ".")
	socket := "/tmp/.X11-unix/X" + number
	host, _ := os.Hostname()
	cookies := append(xCookies(x.authFiles(x.display), number, host), nil)
	var last error
	for _, cookie := range cookies {
		raw, err := (&net.Dialer{}).DialContext(ctx, "unix", socket)
		if err != nil {
			return nil, fmt.Errorf("%w: display %s: %v", ErrNoSession, x.display, err)
		}
		c, err := handshake(ctx, raw, cookie)
		if err == nil {
			x.log.Info("connected to the X session", "display", x.display)
			return c, nil
		}
		raw.Close()
		last = err
	}
	return nil, fmt.Errorf("%w: display %s: %v", ErrNoSession, x.display, last)
}

// handshake sets the connection up with cookie and learns the root window
// and the atoms.
func handshake(ctx context.Context, raw net.Conn, cookie []byte) (*xconn, error) {
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	raw.SetDeadline(deadline)
	conn, err := xgb.NewConnNet(&authConn{Conn: raw, setup: setupRequest(cookie)})
	if err != nil {
		return nil, err
	}
	c := &xconn{x: conn, raw: raw, root: xproto.Setup(conn).DefaultScreen(conn).Root, atoms: map[string]xproto.Atom{}}
	go c.drain()
	cookies := make([]xproto.InternAtomCookie, len(atomNames))
	for i, n := range atomNames {
		cookies[i] = xproto.InternAtom(conn, false, uint16(len(n)), n)
	}
	for i, ck := range cookies {
		r, err := ck.Reply()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("intern %s: %w", atomNames[i], err)
		}
		c.atoms[atomNames[i]] = r.Atom
	}
	raw.SetDeadline(time.Time{})
	return c, nil
}

// drain reads the events and errors xgb queues (none are asked for; an
// unread queue would stop its reader) until the connection ends.
func (c *xconn) drain() {
	for {
		ev, err := c.x.WaitForEvent()
		if ev == nil && err == nil {
			c.dead.Store(true)
			return
		}
	}
}

// run calls f with the connection; a server that does not answer before
// ctx ends loses its connection (the next call connects again).
func (x *x11Windows) run(ctx context.Context, f func(*xconn) error) error {
	c, err := x.session(ctx)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f(c) }()
	select {
	case err := <-done:
		if c.dead.Load() && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: the connection to display %s ended: %v", ErrNoSession, x.display, err)
		}
		return err
	case <-ctx.Done():
		c.dead.Store(true)
		c.raw.Close()
		return fmt.Errorf("the X session on %s did not answer: %w", x.display, ctx.Err())
	}
}

// List gives the managed windows and the screen.
func (x *x11Windows) List(ctx context.Context) (list []wire.Window, scr wire.Screen, err error) {
	err = x.run(ctx, func(c *xconn) error {
		list, scr, err = c.list()
		return err
	})
	return list, scr, err
}

// Window gives one managed window.
func (x *x11Windows) Window(ctx context.Context, id uint32) (w wire.Window, err error) {
	err = x.run(ctx, func(c *xconn) error {
		w, err = c.window(xproto.Window(id))
		return err
	})
	return w, err
}

// Ask sends the window manager the request for act.
func (x *x11Windows) Ask(ctx context.Context, w wire.Window, act wire.WindowAct) error {
	id, ok := wire.ParseWindowID(w.ID)
	if !ok {
		return fmt.Errorf("window %q: %w", w.ID, os.ErrNotExist)
	}
	return x.run(ctx, func(c *xconn) error { return c.ask(xproto.Window(id), w, act) })
}
