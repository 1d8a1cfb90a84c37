package api

import (
	"regexp"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// Where desktops' disks and images live on the host is the operator's
// business: to an owner it only reveals how the host is laid out, which
// helps nobody but an attacker. Admins see host paths; for anyone else
// responses leave them out. This happens on the way out (present.go), on
// the API's own types: the domain types keep their meaning for the rest of
// bureau.

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

// textForCaller is a message as the caller may see it (see present).
func (s *core) textForCaller(c *gin.Context, msg string) string {
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
