package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// WindowSystem is the desktop's windows as the window ops use them: the
// X session through its window manager (x11Windows, windows_x11.go), a
// fake in tests. A window that is not (any longer) managed is an error
// wrapping os.ErrNotExist; an X session that cannot be reached one
// wrapping ErrNoSession.
type WindowSystem interface {
	// List gives the managed windows, oldest first (docks and the
	// desktop left out), and the screen.
	List(ctx context.Context) ([]wire.Window, wire.Screen, error)
	// Window gives one managed window.
	Window(ctx context.Context, id uint32) (wire.Window, error)
	// Ask asks the window manager to do act to w (as it is now) and
	// returns without waiting for it.
	Ask(ctx context.Context, w wire.Window, act wire.WindowAct) error
}

// ErrNoSession: the X session cannot be reached (not started yet, or
// gone).
var ErrNoSession = errors.New("the X session is not reachable")

// How long a window op may take, and how long it waits for the window
// manager to show an action.
const (
	windowCallLimit = 10 * time.Second
	windowSettle    = time.Second
	windowPoll      = 40 * time.Millisecond
	// windowStill: a move or resize the window manager bent (size
	// increments, screen edges) is over once the geometry holds this long.
	windowStill = 150 * time.Millisecond
	// closeSettles: a close is given this many settle times: the application itself
	// must go (flush, tear down), which on a loaded guest takes seconds,
	// where the window manager's own actions take milliseconds.
	closeSettles = 5
)

// windows answers the window ops.
func (s *Server) windows(ctx context.Context, st net.Conn, req wire.Request) {
	ctx, cancel := context.WithTimeout(ctx, windowCallLimit)
	defer cancel()
	var resp wire.Response
	var err error
	switch req.Op {
	case wire.OpWindows:
		var scr wire.Screen
		resp.Windows, scr, err = s.Windows.List(ctx)
		resp.Screen = &scr
	case wire.OpWindow:
		ops := windowOps{ws: s.Windows, settle: windowSettle, poll: windowPoll, still: windowStill}
		resp.Window, err = ops.act(ctx, req.ID, req.Window)
	}
	if err != nil {
		refuseWindow(st, err)
		return
	}
	wire.WriteHeader(st, resp)
}

// invalidAct is a window action that cannot be asked for.
type invalidAct struct{ msg string }

func (e *invalidAct) Error() string { return e.msg }

func refuseWindow(st net.Conn, err error) {
	var inv *invalidAct
	switch {
	case errors.As(err, &inv):
		refuse(st, wire.CodeInvalid, err.Error())
	case errors.Is(err, os.ErrNotExist):
		refuse(st, wire.CodeNotFound, err.Error())
	case errors.Is(err, ErrNoSession):
		refuse(st, wire.CodeUnavailable, err.Error())
	default:
		refuse(st, wire.CodeFailed, err.Error())
	}
}

// windowOps carries out window actions and waits until they show.
type windowOps struct {
	ws                  WindowSystem
	settle, poll, still time.Duration
}

// act does act to the window idText names and returns the window once
// the window manager shows it (or when settle is up), nil once closed.
func (o windowOps) act(ctx context.Context, idText string, act *wire.WindowAct) (*wire.Window, error) {
	if act == nil {
		return nil, &invalidAct{"no window action"}
	}
	if _, msg := act.Problem(); msg != "" {
		return nil, &invalidAct{msg}
	}
	id, ok := wire.ParseWindowID(idText)
	if !ok {
		return nil, fmt.Errorf("window %q: %w", idText, os.ErrNotExist)
	}
	w, err := o.ws.Window(ctx, id)
	if err != nil {
		return nil, err
	}
	geometry := act.Action == wire.WindowMove || act.Action == wire.WindowResize
	if geometry && w.Maximized {
		// A maximized window keeps its place: unmaximize it first.
		after, err := o.do(ctx, id, w, wire.WindowAct{Action: wire.WindowUnmaximize})
		if err != nil {
			return nil, err
		}
		w = *after
	}
	after, err := o.do(ctx, id, w, *act)
	if err != nil || after == nil || !geometry || act.X == nil {
		return after, err
	}
	// Window managers read a requested position differently (the frame's
	// corner or the client's, per gravity); once the window moved, one
	// request corrected by how far it landed from the target fixes that.
	dx, dy := after.X-*act.X, after.Y-*act.Y
	if (dx == 0 && dy == 0) || (after.X == w.X && after.Y == w.Y) {
		return after, nil
	}
	fix := *act
	x, y := *act.X-dx, *act.Y-dy
	fix.X, fix.Y = &x, &y
	if _, msg := fix.Problem(); msg != "" {
		return after, nil
	}
	fixed, err := o.do(ctx, id, *after, fix)
	if err != nil || fixed == nil {
		return after, err
	}
	if abs(fixed.X-*act.X)+abs(fixed.Y-*act.Y) <= abs(dx)+abs(dy) {
		return fixed, nil
	}
	// The correction made it worse (a window manager that clamps): ask
	// for the target again, which put it where it was.
	if again, err := o.do(ctx, id, *fixed, *act); err == nil && again != nil {
		return again, nil
	}
	return fixed, nil
}

// do asks for act and polls the window until it shows it, its geometry
// holds after a move or resize, or settle is up.
func (o windowOps) do(ctx context.Context, id uint32, w wire.Window, act wire.WindowAct) (*wire.Window, error) {
	if err := o.ws.Ask(ctx, w, act); err != nil {
		return nil, err
	}
	settle := o.settle
	if act.Action == wire.WindowClose {
		settle *= closeSettles
	}
	deadline := time.Now().Add(settle)
	last, lastChange := w, time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.poll):
		}
		now, err := o.ws.Window(ctx, id)
		if act.Action == wire.WindowClose && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if shows(act, now) {
			return &now, nil
		}
		if !sameGeometry(now, last) {
			last, lastChange = now, time.Now()
		} else if !sameGeometry(now, w) && time.Since(lastChange) >= o.still &&
			(act.Action == wire.WindowMove || act.Action == wire.WindowResize) {
			return &now, nil
		}
		if time.Now().After(deadline) {
			return &now, nil
		}
	}
}

// shows says whether w shows act done.
func shows(act wire.WindowAct, w wire.Window) bool {
	switch act.Action {
	case wire.WindowFocus:
		return w.Focused && !w.Minimized
	case wire.WindowMinimize:
		return w.Minimized
	case wire.WindowMaximize:
		return w.Maximized
	case wire.WindowUnmaximize:
		return !w.Maximized
	case wire.WindowMove, wire.WindowResize:
		return (act.X == nil || w.X == *act.X && w.Y == *act.Y) &&
			(act.Width == 0 || w.Width == act.Width && w.Height == act.Height)
	}
	return false
}

func sameGeometry(a, b wire.Window) bool {
	return a.X == b.X && a.Y == b.Y && a.Width == b.Width && a.Height == b.Height
}

func abs(n int) int { return max(n, -n) }
