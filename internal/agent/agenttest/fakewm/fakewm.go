// Package fakewm is an in-memory window manager for tests: the
// WindowSystem bureau-agent's window ops use (server.WindowSystem),
// without X. It imports only the wire, so the agent's own tests can use
// it too.
package fakewm

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// WM holds windows and does what it is asked, Lag after it is asked (as a
// real window manager does it a moment later).
type WM struct {
	mu     sync.Mutex
	screen wire.Screen
	wins   []*wire.Window // oldest first
	saved  map[string]wire.Window
	next   uint32
	due    []pending
	asked  []string

	// Lag is how long an action takes to show (0: at the next look).
	Lag time.Duration
	// Offset is added to every position asked for (a window manager
	// that reads the position as its frame's corner).
	Offset [2]int
	// Deaf makes it ignore every request (nothing it is asked shows).
	Deaf bool
	// Down makes every call fail as an X session that is not up.
	Down error
}

type pending struct {
	at time.Time
	id string
	do func(w *wire.Window) (remove bool)
}

// New is a window manager of a 1280×800 screen with no windows.
func New() *WM {
	return &WM{screen: wire.Screen{Width: 1280, Height: 800}, saved: map[string]wire.Window{}, next: 0x1e00004}
}

// Open adds a window (its ID given unless w has one) and returns its id.
func (m *WM) Open(w wire.Window) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.ID == "" {
		w.ID = wire.FormatWindowID(m.next)
		m.next += 0x100000
	}
	m.wins = append(m.wins, &w)
	return w.ID
}

// Remove takes a window away at once (its app closed it).
func (m *WM) Remove(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remove(id)
}

func (m *WM) remove(id string) {
	m.wins = slices.DeleteFunc(m.wins, func(w *wire.Window) bool { return w.ID == id })
}

// Asked lists the requests made, "action id" each.
func (m *WM) Asked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.asked)
}

// List implements the window system.
func (m *WM) List(context.Context) ([]wire.Window, wire.Screen, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Down != nil {
		return nil, wire.Screen{}, m.Down
	}
	m.apply()
	out := make([]wire.Window, 0, len(m.wins))
	for _, w := range m.wins {
		out = append(out, *w)
	}
	return out, m.screen, nil
}

// Window implements the window system.
func (m *WM) Window(_ context.Context, id uint32) (wire.Window, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Down != nil {
		return wire.Window{}, m.Down
	}
	m.apply()
	if w := m.find(wire.FormatWindowID(id)); w != nil {
		return *w, nil
	}
	return wire.Window{}, fmt.Errorf("window %s: %w", wire.FormatWindowID(id), os.ErrNotExist)
}

func (m *WM) find(id string) *wire.Window {
	for _, w := range m.wins {
		if w.ID == id {
			return w
		}
	}
	return nil
}

// Ask implements the window system.
func (m *WM) Ask(_ context.Context, w wire.Window, act wire.WindowAct) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Down != nil {
		return m.Down
	}
	m.asked = append(m.asked, act.Action+" "+w.ID)
	if m.Deaf {
		return nil
	}
	m.due = append(m.due, pending{at: time.Now().Add(m.Lag), id: w.ID, do: m.action(act)})
	return nil
}

// apply does the actions whose time has come.
func (m *WM) apply() {
	now := time.Now()
	keep := m.due[:0]
	for _, p := range m.due {
		if p.at.After(now) {
			keep = append(keep, p)
			continue
		}
		if w := m.find(p.id); w != nil && p.do(w) {
			m.remove(p.id)
		}
	}
	m.due = keep
}

// action is what act does to a window.
func (m *WM) action(act wire.WindowAct) func(w *wire.Window) bool {
	return func(w *wire.Window) bool {
		switch act.Action {
		case wire.WindowFocus:
			for _, o := range m.wins {
				o.Focused = false
			}
			w.Focused, w.Minimized = true, false
		case wire.WindowMinimize:
			w.Minimized, w.Focused = true, false
		case wire.WindowMaximize:
			if !w.Maximized {
				m.saved[w.ID] = *w
			}
			w.Maximized = true
			w.X, w.Y = w.Frame.Left, w.Frame.Top
			w.Width = m.screen.Width - w.Frame.Left - w.Frame.Right
			w.Height = m.screen.Height - w.Frame.Top - w.Frame.Bottom
		case wire.WindowUnmaximize:
			if s, ok := m.saved[w.ID]; ok && w.Maximized {
				w.X, w.Y, w.Width, w.Height = s.X, s.Y, s.Width, s.Height
			}
			w.Maximized = false
		case wire.WindowMove, wire.WindowResize:
			if w.Maximized {
				return false // as xfwm4: a maximized window stays put
			}
			if act.X != nil {
				w.X, w.Y = *act.X+m.Offset[0], *act.Y+m.Offset[1]
			}
			if act.Width != 0 {
				w.Width, w.Height = act.Width, act.Height
			}
		case wire.WindowClose:
			return true
		}
		return false
	}
}
