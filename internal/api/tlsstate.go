package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/webtls"
	"github.com/gin-gonic/gin"
)

// TLSState is what bureau's own HTTPS certificates are (webtls.Certs).
type TLSState interface {
	Status() webtls.Status
}

// info serves /api/v1/info: Deps.Info, the public URL, and in a word each
// the state of bureau's certificates when it serves HTTPS (every value a
// string, as the contract has always said; tlsStatus has the detail).
func (s *siteHandlers) info(c *gin.Context) (reply, error) {
	out := map[string]string{}
	for k, v := range s.about {
		out[k] = v
	}
	if s.origin.public != nil {
		out["public_url"] = s.origin.public.String()
	}
	out["tls"] = string(webtls.ModeOff)
	if s.tls != nil {
		st := s.tls.Status()
		out["tls"] = string(st.Mode)
		if _, at := st.Soonest(); !at.IsZero() {
			out["tls_not_after"] = at.UTC().Format(time.RFC3339)
		}
		var failing []string
		for _, n := range st.Names {
			if n.LastError != "" {
				failing = append(failing, fmt.Sprintf("%s: %s (next try %s)", n.Name, n.LastError, n.NextTry.UTC().Format(time.RFC3339)))
			}
		}
		if len(failing) > 0 {
			out["tls_error"] = strings.Join(failing, "; ")
		}
	}
	return reply{http.StatusOK, out}, nil
}

// tlsStatus serves /api/v1/tls: each certificate bureau serves, with its
// names, issuer, expiry and, in auto mode, the last failure to get it.
func (s *siteHandlers) tlsStatus(c *gin.Context) (reply, error) {
	if s.tls == nil {
		return reply{http.StatusOK, webtls.Status{Mode: webtls.ModeOff, Names: []webtls.NameStatus{}}}, nil
	}
	return reply{http.StatusOK, s.tls.Status()}, nil
}

// health answers while the server runs; with HTTPS on, it says when the
// first certificate expires and warns two weeks ahead (still 200: the
// server serves).
func (s *siteHandlers) health(c *gin.Context) {
	out := gin.H{"status": "ok"}
	if s.tls != nil {
		if name, at := s.tls.Status().Soonest(); !at.IsZero() {
			out["tls_not_after"] = at.UTC().Format(time.RFC3339)
			if left := time.Until(at); left < webtls.ExpiryWarning {
				out["warnings"] = []string{fmt.Sprintf("the TLS certificate for %s expires in %s", name, left.Round(time.Hour))}
			}
		} else {
			out["warnings"] = []string{"no TLS certificate served yet (see /api/v1/info)"}
		}
	}
	c.JSON(http.StatusOK, out)
}
