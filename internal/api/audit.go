package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/signin"
	"github.com/gin-gonic/gin"
)

// Audit keeps the audit log (internal/audit): Record never blocks a
// request; Query pages and Export streams what a filter chooses.
type Audit interface {
	Record(e *audit.Entry)
	Query(ctx context.Context, f audit.Filter) (*audit.Page, error)
	Export(ctx context.Context, f audit.Filter, fn func(*audit.Entry) error) error
}

// ctxSubjectOwner is the owner of the desktop a request named (set by
// owned), for the audit log.
const ctxSubjectOwner = "bureau.subject_owner"

// ctxCreated is what a call made, for the audit log when its path does
// not name it (a desktop's id is given to it by bureau).
const ctxCreated = "bureau.created"

type createdObject struct{ typ, id string }

// created notes for the audit log the object a call made.
func created(c *gin.Context, typ, id string) { c.Set(ctxCreated, createdObject{typ, id}) }

// maxUnauthenticatedPerSecond bounds the failed-authentication calls the
// audit log takes; the rest are counted and logged.
const maxUnauthenticatedPerSecond = 10

// auditor records state-changing calls in the audit log (nil log: none).
type auditor struct {
	log    Audit
	unauth *audit.Window
}

// clientKey carries an MCP call's client address to the API calls its
// tools make in process.
type clientKey struct{}

// changes says whether a method changes state (is audited).
func changes(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// audited records the call after its handlers ran, when it changes state.
// Only the route pattern and path parameters are kept: never the body,
// the query string or a header.
func (s *core) audited(c *gin.Context) {
	if s.audit == nil || !changes(c.Request.Method) {
		c.Next()
		return
	}
	start := time.Now()
	if c.FullPath() == "/mcp" {
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), clientKey{}, c.ClientIP()))
	}
	c.Next()
	s.recordCall(c, start)
}

// auditedBy is audited around a single handler that calls c.Next itself
// (consoleAuth), for route lists that take one.
func (s *core) auditedBy(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.audit == nil || !changes(c.Request.Method) {
			h(c)
			return
		}
		start := time.Now()
		h(c)
		s.recordCall(c, start)
	}
}

func (s *core) recordCall(c *gin.Context, start time.Time) {
	route := c.FullPath()
	e := &audit.Entry{At: start, Method: c.Request.Method, Route: c.Request.Method + " " + route,
		Action: audit.ActionFor(c.Request.Method, route), Status: c.Writer.Status(),
		DurationMS: time.Since(start).Milliseconds(), SubjectOwner: c.GetString(ctxSubjectOwner)}
	e.ClientIP = s.clientOf(c, e)
	switch {
	case c.Value(ctxToken) != nil:
		t := caller(c)
		e.Owner, e.TokenID, e.TokenName = t.Owner, t.ID, t.Name
		switch {
		case t.Session: // a sign-in: the person it is (a team's: for whom)
			e.Person = strings.TrimPrefix(t.Name, signin.SessionNamePrefix)
			if t.Role != "" {
				e.Person = strings.TrimSuffix(e.Person, " ("+t.Owner+")")
			}
		case t.Member != "": // a team token: the person it acts for
			e.Person = t.Member
		}
	case c.Value(ctxConsole) != nil:
		t := consoleToken(c)
		e.Owner, e.TokenID, e.Person, e.SubjectOwner = t.Owner, t.ID, t.Name, t.Owner
	}
	if v, ok := c.Get(ctxFailure); ok {
		if err, ok := v.(error); ok {
			_, body := classify(err)
			e.ErrorCode = body.Code
		}
	}
	if e.Owner == "" && e.Status == http.StatusUnauthorized {
		ok, missed := s.audit.unauth.Allow(time.Now())
		if missed > 0 {
			s.log.Warn("audit log: unauthenticated calls not recorded (over the rate)", "calls", missed,
				"per_second", maxUnauthenticatedPerSecond)
		}
		if !ok {
			return
		}
	}
	auditObject(c, route, e)
	if route == "/api/v1/quotas/:owner" {
		e.SubjectOwner = c.Param("owner")
	}
	s.audit.log.Record(e)
}

// clientOf is the client's address: c.ClientIP (X-Forwarded-For only from
// trusted proxies), or for an MCP tool's call in process, the MCP call's.
func (s *core) clientOf(c *gin.Context, e *audit.Entry) string {
	if c.Request.RemoteAddr == "" {
		if ip, ok := c.Request.Context().Value(clientKey{}).(string); ok {
			e.Detail = "via mcp"
			return ip
		}
	}
	return c.ClientIP()
}

// secretParams are path parameters never recorded (a catch-all path may
// hold anything).
var secretParams = map[string]bool{"path": true, "token": true, "secret": true}

// auditObject fills in what the call was about from its path parameters:
// the desktop (:id under /desktops) and the last thing the path names.
func auditObject(c *gin.Context, route string, e *audit.Entry) {
	if strings.HasPrefix(route, "/api/v1/desktops/:id") {
		e.DesktopID = c.Param("id")
	}
	if v, ok := c.Get(ctxCreated); ok {
		o := v.(createdObject)
		e.ObjectType, e.ObjectID = o.typ, o.id
		if o.typ == "desktop" && e.DesktopID == "" {
			e.DesktopID = o.id
		}
		return
	}
	for i := len(c.Params) - 1; i >= 0; i-- {
		p := c.Params[i]
		if secretParams[p.Key] {
			continue
		}
		e.ObjectType, e.ObjectID = audit.ObjectType(route, p.Key), p.Value
		return
	}
}

// recordConsoleSession records a console session when its WebSocket
// closes: who (the link's name), from where, for how long, how it ended.
func (s *core) recordConsoleSession(c *gin.Context, t *desktop.ConsoleToken, start time.Time, ended error) {
	if s.audit == nil {
		return
	}
	mode := "view_only=false"
	if t.ViewOnly {
		mode = "view_only=true"
	}
	s.audit.log.Record(&audit.Entry{At: start, Owner: t.Owner, SubjectOwner: t.Owner, TokenID: t.ID, Person: t.Name,
		ClientIP: c.ClientIP(), Method: c.Request.Method, Route: c.Request.Method + " " + c.FullPath(), Action: audit.ConsoleSession,
		ObjectType: "console", ObjectID: t.ID, DesktopID: t.DesktopID, Status: c.Writer.Status(),
		DurationMS: time.Since(start).Milliseconds(), Detail: mode + "; made_by=" + t.MadeBy + "; ended=" + sessionEnd(ended)})
}

// sessionEnd says how a console session ended, without the error's text
// (bureau's own close reasons aside).
func sessionEnd(err error) string {
	var ce *console.CloseError
	switch {
	case err == nil:
		return "closed by the browser"
	case errors.As(err, &ce):
		return "ended by bureau: " + ce.Reason
	case errors.Is(err, context.Canceled):
		return "ended by bureau"
	}
	return "connection lost"
}
