package api

import (
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

func (s *server) pauseDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.Desktops.Pause(c.Request.Context(), c.Param("id"), actor(c))
	return reply{http.StatusOK, d}, err
}

// resumeDesktop answers 200 when a paused desktop is running again, 202
// while a hibernated one is being restored.
func (s *server) resumeDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.Desktops.Resume(c.Request.Context(), c.Param("id"), actor(c))
	if err != nil {
		return reply{}, err
	}
	if d.State == desktop.StateRunning {
		return reply{http.StatusOK, d}, nil
	}
	return reply{http.StatusAccepted, d}, nil
}

func (s *server) hibernateDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.Desktops.Hibernate(c.Request.Context(), c.Param("id"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

// awake returns the caller's desktop in :id, running: a paused or
// hibernated desktop is woken first ("wake on use"). Routes that need a
// running guest (screen, input, exec, files, console) call it. A passive
// GET (?passive=true, a watcher's thumbnail) wakes nothing, as it counts
// as no use either (touchActivity).
func (s *server) awake(c *gin.Context) (*desktop.Desktop, error) {
	d, err := s.owned(c)
	if err != nil || d.State == desktop.StateRunning || isPassive(c) {
		return d, err
	}
	return s.Desktops.Wake(c.Request.Context(), d.ID, actor(c))
}

func (s *server) reimageDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var req struct {
		Image string `json:"image"`
	}
	if err := decodeOptional(c, &req); err != nil {
		return reply{}, err
	}
	d, err := s.Desktops.Reimage(c.Request.Context(), c.Param("id"), req.Image, actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *server) resizeDataDisk(c *gin.Context) (reply, error) {
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
	d, err := s.Desktops.ResizeDataDisk(c.Request.Context(), c.Param("id"),
		manager.ResizeRequest{SizeGiB: *req.SizeGiB, Actor: actor(c), Unlimited: isAdmin(c)})
	return reply{http.StatusOK, d}, err
}
