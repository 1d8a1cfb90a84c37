package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// Quotas are owners' limits.
type Quotas interface {
	Quota(ctx context.Context, owner string) (desktop.Quota, desktop.Usage, error)
	SetQuota(ctx context.Context, q desktop.Quota, actor string) (*desktop.Quota, error)
}

// quotaHandlers show and set owners' limits.
type quotaHandlers struct {
	*core
	quotas Quotas
}

// getQuota shows the caller's limits and usage (GET /quota), or any
// owner's for admins (GET /quotas/:owner).
func (s *quotaHandlers) getQuota(c *gin.Context) (reply, error) {
	owner := caller(c).Owner
	if o := c.Param("owner"); o != "" && o != owner {
		if err := requireAdmin(c); err != nil {
			return reply{}, err
		}
		owner = o
	}
	q, u, err := s.quotas.Quota(c.Request.Context(), owner)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"quota": q, "usage": u}}, nil
}

// putQuota sets an owner's plan or custom limits (admins only).
func (s *quotaHandlers) putQuota(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	var body apiv1.Quota
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	if body.Owner != "" && body.Owner != c.Param("owner") {
		return reply{}, &desktop.ValidationError{Field: "owner", Message: "the owner is the one in the path; leave it out of the body or make them agree"}
	}
	q := body.ToQuota()
	q.Owner = c.Param("owner")
	got, err := s.quotas.SetQuota(c.Request.Context(), q, actor(c))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, got}, nil
}
