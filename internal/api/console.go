package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
)

// Consoles issues console tokens and tracks live console sessions.
type Consoles interface {
	Create(ctx context.Context, req console.CreateRequest) (string, *desktop.ConsoleToken, error)
	Authenticate(ctx context.Context, desktopID, secret string) (*desktop.ConsoleToken, error)
	List(ctx context.Context, desktopID string) ([]*desktop.ConsoleToken, error)
	Revoke(ctx context.Context, desktopID, tokenID, by string) error
	Attach(ctx context.Context, t *desktop.ConsoleToken) (context.Context, func())
	// EndMadeBy ends the live sessions of console tokens made by these
	// (revoked) API tokens.
	EndMadeBy(tokenIDs []string)
	// Viewers are a desktop's live console sessions, oldest first.
	Viewers(desktopID string) []console.Viewer
}

// Screen is the console's side: the display, and use that keeps a desktop
// awake.
type Screen interface {
	// DialVNC connects to a running desktop's display (RFB).
	DialVNC(ctx context.Context, id string) (net.Conn, error)
	// Touch records use of a desktop; AddViewer counts a console viewer
	// until done is called. Both keep a desktop from idle hibernation.
	Touch(id string)
	AddViewer(id string) (done func())
	// Prewake restores a hibernated desktop paused ahead of a likely use
	// (why says what makes it likely), in the background; other states
	// are left alone.
	Prewake(ctx context.Context, id, actor, why string)
}

// consoleHandlers make and revoke console tokens and serve the console
// page's session and display (vnc) to a console token.
type consoleHandlers struct {
	*core
	consoles Consoles
	// countBytes is Deps.ConsoleBytes (may be nil).
	countBytes func(direction string, n int)
}

const ctxConsole = "bureau.console"

type createConsoleRequest struct {
	ViewOnly   bool `json:"view_only"`
	TTLSeconds int  `json:"ttl_seconds"`
	// Name is who the link is for ("Dana"): shown to the others watching
	// and in the history.
	Name string `json:"name"`
}

type consoleReply struct {
	*apiv1.ConsoleToken
	Token string `json:"token"`
	URL   string `json:"url"`
}

func (s *consoleHandlers) createConsole(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	var req createConsoleRequest
	if err := decodeOptional(c, &req); err != nil {
		return reply{}, err
	}
	if req.TTLSeconds < 0 {
		return reply{}, &desktop.ValidationError{Field: "ttl_seconds", Message: "must not be negative"}
	}
	if err := personName("name", req.Name); err != nil {
		return reply{}, err
	}
	if d.State == desktop.StateDeleting || d.State == desktop.StateError {
		return reply{}, &desktop.TransitionError{Op: "open the console of", State: d.State}
	}
	// Like a share link, the console token lives no longer than its
	// maker's. A computer-only token sees the screen and drives mouse and
	// keyboard through the API; the console it makes may only watch. A
	// team's viewer only watches too (docs/teams.md).
	by := maker(c)
	secret, t, err := s.consoles.Create(c.Request.Context(), console.CreateRequest{DesktopID: d.ID, Owner: d.Owner,
		CreatedBy: by.Actor, ViewOnly: req.ViewOnly || isViewer(c), TTL: time.Duration(req.TTLSeconds) * time.Second,
		MadeBy: by.Token, Until: by.Until, ScreenOnly: caller(c).ComputerOnly, Name: req.Name})
	if err != nil {
		return reply{}, err
	}
	// Someone means to look at it: a hibernated desktop is restored
	// (paused) while the link travels and the page loads.
	s.screen.Prewake(c.Request.Context(), d.ID, actor(c), "console link made")
	u := "/console/" + d.ID + "?token=" + url.QueryEscape(secret)
	if s.origin.public != nil {
		u = s.origin.base(c) + u
	}
	created(c, "console", t.ID)
	return reply{http.StatusCreated, consoleReply{ConsoleToken: apiv1.FromConsoleToken(t), Token: secret, URL: u}}, nil
}

