package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/gin-gonic/gin"
)

// Windows are the windows of a desktop's X session (through its window
// manager) and the apps started in it.
type Windows interface {
	Windows(ctx context.Context, domain string) (*guest.WindowList, error)
	WindowAction(ctx context.Context, domain, id string, a guest.WindowAction) (*guest.Window, error)
	LaunchApp(ctx context.Context, domain string, r guest.LaunchRequest) (*guest.LaunchResult, error)
}

// windowHandlers list and arrange a desktop's windows and launch apps.
type windowHandlers struct {
	*core
	windows Windows
}

func (s *windowHandlers) windowRoutes(v1 *gin.RouterGroup) {
	v1.GET("/desktops/:id/windows", s.handle(s.listWindows))
	v1.POST("/desktops/:id/windows/:wid", s.handle(s.windowAction))
	v1.POST("/desktops/:id/apps", s.handle(s.launchApp))
}

var errNoWindows = fmt.Errorf("this bureau does not reach desktops' windows: %w", desktop.ErrUnavailable)

// windowView is a window with, when the caller names its display, where
// it is in that display's coordinates.
type windowView struct {
	*guest.Window
	DisplayBounds *computer.Rect `json:"display_bounds,omitempty"`
}

// listWindows answers the desktop's windows and screen; ?display=WxH adds
// the display_bounds of each window shown (not minimized, on the
// workspace shown, on screen) in that coordinate space (the one
// computer-use calls take as "display").
func (s *windowHandlers) listWindows(c *gin.Context) (reply, error) {
	display, err := displayQuery(c)
	if err != nil {
		return reply{}, err
	}
	d, err := s.ready(c, "list the windows of")
	if err != nil {
		return reply{}, err
	}
	if s.windows == nil {
		return reply{}, errNoWindows
	}
	list, err := s.windows.Windows(c.Request.Context(), d.DomainName())
	if err != nil {
		return reply{}, err
	}
	screen := computer.Size{Width: list.Screen.Width, Height: list.Screen.Height}
	views := make([]windowView, 0, len(list.Windows))
	for _, w := range list.Windows {
		v := windowView{Window: w}
		shown := !w.Minimized && (w.Workspace == list.Screen.Workspace || w.Workspace == -1)
		if display != nil && shown {
			r, ok, err := computer.DisplayRect(computer.Rect{X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}, screen, display)
			if err != nil {
				return reply{}, err
			}
			if ok {
				v.DisplayBounds = &r
			}
		}
		views = append(views, v)
	}
	return reply{http.StatusOK, gin.H{"windows": views, "screen": list.Screen}}, nil
}

// displayQuery reads ?display=WxH (nil when not given).
func displayQuery(c *gin.Context) (*computer.Size, error) {
	v := c.Query("display")
	if v == "" {
		return nil, nil
	}
	w, h, ok := strings.Cut(strings.ToLower(v), "x")
	width, err1 := strconv.Atoi(w)
	height, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil || width < 1 || height < 1 || width > 8192 || height > 8192 {
		return nil, &desktop.ValidationError{Field: "display", Message: "WIDTHxHEIGHT of the display your coordinates are in, e.g. 1280x800 (each 1..8192)"}
	}
	return &computer.Size{Width: width, Height: height}, nil
}

// windowAction does {"action", "x", "y", "width", "height"} to a window
// and answers it as the window manager has it then; a close answers
// {"closed": true} (false, with the window, when it is still open: its
// app may be asking to save).
func (s *windowHandlers) windowAction(c *gin.Context) (reply, error) {
	var body guest.WindowAction
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	d, err := s.ready(c, "arrange the windows of")
	if err != nil {
		return reply{}, err
	}
	if s.windows == nil {
		return reply{}, errNoWindows
	}
	w, err := s.windows.WindowAction(c.Request.Context(), d.DomainName(), c.Param("wid"), body)
	if err != nil {
		return reply{}, err
	}
	if body.Action == "close" {
		if w == nil {
			return reply{http.StatusOK, gin.H{"closed": true}}, nil
		}
		return reply{http.StatusOK, gin.H{"closed": false, "window": w}}, nil
	}
	return reply{http.StatusOK, w}, nil
}

// launchApp starts an app ({"desktop_file"} or {"command"} or {"argv"})
// and waits (wait_s) for its window: {process, window, timed_out}.
func (s *windowHandlers) launchApp(c *gin.Context) (reply, error) {
	var body guest.LaunchRequest
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	d, err := s.ready(c, "launch an app in")
	if err != nil {
		return reply{}, err
	}
	if s.windows == nil {
		return reply{}, errNoWindows
	}
	res, err := s.windows.LaunchApp(c.Request.Context(), d.DomainName(), body)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, res}, nil
}
