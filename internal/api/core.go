package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// core is the request plumbing every handler type shares (each embeds
// it): who the caller is (authenticate, authn.go), answers and errors
// (handle, fail, forCaller), the desktop a request names, checked against
// the caller (owned, awake, running), request logs, activity and rate
// limits. Features' own dependencies are their handler types', not core's.
type core struct {
	// lifecycle finds the desktop a request names (owned) and wakes it on
	// use (awake); screen is told of that use (touchActivity). The
	// handlers that embed core reach both, tokens and hosts, through it: one
	// value each, not a copy per handler.
	lifecycle Lifecycle
	screen    Screen
	// tokens and streams authenticate callers, and keep checking them on
	// long streams (keepStreaming).
	tokens  Tokens
	streams *auth.StreamGrants
	// hosts says when a desktop's host is lost (forCaller; nil: none),
	// and lists them (hostHandlers).
	hosts   Hosts
	log     *slog.Logger
	observe func(method, route string, status int, took time.Duration)
	redact  *redactor
	limits  *limiter
	// origin is how clients reach bureau (the links handed out).
	origin *origin
	// readiness says whether running desktops are ready (nil: not
	// followed; every running desktop is taken as ready).
	readiness Readiness
	// people keeps people in the loop of desktops: desktop records show
	// who holds their input and what is asked (nil: none kept).
	people People
	// audit records state-changing calls and console sessions (nil: none;
	// audit.go).
	audit *auditor
	// signin checks sign-ins' cookies and CSRF tokens (nil: none taken;
	// session.go).
	signin SignIn
	// teams are teams and their members: team tokens are minted and
	// checked against them (nil: none; teams.go).
	teams Teams
}

// reply is what a handler returns: a status and a JSON body.
type reply struct {
	status int
	body   any
}

// handle adapts a value-returning handler: errors go through fail, and
// the body is what the caller may see (host paths for admins only).
func (s *core) handle(h func(c *gin.Context) (reply, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		r, err := h(c)
		if err != nil {
			s.fail(c, err)
			return
		}
		noteStepResult(c, r.body)
		if c.Writer.Written() { // the handler streamed its own response
			return
		}
		if r.body == nil {
			c.Status(r.status)
			return
		}
		c.JSON(r.status, s.forCaller(c, r.body))
	}
}

// owned loads the desktop named in the path if the caller may see it.
// Someone else's desktop is "not found", so existence does not leak.
func (s *core) owned(c *gin.Context) (*desktop.Desktop, error) {
	return s.ownedID(c, c.Param("id"))
}

// ownedID is owned for a desktop id given elsewhere than the path.
func (s *core) ownedID(c *gin.Context, id string) (*desktop.Desktop, error) {
	d, err := s.lifecycle.Get(c.Request.Context(), id)
	if err != nil {
		return nil, err
	}
	if d.DeletedAt != nil || !isAdmin(c) && d.Owner != caller(c).Owner {
		return nil, fmt.Errorf("desktop %s: %w", id, desktop.ErrNotFound)
	}
	c.Set(ctxSubjectOwner, d.Owner) // for the audit log
	return d, nil
}

// awake returns the caller's desktop in :id, running: a paused or
// hibernated desktop is woken first ("wake on use"). Routes that need a
// running guest (screen, input, exec, files, console) call it. A passive
// GET (?passive=true, a watcher's thumbnail) wakes nothing, as it counts
// as no use either (touchActivity).
func (s *core) awake(c *gin.Context) (*desktop.Desktop, error) {
	d, err := s.owned(c)
	if err != nil || d.State == desktop.StateRunning || isPassive(c) {
		return d, err
	}
	return s.lifecycle.Wake(c.Request.Context(), d.ID, actor(c))
}

// running returns the caller's desktop, woken if it was paused or
// hibernated, or a 409 naming its state.
func (s *core) running(c *gin.Context, op desktop.Op) (*desktop.Desktop, error) {
	d, err := s.awake(c)
	if err == nil && d.State != desktop.StateRunning {
		err = &desktop.TransitionError{Op: op, State: d.State}
	}
	return d, err
}

// logRequests logs each request with an id (X-Request-Id, taken from the
// client when it sends a sane one) and records its latency.
func (s *core) logRequests(c *gin.Context) {
	start := time.Now()
	id := c.GetHeader("X-Request-Id")
	if len(id) == 0 || len(id) > 64 {
		id = newRequestID()
	}
	c.Set(ctxRequestID, id)
	c.Header("X-Request-Id", id)
	c.Next()
	took := time.Since(start)
	s.log.Info("request", "method", c.Request.Method, "path", c.FullPath(), "status", c.Writer.Status(),
		"duration_ms", took.Milliseconds(), "client", c.ClientIP(), "owner", c.GetString(ctxOwner), "desktop", c.Param("id"),
		"request_id", c.GetString(ctxRequestID))
	if s.observe != nil {
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		s.observe(c.Request.Method, route, c.Writer.Status(), took)
	}
}

func (s *core) recovered(c *gin.Context, v any) {
	s.log.Error("handler panic", "panic", v, "path", c.Request.URL.Path)
	s.fail(c, errPanic)
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
