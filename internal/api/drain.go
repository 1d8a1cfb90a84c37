package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Drains move every desktop off a host (admins).
type Drains interface {
	Drain(ctx context.Context, host, actor string) (*manager.DrainStatus, error)
	Undrain(ctx context.Context, host, actor string) error
	// DrainOf is host's drain under way or its last one (nil: none).
	DrainOf(host string) *manager.DrainStatus
}

// drainOf is host's drain on the wire (nil: none).
func (s *hostHandlers) drainOf(host string) *apiv1.Drain {
	if s.drains == nil {
		return nil
	}
	st := s.drains.DrainOf(host)
	if st == nil {
		return nil
	}
	return &apiv1.Drain{StartedAt: st.StartedAt, Done: st.Done, EndedAt: st.EndedAt, Moving: st.Moving, Moved: st.Moved, Left: st.Left}
}

// drainHost marks a host draining and moves its desktops off in the
// background: 202 with the host, whose drain shows how far it got.
func (s *hostHandlers) drainHost(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	if s.drains == nil {
		return reply{}, &desktop.ConflictError{Message: "this bureau does not move desktops between hosts, so it cannot drain one"}
	}
	name := c.Param("name")
	if _, err := s.hosts.Get(c.Request.Context(), name); err != nil {
		return reply{}, err
	}
	if _, err := s.drains.Drain(c.Request.Context(), name, actor(c)); err != nil {
		return reply{}, err
	}
	return s.hostReply(c, http.StatusAccepted)
}

// undrainHost ends a host's drain: placement uses it again.
func (s *hostHandlers) undrainHost(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	if s.drains == nil {
		return reply{}, &desktop.ConflictError{Message: "this bureau does not drain hosts"}
	}
	name := c.Param("name")
	if _, err := s.hosts.Get(c.Request.Context(), name); err != nil {
		return reply{}, err
	}
	if err := s.drains.Undrain(c.Request.Context(), name, actor(c)); err != nil {
		return reply{}, err
	}
	return s.hostReply(c, http.StatusOK)
}
