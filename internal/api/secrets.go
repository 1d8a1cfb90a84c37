package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// Secrets are owners' and desktops' secrets, by name: the API sets and
// lists them but never reads a value back.
type Secrets interface {
	Put(ctx context.Context, owner, desktopID, name, value string) (*desktop.Secret, error)
	List(ctx context.Context, owner, desktopID string) ([]*desktop.Secret, error)
	Delete(ctx context.Context, owner, desktopID, name string) error
	ForgetDesktop(ctx context.Context, desktopID string) error
}

func (s *server) secretRoutes(v1 *gin.RouterGroup) {
	v1.GET("/secrets", s.handle(s.listSecrets))
	v1.PUT("/secrets/:name", s.handle(s.putSecret))
	v1.DELETE("/secrets/:name", s.handle(s.deleteSecret))
	v1.GET("/desktops/:id/secrets", s.handle(s.listSecrets))
	v1.PUT("/desktops/:id/secrets/:name", s.handle(s.putSecret))
	v1.DELETE("/desktops/:id/secrets/:name", s.handle(s.deleteSecret))
}

// secretPlace is whose secrets a request reaches: an owner's (admins may
// name one with ?owner=) or, under /desktops/:id, a desktop's. A desktop
// token lists its desktop's names only; it cannot set or delete.
func (s *server) secretPlace(c *gin.Context, write bool) (owner, desktopID string, err error) {
	if s.Secrets == nil {
		return "", "", fmt.Errorf("this bureau keeps no secrets: %w", desktop.ErrUnavailable)
	}
	tok := caller(c)
	if c.Param("id") != "" {
		d, err := s.owned(c)
		if err != nil {
			return "", "", err
		}
		if write && tok.Scope == desktop.ScopeDesktop {
			return "", "", fmt.Errorf("a desktop token cannot set or delete secrets; its owner can: %w", desktop.ErrForbidden)
		}
		return d.Owner, d.ID, nil
	}
	owner = tok.Owner
	if o := c.Query("owner"); o != "" && o != owner {
		if err := requireAdmin(c); err != nil {
			return "", "", err
		}
		owner = o
	}
	return owner, "", nil
}

func (s *server) listSecrets(c *gin.Context) (reply, error) {
	owner, id, err := s.secretPlace(c, false)
	if err != nil {
		return reply{}, err
	}
	list, err := s.Secrets.List(c.Request.Context(), owner, id)
	return reply{http.StatusOK, gin.H{"secrets": list}}, err
}

// putSecret sets a secret from {"value": "…"}; the answer never holds it.
func (s *server) putSecret(c *gin.Context) (reply, error) {
	owner, id, err := s.secretPlace(c, true)
	if err != nil {
		return reply{}, err
	}
	var body struct {
		Value string `json:"value"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	sec, err := s.Secrets.Put(c.Request.Context(), owner, id, c.Param("name"), body.Value)
	if err != nil {
		return reply{}, err
	}
	s.secretsChanged(owner, id)
	return reply{http.StatusOK, sec}, nil
}

func (s *server) deleteSecret(c *gin.Context) (reply, error) {
	owner, id, err := s.secretPlace(c, true)
	if err != nil {
		return reply{}, err
	}
	if err := s.Secrets.Delete(c.Request.Context(), owner, id, c.Param("name")); err != nil {
		return reply{}, err
	}
	s.secretsChanged(owner, id)
	return reply{http.StatusNoContent, nil}, nil
}

// secretsChanged tells the desktops that may use the secrets (in the
// background: a desktop's agent may be slow to answer).
func (s *server) secretsChanged(owner, desktopID string) {
	if s.SecretsChanged != nil {
		go s.SecretsChanged(owner, desktopID)
	}
}
