package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
)

// Terminals opens terminals in desktops.
type Terminals interface {
	Terminal(ctx context.Context, domain, user string, rows, cols int) (*client.Terminal, error)
}

// terminalHandlers open terminals in desktops over WebSockets, for the
// API (the owner's token) and the console page (its console token).
type terminalHandlers struct {
	*core
	terminals Terminals
}

// ptyMessage is a text message on a terminal's WebSocket: the client
// sends {"type":"resize","rows":…,"cols":…}; bureau ends with
// {"type":"exit","code":…}. Binary messages carry keystrokes one way and
// the screen the other.
type ptyMessage struct {
	Type string `json:"type"`
	Rows int    `json:"rows,omitempty"`
	Cols int    `json:"cols,omitempty"`
	Code *int   `json:"code,omitempty"`
}

// pty serves GET /desktops/{id}/pty?rows=&cols=&user=: a login shell on a
// terminal in the desktop, over a WebSocket. The owner's token reaches it
// here; the console page reaches it with its console token (not view-only).
func (s *terminalHandlers) pty(c *gin.Context) {
	if _, err := s.owned(c); err != nil {
		s.fail(c, err)
		return
	}
	if !upgrading(c) {
		return
	}
	d, err := s.ready(c, "open a terminal in")
	if err != nil {
		s.fail(c, err)
		return
	}
	s.serveTerminal(c, d, c.Query("user"))
}

// consolePTY is the console page's terminal: as the desktop's user.
func (s *terminalHandlers) consolePTY(c *gin.Context) {
	t := consoleToken(c)
	if t.ViewOnly {
		s.fail(c, &desktop.ValidationError{Field: "token", Message: "a view-only console cannot open a terminal"})
		return
	}
	if !upgrading(c) {
		return
	}
	d, err := s.lifecycle.Wake(c.Request.Context(), t.DesktopID, "console/"+t.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.serveTerminal(c, d, "")
}

func (s *terminalHandlers) serveTerminal(c *gin.Context, d *desktop.Desktop, user string) {
	rows, cols := queryInt(c, "rows", 24), queryInt(c, "cols", 80)
	ctx := c.Request.Context()
	term, err := s.terminals.Terminal(context.WithoutCancel(ctx), d.DomainName(), user, rows, cols)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer term.Close()
	ws, err := websocket.Accept(c.Writer, c.Request, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	defer s.screen.AddViewer(d.ID)()
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		defer cancel()
		defer term.Close()
		for {
			kind, b, err := ws.Read(wctx)
			if err != nil {
				return
			}
			if kind == websocket.MessageBinary {
				if term.Input(b) != nil {
					return
				}
				continue
			}
			var m ptyMessage
			if json.Unmarshal(b, &m) == nil && m.Type == "resize" && m.Rows > 0 && m.Cols > 0 {
				term.Resize(min(m.Rows, 500), min(m.Cols, 1000))
			}
		}
	}()
	ex, err := term.Output(func(b []byte) error { return ws.Write(wctx, websocket.MessageBinary, b) })
	if err != nil {
		ws.Close(websocket.StatusGoingAway, "the terminal ended")
		return
	}
	end, _ := json.Marshal(ptyMessage{Type: "exit", Code: &ex.Code})
	ws.Write(wctx, websocket.MessageText, end)
	ws.Close(websocket.StatusNormalClosure, "exit "+strconv.Itoa(ex.Code))
}

func queryInt(c *gin.Context, name string, def int) int {
	if n, err := strconv.Atoi(c.Query(name)); err == nil {
		return n
	}
	return def
}

// upgrading answers 426 to a request that is not a WebSocket upgrade, and
// says whether to go on. Routes call it after their checks and before
// they wake a desktop, dial its display or start a shell for a
// connection that could never use them.
func upgrading(c *gin.Context) bool {
	if headerHas(c.Request.Header, "Connection", "upgrade") && headerHas(c.Request.Header, "Upgrade", "websocket") {
		return true
	}
	c.Header("Connection", "Upgrade")
	c.Header("Upgrade", "websocket")
	c.Data(http.StatusUpgradeRequired, "text/plain; charset=utf-8",
		[]byte("this route is a WebSocket: send Connection: Upgrade and Upgrade: websocket\n"))
	c.Abort()
	return false
}

// headerHas says whether one of h's comma-separated values of key is
// token, ignoring case.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}
