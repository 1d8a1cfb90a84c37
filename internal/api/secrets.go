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
	// ListFor is what a desktop reaches on its own: its secrets and the
	// owner secrets allowed on it.
	ListFor(ctx context.Context, owner, desktopID string) ([]*desktop.Secret, error)
	// Allow sets the desktops an owner secret reaches on its own;
	// AllowNamed allows on a desktop the owner secrets among names.
	Allow(ctx context.Context, owner, name string, desktops []string) error
	AllowNamed(ctx context.Context, owner, desktopID string, names []string) error
	Delete(ctx context.Context, owner, desktopID, name string) error
	ForgetDesktop(ctx context.Context, desktopID string) error
}

// secretHandlers set, list and delete owners' and desktops' secrets.
type secretHandlers struct {
	*core
	secrets Secrets
	// changed is Deps.SecretsChanged (may be nil).
	changed func(owner, desktopID string)
}

func (s *secretHandlers) secretRoutes(v1 *gin.RouterGroup) {
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
func (s *secretHandlers) secretPlace(c *gin.Context, write bool) (owner, desktopID string, err error) {
	if s.secrets == nil {
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

func (s *secretHandlers) listSecrets(c *gin.Context) (reply, error) {
	owner, id, err := s.secretPlace(c, false)
	if err != nil {
		return reply{}, err
	}
	var list []*desktop.Secret
	if id != "" && caller(c).Scope == desktop.ScopeDesktop {
		// A desktop's own token: only what the desktop reaches on its own.
		list, err = s.secrets.ListFor(c.Request.Context(), owner, id)
	} else {
		list, err = s.secrets.List(c.Request.Context(), owner, id)
	}
	return reply{http.StatusOK, gin.H{"secrets": list}}, err
}

// putSecret sets a secret from {"value": "…"}; the answer never holds it.
// An owner secret may also say which desktops it reaches on its own
// ({"desktops": [ids] or ["*"]}: their desktop tokens and services), with
// or without a new value.
func (s *secretHandlers) putSecret(c *gin.Context) (reply, error) {
	owner, id, err := s.secretPlace(c, true)
	if err != nil {
		return reply{}, err
	}
	var body struct {
		Value    string    `json:"value"`
		Desktops *[]string `json:"desktops"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	if body.Desktops != nil {
		if id != "" {
			return reply{}, &desktop.ValidationError{Field: "desktops", Message: "a desktop's own secret reaches that desktop only"}
		}
		if err := s.checkSecretDesktops(c, owner, *body.Desktops); err != nil {
			return reply{}, err
		}
	}
	if body.Value != "" || body.Desktops == nil {
		if _, err := s.secrets.Put(ctx, owner, id, c.Param("name"), body.Value); err != nil {
			return reply{}, err
		}
	}
	if body.Desktops != nil {
		if err := s.secrets.Allow(ctx, owner, c.Param("name"), *body.Desktops); err != nil {
			return reply{}, err
		}
	}
	sec, err := s.secretNamed(ctx, owner, id, c.Param("name"))
	if err != nil {
		return reply{}, err
	}
	s.secretsChanged(owner, id)
	return reply{http.StatusOK, sec}, nil
}

// checkSecretDesktops refuses desktops an owner secret could not be
// allowed on: another owner's, or unknown.
func (s *secretHandlers) checkSecretDesktops(c *gin.Context, owner string, ids []string) error {
	if len(ids) > 256 {
		return &desktop.ValidationError{Field: "desktops", Message: "at most 256 desktops (or [\"*\"] for all)"}
	}
	for _, id := range ids {
		if id == desktop.AllDesktops {
			continue
		}
		d, err := s.lifecycle.Get(c.Request.Context(), id)
		if err != nil || d.Owner != owner || d.DeletedAt != nil {
			return &desktop.ValidationError{Field: "desktops", Message: fmt.Sprintf("no desktop %q of %s", id, owner)}
		}
	}
	return nil
}

// secretNamed is one secret's record as listed.
func (s *secretHandlers) secretNamed(ctx context.Context, owner, desktopID, name string) (*desktop.Secret, error) {
	list, err := s.secrets.List(ctx, owner, desktopID)
	if err != nil {
		return nil, err
	}
	for _, sec := range list {
		if sec.Name == name && sec.DesktopID == desktopID {
			return sec, nil
		}
	}
	return nil, fmt.Errorf("secret %s: %w", name, desktop.ErrNotFound)
}

func (s *secretHandlers) deleteSecret(c *gin.Context) (reply, error) {
	owner, id, err := s.secretPlace(c, true)
	if err != nil {
		return reply{}, err
	}
	if err := s.secrets.Delete(c.Request.Context(), owner, id, c.Param("name")); err != nil {
		return reply{}, err
	}
	s.secretsChanged(owner, id)
	return reply{http.StatusNoContent, nil}, nil
}

// secretsChanged tells the desktops that may use the secrets (in the
// background: a desktop's agent may be slow to answer).
func (s *secretHandlers) secretsChanged(owner, desktopID string) {
	if s.changed != nil {
		go s.changed(owner, desktopID)
	}
}
