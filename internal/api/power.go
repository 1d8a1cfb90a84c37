package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Persistence pauses, hibernates, reimages and grows desktops (their
// snapshots are Snapshots').
type Persistence interface {
	Pause(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Resume(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Hibernate(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Reimage(ctx context.Context, id, image, actor string) (*desktop.Desktop, error)
	ResizeDataDisk(ctx context.Context, id string, req manager.ResizeRequest) (*desktop.Desktop, error)
}

func (s *desktopHandlers) pauseDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.persistence.Pause(c.Request.Context(), c.Param("id"), actor(c))
	return reply{http.StatusOK, d}, err
}

// resumeDesktop answers 200 when a paused desktop is running again, 202
// while a hibernated one is being restored.
func (s *desktopHandlers) resumeDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.persistence.Resume(c.Request.Context(), c.Param("id"), actor(c))
	if err != nil {
		return reply{}, err
	}
	if d.State == desktop.StateRunning {
		return reply{http.StatusOK, d}, nil
	}
	return reply{http.StatusAccepted, d}, nil
}

func (s *desktopHandlers) hibernateDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.persistence.Hibernate(c.Request.Context(), c.Param("id"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *desktopHandlers) reimageDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var req struct {
		Image string `json:"image"`
	}
	if err := decodeOptional(c, &req); err != nil {
		return reply{}, err
	}
	d, err := s.persistence.Reimage(c.Request.Context(), c.Param("id"), req.Image, actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *desktopHandlers) resizeDataDisk(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var req struct {
		SizeGiB *int `json:"size_gib"`
	}
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if req.SizeGiB == nil {
		return reply{}, &desktop.ValidationError{Field: "size_gib", Message: "required: the new size in GiB"}
	}
	// The manager checks the owner's disk quota as it records the new size.
	d, err := s.persistence.ResizeDataDisk(c.Request.Context(), c.Param("id"),
		manager.ResizeRequest{SizeGiB: *req.SizeGiB, Actor: actor(c), Unlimited: isAdmin(c)})
	return reply{http.StatusOK, d}, err
}
