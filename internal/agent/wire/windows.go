package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// The window ops (OpWindows, OpWindow) reach the windows of the X
// session on display :0 through its window manager (EWMH).
//
// windows: Response.Windows (the managed windows, oldest first, without
// docks and the desktop) and Response.Screen.
//
// window: Request.ID names the window ("0x1e00004"), Request.Window says
// what to do; the agent asks the window manager and waits (about a
// second at most) until it shows the change, then answers with the
// window as it is (Response.Window, nil once a close took). A window
// that is not (any longer) managed is CodeNotFound; an X session the
// agent cannot reach CodeUnavailable.

// Window actions (WindowAct.Action).
const (
	WindowFocus      = "focus"      // raise and focus (un-minimizes; may switch workspace)
	WindowMove       = "move"       // X and Y (Width and Height may come too)
	WindowResize     = "resize"     // Width and Height (X and Y may come too)
	WindowMinimize   = "minimize"   // iconify
	WindowMaximize   = "maximize"   // both ways
	WindowUnmaximize = "unmaximize" // both ways
	WindowClose      = "close"      // ask it to close, as its close button does
)

// Limits of X11 geometry (its fields are 16 bits).
const (
	MinWindowPos  = -32768
	MaxWindowPos  = 32767
	MaxWindowSize = 32767
)

// WindowAct is what to do with a window. Geometry is the client area (the
// window without its frame) in root (screen) pixels, as Window gives it:
// after a move to X, Y a listing shows the window at X, Y.
type WindowAct struct {
	Action string `json:"action"`
	X      *int   `json:"x,omitempty"`
	Y      *int   `json:"y,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// Problem says what is wrong with a (its field and why), or "" when it
// can be asked for.
func (a WindowAct) Problem() (field, msg string) {
	move := a.X != nil || a.Y != nil
	size := a.Width != 0 || a.Height != 0
	switch a.Action {
	case WindowMove:
		if a.X == nil || a.Y == nil {
			return "x", "move needs x and y"
		}
	case WindowResize:
		if a.Width == 0 || a.Height == 0 {
			return "width", "resize needs width and height"
		}
	case WindowFocus, WindowMinimize, WindowMaximize, WindowUnmaximize, WindowClose:
		if move || size {
			return "action", a.Action + " takes no x, y, width or height"
		}
		return "", ""
	default:
		return "action", fmt.Sprintf("%q is not one of focus, move, resize, minimize, maximize, unmaximize, close", a.Action)
	}
	if move && (a.X == nil || a.Y == nil) {
		return "x", "give both x and y"
	}
	for _, p := range []*int{a.X, a.Y} {
		if p != nil && (*p < MinWindowPos || *p > MaxWindowPos) {
			return "x", fmt.Sprintf("x and y must be %d..%d", MinWindowPos, MaxWindowPos)
		}
	}
	if size && (a.Width < 1 || a.Height < 1 || a.Width > MaxWindowSize || a.Height > MaxWindowSize) {
		return "width", fmt.Sprintf("width and height must be 1..%d (both)", MaxWindowSize)
	}
	return "", ""
}

// Window is one managed window of the X session.
type Window struct {
	// ID is the X window id of the client window, "0x…".
	ID    string `json:"id"`
	Title string `json:"title,omitempty"` // _NET_WM_NAME, else WM_NAME
	// Class and Instance are WM_CLASS: the app ("Mousepad") and its
	// instance ("mousepad").
	Class    string `json:"class,omitempty"`
	Instance string `json:"instance,omitempty"`
	PID      int    `json:"pid,omitempty"` // _NET_WM_PID; 0: not set
	// The client area in root pixels (its frame lies around it).
	X      int     `json:"x"`
	Y      int     `json:"y"`
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Frame  Extents `json:"frame"` // _NET_FRAME_EXTENTS
	// Focused: it is _NET_ACTIVE_WINDOW. Minimized: _NET_WM_STATE_HIDDEN.
	// Maximized: both _NET_WM_STATE_MAXIMIZED_VERT and _HORZ.
	Focused   bool `json:"focused,omitempty"`
	Minimized bool `json:"minimized,omitempty"`
	Maximized bool `json:"maximized,omitempty"`
	// Workspace is _NET_WM_DESKTOP, counted from 0; -1: all of them.
	Workspace int `json:"workspace"`
}

// Extents are the widths of a window's frame on each side.
type Extents struct {
	Left   int `json:"left"`
	Right  int `json:"right"`
	Top    int `json:"top"`
	Bottom int `json:"bottom"`
}

// Screen is the X screen (the root window's size) and the workspace shown
// (_NET_CURRENT_DESKTOP, from 0).
type Screen struct {
	Width     int `json:"width"`
	Height    int `json:"height"`
	Workspace int `json:"workspace"`
}

// FormatWindowID writes an X window id as the ops and bureau's API show
// it.
func FormatWindowID(id uint32) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// ParseWindowID reads an X window id: "0x1e00004" (as FormatWindowID
// writes it) or decimal (as xdotool prints it).
func ParseWindowID(s string) (uint32, bool) {
	base, digits := 10, s
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		base, digits = 16, h
	}
	if digits == "" || strings.ContainsAny(digits, "+-_") {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint32(n), true
}
