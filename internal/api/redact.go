package api

import (
	"regexp"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Where desktops' disks and images live on the host is the operator's
// business: to an owner it only reveals how the host is laid out, which
// helps nobody but an attacker. Admins see host paths; for anyone else
// responses leave them out. This happens here, on the way out, through views and copies: the
// domain types keep their meaning for the rest of bureau.

// redactor removes host paths from what non-admins are shown.
type redactor struct {
	// dirs matches a path under one of the host's directories in free text
	// (event messages, last_error, template and error messages); nil when
	// none are known.
	dirs *regexp.Regexp
}

// hiddenPath stands in for a host path in free text.
const hiddenPath = "<host path>"

func newRedactor(hostDirs []string) *redactor {
	var alts []string
	for _, d := range hostDirs {
		if d = strings.TrimRight(d, "/"); d != "" {
			alts = append(alts, regexp.QuoteMeta(d))
		}
	}
	if len(alts) == 0 {
		return &redactor{}
	}
	// A path ends at white space, a quote, or the ':' or ',' that follows
	// it in Go's error messages ("open /x/y: permission denied").
	return &redactor{dirs: regexp.MustCompile(`(?:` + strings.Join(alts, "|") + `)(?:/[^\s'",:]*)?`)}
}

// forCaller is v as the caller may see it: unchanged for an admin token,
// without host paths for everyone else.
func (s *server) forCaller(c *gin.Context, v any) any {
	if seesHostPaths(c) {
		return v
	}
	return s.redact.value(v)
}

// textForCaller is forCaller for a message.
func (s *server) textForCaller(c *gin.Context, msg string) string {
	if seesHostPaths(c) {
		return msg
	}
	return s.redact.text(msg)
}

// seesHostPaths says whether the request carries an admin API token; one
// refused before authentication or carrying a console token does not.
func seesHostPaths(c *gin.Context) bool {
	t, ok := c.Get(ctxToken)
	return ok && t.(*desktop.Token).Scope == desktop.ScopeAdmin
}

func (r *redactor) text(s string) string {
	if r.dirs == nil {
		return s
	}
	return r.dirs.ReplaceAllString(s, hiddenPath)
}

// value knows every response type that carries a host path; others pass
// unchanged. A gin.H is walked, as handlers wrap lists in one.
func (r *redactor) value(v any) any {
	switch v := v.(type) {
	case gin.H:
		out := make(gin.H, len(v))
		for k, x := range v {
			out[k] = r.value(x)
		}
		return out
	case *desktop.Desktop:
		return r.desktop(v)
	case []*desktop.Desktop:
		out := make([]*desktop.Desktop, len(v))
		for i, d := range v {
			out[i] = r.desktop(d)
		}
		return out
	case *manager.DeleteResult:
		if v == nil {
			return v
		}
		cp := *v
		cp.Desktop, cp.DataDiskKept = r.desktop(v.Desktop), ""
		return &cp
	case *desktop.Event:
		return r.event(v)
	case []*desktop.Event:
		out := make([]*desktop.Event, len(v))
		for i, e := range v {
			out[i] = r.event(e)
		}
		return out
	case *desktop.Image:
		return imageView{Image: v}
	case []*desktop.Image:
		out := make([]imageView, len(v))
		for i, im := range v {
			out[i] = imageView{Image: im}
		}
		return out
	case *manager.Template:
		return r.template(v)
	case []*manager.Template:
		out := make([]*manager.Template, len(v))
		for i, t := range v {
			out[i] = r.template(t)
		}
		return out
	case *desktop.VMStats:
		if v == nil {
			return v
		}
		disks := make([]diskView, len(v.Disks))
		for i, d := range v.Disks {
			disks[i] = diskView{DiskStats: d}
		}
		return statsView{VMStats: v, Disks: disks}
	}
	return v
}

func (r *redactor) desktop(d *desktop.Desktop) *desktop.Desktop {
	if d == nil {
		return nil
	}
	cp := *d
	cp.DataDiskPath = "" // omitempty: left out
	cp.LastError = r.text(d.LastError)
	return &cp
}

func (r *redactor) event(e *desktop.Event) *desktop.Event {
	if e == nil {
		return nil
	}
	cp := *e
	cp.Message = r.text(e.Message)
	return &cp
}

// template hides host paths in a failed build's error.
func (r *redactor) template(t *manager.Template) *manager.Template {
	if t == nil {
		return nil
	}
	cp := *t
	cp.Error = r.text(t.Error)
	return &cp
}

// The views below shadow a path field with an empty one that JSON leaves
// out (a shallower field wins over the embedded one of the same name).

type imageView struct {
	*desktop.Image
	Path string `json:"path,omitempty"`
}

type statsView struct {
	*desktop.VMStats
	Disks []diskView `json:"disks"`
}

type diskView struct {
	desktop.DiskStats
	Path string `json:"path,omitempty"`
}
