package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Templates are desktops saved with their RAM for warm creates
// (*manager.WarmPool).
type Templates interface {
	BuildTemplate(ctx context.Context, image string, vcpus, memMiB int) (*manager.Template, error)
	Templates(ctx context.Context) ([]*manager.Template, error)
}

// templateHandlers build and list warm templates (admins build).
type templateHandlers struct {
	*core
	templates Templates
}

type templateRequest struct {
	Image     string `json:"image"`
	VCPUs     *int   `json:"vcpus"`
	MemoryMiB *int   `json:"memory_mib"`
}

// buildTemplate (admin) boots a desktop of an image and size once and saves
// it; later creates of that image and size start from it in seconds.
func (s *templateHandlers) buildTemplate(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	var req templateRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	t, err := s.templates.BuildTemplate(c.Request.Context(), req.Image, orDefault(req.VCPUs, defaultVCPUs), orDefault(req.MemoryMiB, defaultMemoryMiB))
	if err != nil {
		return reply{}, err
	}
	if t.State == "ready" {
		return reply{http.StatusOK, t}, nil
	}
	return reply{http.StatusAccepted, t}, nil
}

func (s *templateHandlers) listTemplates(c *gin.Context) (reply, error) {
	ts, err := s.templates.Templates(c.Request.Context())
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"templates": ts}}, nil
}
