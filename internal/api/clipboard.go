package api

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/gin-gonic/gin"
)

// Clipboard reads and sets the clipboard of a desktop's X session: text,
// and images (guest.ClipboardTypes) as raw bytes.
type Clipboard interface {
	ReadClipboard(ctx context.Context, domain string) (*guest.Clipboard, error)
	ClipboardData(ctx context.Context, domain, mime string) ([]byte, error)
	SetClipboard(ctx context.Context, domain, text string) error
	SetClipboardData(ctx context.Context, domain, mime string, data []byte) error
}

// clipboardHandlers read and set desktops' clipboards, for the API (the
// owner's token) and the console page (its console token).
type clipboardHandlers struct {
	*core
	clipboard Clipboard
}

type clipboardText struct {
	Text string `json:"text"`
}

// getClipboard answers the clipboard: {"text", "types"}, or with
// ?type=image/png the bytes of that type.
func (s *clipboardHandlers) getClipboard(c *gin.Context) (reply, error) {
	d, err := s.ready(c, "read the clipboard of")
	if err != nil {
		return reply{}, err
	}
	return s.readClipboard(c, d)
}

// putClipboard sets the clipboard: a JSON body {"text"}, or the raw bytes
// of an image with its Content-Type.
func (s *clipboardHandlers) putClipboard(c *gin.Context) (reply, error) {
	d, err := s.ready(c, "set the clipboard of")
	if err != nil {
		return reply{}, err
	}
	return s.writeClipboard(c, d)
}

// consoleGetClipboard and consolePutClipboard serve the console page with
// its console token; a view-only session may read but not set.
func (s *clipboardHandlers) consoleGetClipboard(c *gin.Context) (reply, error) {
	if consoleToken(c).ScreenOnly {
		return reply{}, fmt.Errorf("this console shows the screen only: it cannot read the desktop's clipboard: %w", desktop.ErrForbidden)
	}
	d, err := s.consoleDesktop(c, "read the clipboard of")
	if err != nil {
		return reply{}, err
	}
	return s.readClipboard(c, d)
}

func (s *clipboardHandlers) consolePutClipboard(c *gin.Context) (reply, error) {
	if consoleToken(c).ViewOnly {
		return reply{}, fmt.Errorf("this console session is view-only: it cannot set the desktop's clipboard: %w", desktop.ErrForbidden)
	}
	d, err := s.consoleDesktop(c, "set the clipboard of")
	if err != nil {
		return reply{}, err
	}
	return s.writeClipboard(c, d)
}

// consoleDesktop is the running desktop a console token is for. A console
// page only asks while it shows the desktop, so nothing is woken.
func (s *clipboardHandlers) consoleDesktop(c *gin.Context, op desktop.Op) (*desktop.Desktop, error) {
	d, err := s.lifecycle.Get(c.Request.Context(), consoleToken(c).DesktopID)
	if err == nil && d.State != desktop.StateRunning {
		err = &desktop.TransitionError{Op: op, State: d.State}
	}
	return d, err
}

func (s *clipboardHandlers) readClipboard(c *gin.Context, d *desktop.Desktop) (reply, error) {
	if t := c.Query("type"); t != "" && t != "text/plain" {
		data, err := s.clipboard.ClipboardData(c.Request.Context(), d.DomainName(), t)
		if err != nil {
			return reply{}, err
		}
		c.Header("Cache-Control", "no-store")
		c.Data(http.StatusOK, t, data)
		return reply{}, nil
	}
	cb, err := s.clipboard.ReadClipboard(c.Request.Context(), d.DomainName())
	return reply{http.StatusOK, cb}, err
}

func (s *clipboardHandlers) writeClipboard(c *gin.Context, d *desktop.Desktop) (reply, error) {
	ctx, domain := c.Request.Context(), d.DomainName()
	mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if mt == "" || mt == "application/json" {
		var body clipboardText
		if err := decode(c, &body); err != nil {
			return reply{}, err
		}
		return reply{http.StatusOK, body}, s.clipboard.SetClipboard(ctx, domain, body.Text)
	}
	data, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxClipboardBody))
	if err != nil {
		return reply{}, &desktop.ValidationError{Field: "body", Message: "the clipboard takes at most 4 MiB"}
	}
	if err := s.clipboard.SetClipboardData(ctx, domain, mt, data); err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"type": mt, "bytes": len(data)}}, nil
}

// maxClipboardBody bounds an image put on the clipboard (guest checks the
// same limit; one byte over lets it say so).
const maxClipboardBody = 4<<20 + 1
