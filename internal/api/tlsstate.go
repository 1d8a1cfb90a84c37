package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/webtls"
	"github.com/gin-gonic/gin"
)

// TLSState is what bureau's own HTTPS certificates are (webtls.Certs).
type TLSState interface {
	Status() webtls.Status
	// Soonest is the earliest expiry among the certificates served and
	// its name (zero: none served yet).
	Soonest() (string, time.Time)
}

// expiryWarning is how close to expiry a certificate makes health warn.
const expiryWarning = 14 * 24 * time.Hour

// info serves /api/v1/info: Deps.Info, the public URL, and the state of
// bureau's certificates when it serves HTTPS.
func (s *siteHandlers) info(c *gin.Context) (reply, error) {
	out := gin.H{}
	for k, v := range s.about {
		out[k] = v
	}
	if s.origin.public != nil {
		out["public_url"] = s.origin.public.String()
	}
	if s.tls != nil {
		out["tls"] = s.tls.Status()
	} else {
		out["tls"] = webtls.Status{Mode: webtls.ModeOff, Names: []webtls.NameStatus{}}
	}
	return reply{http.StatusOK, out}, nil
}

// health answers while the server runs; with HTTPS on, it says when the
// first certificate expires and warns two weeks ahead (still 200: the
// server serves).
func (s *siteHandlers) health(c *gin.Context) {
	out := gin.H{"status": "ok"}
	if s.tls != nil {
		if name, at := s.tls.Soonest(); !at.IsZero() {
			out["tls_not_after"] = at.UTC().Format(time.RFC3339)
			if left := time.Until(at); left < expiryWarning {
				out["warnings"] = []string{fmt.Sprintf("the TLS certificate for %s expires in %s", name, left.Round(time.Hour))}
			}
		} else {
			out["warnings"] = []string{"no TLS certificate served yet (see /api/v1/info)"}
		}
	}
	c.JSON(http.StatusOK, out)
}
