package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Live is the feed of desktop changes and the audit log.
type Live interface {
	Subscribe(ctx context.Context, owner string) *manager.Subscription
	AuditLog(ctx context.Context, owner string, limit int) ([]*desktop.Event, error)
}

// Stats reports running VMs' resource figures.
type Stats interface {
	DomainStats(ctx context.Context, name string) (*desktop.VMStats, error)
}

// liveHandlers serve the feed of desktop changes, the audit log and
// running desktops' resource figures.
type liveHandlers struct {
	*core
	live  Live
	stats Stats
}

// auditLog lists who did what to the caller's desktops (all for admins).
func (s *liveHandlers) auditLog(c *gin.Context) (reply, error) {
	limit := 200
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return reply{}, &desktop.ValidationError{Field: "limit", Message: "must be 1 to 10000"}
		}
		limit = n
	}
	evs, err := s.live.AuditLog(c.Request.Context(), ownerFilter(c), limit)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"events": evs}}, nil
}

// streamCheckEvery is how often an event stream sends a comment, to keep
// proxies from closing an idle stream, and checks that the token it is
// served to can still authenticate, so revoking or expiry ends the stream.
var streamCheckEvery = 15 * time.Second

// streamEvents serves state changes and events of the caller's desktops as
// server-sent events: "desktop" (the desktop's record after a change) and
// "event" (a new history entry). When the caller's token is revoked or
// expires, a last "unauthorized" event says so and the stream ends (not
// "error": EventSource would mistake it for its own connection error).
func (s *liveHandlers) streamEvents(c *gin.Context) {
	ctx := c.Request.Context()
	sub := s.live.Subscribe(ctx, ownerFilter(c))
	w := c.Writer
	startSSE(w, "bureau live events")
	keepalive := time.NewTicker(streamCheckEvery)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if !s.keepStreaming(c) {
				return
			}
		case ch := <-sub.C:
			if n := sub.Dropped(); n > 0 {
				fmt.Fprintf(w, "event: dropped\ndata: {\"count\":%d}\n\n", n)
			}
			kind, v := "event", any(ch.Event)
			if ch.Desktop != nil {
				kind, v = "desktop", ch.Desktop
			}
			writeEvent(w, kind, s.forCaller(c, v))
		}
		w.Flush()
	}
}

// keepStreaming is a stream's check every streamCheckEvery: while the
// caller's token is usable it writes a keepalive comment; once it is not,
// a last "unauthorized" event, and the stream must end (false).
func (s *core) keepStreaming(c *gin.Context) bool {
	w := c.Writer
	if _, err := s.tokens.Usable(c.Request.Context(), caller(c).ID); errors.Is(err, desktop.ErrUnauthorized) {
		_, body := classify(err)
		writeEvent(w, "unauthorized", body)
		w.Flush()
		return false
	} else if err != nil {
		s.log.Warn("event stream: checking its token", "path", c.FullPath(), "err", err)
	}
	fmt.Fprint(w, ": keepalive\n\n")
	return true
}

// createStreamToken gives the caller a stream token: it opens GET
// /api/v1/events/stream?stream_token=… once, within a minute, as the
// caller (see auth.StreamGrants for why a browser needs one).
func (s *liveHandlers) createStreamToken(c *gin.Context) (reply, error) {
	secret, expires, err := s.streams.Issue(caller(c))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, gin.H{"token": secret, "expires_at": expires.UTC(),
		"url": streamRoute + "?stream_token=" + url.QueryEscape(secret)}}, nil
}

// startSSE answers 200 with a server-sent event stream that opens with a
// comment, flushed so the client sees the stream start.
func startSSE(w gin.ResponseWriter, comment string) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // no buffering in a proxy in front
	w.WriteHeader(http.StatusOK)
	_, err := fmt.Fprintf(w, ": %s\n\n", comment)
	w.Flush()
	return err
}

// writeEvent writes one server-sent event with v as JSON data (the caller
// flushes).
func writeEvent(w io.Writer, kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
	return err
}

// desktopStats returns a running desktop's resource figures.
func (s *liveHandlers) desktopStats(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if d.State != desktop.StateRunning {
		return reply{}, &desktop.TransitionError{Op: "read the statistics of", State: d.State}
	}
	st, err := s.stats.DomainStats(c.Request.Context(), d.DomainName())
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, st}, nil
}