func (s *consoleHandlers) listConsoles(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	ts, err := s.consoles.List(c.Request.Context(), d.ID)
	if ts == nil {
		ts = []*desktop.ConsoleToken{}
	}
	return reply{http.StatusOK, gin.H{"sessions": ts}}, err
}

func (s *consoleHandlers) revokeConsole(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusNoContent}, s.consoles.Revoke(c.Request.Context(), d.ID, c.Param("token_id"), actor(c))
}

// consoleAuth admits a request carrying a usable console token of the
// desktop in the path (?token=, as browsers cannot set WebSocket headers).
func (s *consoleHandlers) consoleAuth(c *gin.Context) {
	t, err := s.consoles.Authenticate(c.Request.Context(), c.Param("id"), c.Query("token"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Set(ctxConsole, t)
	c.Next()
}

func consoleToken(c *gin.Context) *desktop.ConsoleToken {
	return c.MustGet(ctxConsole).(*desktop.ConsoleToken)
}

// consoleSession tells the console page what it is looking at.
func (s *consoleHandlers) consoleSession(c *gin.Context) (reply, error) {
	t := consoleToken(c)
	d, err := s.lifecycle.Get(c.Request.Context(), t.DesktopID)
	if err != nil {
		return reply{}, err
	}
	// The page asks this before it loads the viewer and connects.
	s.screen.Prewake(c.Request.Context(), d.ID, "console/"+t.ID, "console page opened")
	return reply{http.StatusOK, gin.H{"desktop_id": d.ID, "name": d.Name, "state": d.State,
		"view_only": t.ViewOnly, "screen_only": t.ScreenOnly, "expires_at": t.ExpiresAt}}, nil
}

// vnc upgrades to a WebSocket and pipes it to the desktop's display. A
// hibernated or paused desktop is woken first (wake on use, as for every
// route that needs the guest). Nothing reaches the VNC server before the
// token and the desktop's state have been checked.
func (s *consoleHandlers) vnc(c *gin.Context) {
	t := consoleToken(c)
	if !upgrading(c) {
		return
	}
	ctx := c.Request.Context()
	d, err := s.lifecycle.Wake(ctx, t.DesktopID, "console/"+t.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	upstream, err := s.screen.DialVNC(ctx, d.ID)
	if err != nil {
		s.fail(c, fmt.Errorf("reach the desktop's display: %w", err))
		return
	}
	ws, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{Subprotocols: []string{"binary"},
		// RFB is already encoded (Tight, ZRLE…): deflate would only cost CPU.
		CompressionMode: websocket.CompressionDisabled})
	if err != nil { // Accept has answered the client
		upstream.Close()
		return
	}
	sctx, done := s.consoles.Attach(context.WithoutCancel(ctx), t)
	defer done()
	start := time.Now()
	defer s.screen.AddViewer(d.ID)()
	s.log.Info("console attached", "desktop", d.ID, "token", t.ID, "view_only", t.ViewOnly)
	opts := console.Options{ViewOnly: t.ViewOnly, Count: s.countBytes}
	if s.people != nil && !t.ViewOnly {
		// Only the sessions of the person holding the desktop's input send
		// it (internal/loop decides, and counts a person's input).
		p := consolePerson(t)
		opts.Input = func(in console.Input) bool {
			return s.people.ConsoleInput(d.ID, p, loop.InputEvent{Key: in.Key, KeyDown: in.KeyDown, Pointer: in.Pointer,
				Buttons: in.Buttons, Clipboard: in.Clipboard})
		}
	}
	err = console.Pipe(sctx, ws, upstream, opts)
	s.log.Info("console detached", "desktop", d.ID, "token", t.ID, "why", err)
	s.recordConsoleSession(c, t, start, err)
	done()
	if s.people != nil && !t.ViewOnly && !watching(s.consoles.Viewers(d.ID), t.ID) {
		// The person's last tab on this link closed: if they held the
		// input, it goes back to the agent unless they return soon.
		s.people.Left(d.ID, consolePerson(t))
	}
}

// watching says a console link has a session open among viewers.
func watching(viewers []console.Viewer, session string) bool {
	for _, v := range viewers {
		if v.Session == session {
			return true
		}
	}
	return false
}
