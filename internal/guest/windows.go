package guest

import (
	"context"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// WindowAgent is the part of bureau-agent that reaches the X session's
// windows (through its window manager).
type WindowAgent interface {
	Windows(ctx context.Context, domain string) ([]client.Window, client.Screen, error)
	WindowAction(ctx context.Context, domain, id string, act client.WindowAct) (*client.Window, error)
}

// Window is a window of the desktop's X session. Geometry is in screen
// pixels: X, Y, Width and Height are its client area (what the app
// draws), Frame the window manager's frame around it (title bar on top).
type Window struct {
	// ID is the X window id, "0x1e00004" (xdotool's decimal works too).
	ID    string `json:"id"`
	Title string `json:"title"`
	// App is WM_CLASS's class ("Mousepad"), Instance its instance
	// ("mousepad").
	App      string `json:"app"`
	Instance string `json:"instance"`
	// PID is the process that owns it (0: the app does not say).
	PID       int   `json:"pid"`
	X         int   `json:"x"`
	Y         int   `json:"y"`
	Width     int   `json:"width"`
	Height    int   `json:"height"`
	Focused   bool  `json:"focused"`
	Minimized bool  `json:"minimized"`
	Maximized bool  `json:"maximized"`
	Workspace int   `json:"workspace"` // from 0; -1: on every workspace
	Frame     Frame `json:"frame"`
}

// Frame is the width of a window's frame on each side; Screen the X
// screen's size and the workspace it shows (as bureau-agent says them).
type (
	Frame  = wire.Extents
	Screen = wire.Screen
)

// WindowList is the session's windows, oldest first (the panel and the
// desktop left out), and its screen.
type WindowList struct {
	Windows []*Window `json:"windows"`
	Screen  Screen    `json:"screen"`
}

// WindowAction is what to do with a window: focus, move (X, Y), resize
// (Width, Height; a move may resize and a resize move), minimize,
// maximize, unmaximize or close.
type WindowAction struct {
	Action string `json:"action"`
	X      *int   `json:"x,omitempty"`
	Y      *int   `json:"y,omitempty"`
	Width  *int   `json:"width,omitempty"`
	Height *int   `json:"height,omitempty"`
}

func window(w client.Window) *Window {
	return &Window{ID: w.ID, Title: w.Title, App: w.Class, Instance: w.Instance, PID: w.PID,
		X: w.X, Y: w.Y, Width: w.Width, Height: w.Height, Focused: w.Focused, Minimized: w.Minimized,
		Maximized: w.Maximized, Workspace: w.Workspace,
		Frame: w.Frame}
}

// windowAgent is bureau-agent's window calls, which nothing else does.
func (s *Session) windowAgent(what string) (WindowAgent, error) {
	if wa, ok := s.x.ch.(WindowAgent); ok {
		return wa, nil
	}
	return nil, needAgent(what, client.ErrNoAgent)
}

// Windows lists the session's windows.
func (s *Session) Windows(ctx context.Context, domain string) (*WindowList, error) {
	wa, err := s.windowAgent("listing windows")
	if err != nil {
		return nil, err
	}
	list, scr, err := wa.Windows(ctx, domain)
	if err != nil {
		return nil, needAgent("listing windows", err)
	}
	out := &WindowList{Windows: make([]*Window, 0, len(list)), Screen: Screen(scr)}
	for _, w := range list {
		out.Windows = append(out.Windows, window(w))
	}
	return out, nil
}

// WindowAction does a to window id and returns it once the window
// manager shows it done (or after about a second, as it is then): nil
// when a close took.
func (s *Session) WindowAction(ctx context.Context, domain, id string, a WindowAction) (*Window, error) {
	act := wire.WindowAct{Action: a.Action, X: a.X, Y: a.Y}
	for name, p := range map[string]*int{"width": a.Width, "height": a.Height} {
		if p != nil && *p < 1 {
			return nil, invalid(name, fmt.Sprintf("must be 1..%d", wire.MaxWindowSize))
		}
	}
	if a.Width != nil {
		act.Width = *a.Width
	}
	if a.Height != nil {
		act.Height = *a.Height
	}
	if field, msg := act.Problem(); msg != "" {
		return nil, invalid(field, msg)
	}
	n, ok := wire.ParseWindowID(id)
	if !ok {
		return nil, notOpen(id)
	}
	wa, err := s.windowAgent("acting on a window")
	if err != nil {
		return nil, err
	}
	w, err := wa.WindowAction(ctx, domain, wire.FormatWindowID(n), act)
	if errors.Is(err, desktop.ErrNotFound) {
		return nil, notOpen(id)
	}
	if err != nil {
		return nil, needAgent("acting on a window", err)
	}
	if w == nil {
		return nil, nil
	}
	return window(*w), nil
}

func notOpen(id string) error {
	return fmt.Errorf("window %s is not open (its app closed it?): %w", id, desktop.ErrNotFound)
}
