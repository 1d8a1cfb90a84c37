package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// auditHandlers serve the audit log: GET /api/v1/audit, a page as JSON or
// every matching entry as NDJSON.
type auditHandlers struct {
	*core
	entries Audit // nil: not kept (503)
}

const (
	auditDefaultLimit = 100
	auditMaxLimit     = 1000
	ndjsonType        = "application/x-ndjson"
)

// auditActionFilter is what an action filter may hold.
var auditActionFilter = regexp.MustCompile(`^[a-z0-9._-]{1,100}$`)

func (s *auditHandlers) auditRoutes(v1 *gin.RouterGroup) {
	v1.GET("/audit", s.handle(s.listAudit))
}

// listAudit answers a page of the audit log, or (?format=ndjson, or
// Accept: application/x-ndjson) streams every matching entry. Owners see
// the entries where they acted or were acted on; admins every entry.
func (s *auditHandlers) listAudit(c *gin.Context) (reply, error) {
	if s.entries == nil {
		return reply{}, fmt.Errorf("the audit log is not kept here: %w", desktop.ErrUnavailable)
	}
	if caller(c).Scope == desktop.ScopeDesktop {
		return reply{}, fmt.Errorf("a desktop token cannot read the audit log: %w", desktop.ErrForbidden)
	}
	f, ndjson, err := auditFilter(c)
	if err != nil {
		return reply{}, err
	}
	f.Visible = ownerFilter(c)
	if ndjson {
		return reply{}, s.exportAudit(c, f)
	}
	p, err := s.entries.Query(c.Request.Context(), f)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, p}, nil
}

// exportAudit streams the entries as NDJSON, one object a line.
func (s *auditHandlers) exportAudit(c *gin.Context, f audit.Filter) error {
	w := c.Writer
	w.Header().Set("Content-Type", ndjsonType)
	w.Header().Set("Content-Disposition", `attachment; filename="bureau-audit.ndjson"`)
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	n := 0
	err := s.entries.Export(c.Request.Context(), f, func(e *audit.Entry) error {
		if n++; n%500 == 0 {
			w.Flush()
		}
		return enc.Encode(e)
	})
	if err != nil {
		// The status is sent: the stream just ends early.
		s.log.Warn("audit export ended early", "err", err)
	}
	return nil
}

// auditFilter reads the query's filters; a bad one is a 422 naming it.
func auditFilter(c *gin.Context) (audit.Filter, bool, error) {
	f := audit.Filter{Owner: c.Query("owner"), Actor: c.Query("actor"), Desktop: c.Query("desktop"), Limit: auditDefaultLimit}
	invalid := func(field, msg string) (audit.Filter, bool, error) {
		return f, false, &desktop.ValidationError{Field: field, Message: msg}
	}
	if a := c.Query("action"); a != "" {
		if !auditActionFilter.MatchString(a) {
			return invalid("action", "must be an action or its start, like desktop. or desktop.stop")
		}
		f.Action = a
	}
	switch o := c.Query("outcome"); o {
	case "", audit.OutcomeOK, audit.OutcomeError:
		f.Outcome = o
	default:
		return invalid("outcome", "must be ok or error")
	}
	for _, b := range []struct {
		name string
		into *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := c.Query(b.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return invalid(b.name, "must be an RFC 3339 time, like 2025-01-02T15:04:05Z")
			}
			*b.into = t
		}
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > auditMaxLimit {
			return invalid("limit", fmt.Sprintf("must be 1 to %d", auditMaxLimit))
		}
		f.Limit = n
	}
	if v := c.Query("cursor"); v != "" {
		cur, err := audit.ParseCursor(v)
		if err != nil {
			return invalid("cursor", err.Error())
		}
		f.After = cur
	}
	ndjson := strings.Contains(c.GetHeader("Accept"), ndjsonType)
	switch c.Query("format") {
	case "":
	case "ndjson":
		ndjson = true
	case "json":
		ndjson = false
	default:
		return invalid("format", "must be json or ndjson")
	}
	return f, ndjson, nil
}
