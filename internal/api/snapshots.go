package api

import (
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

type snapshotRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Scope       string `json:"scope"`
	Memory      *bool  `json:"memory"`
}

func (s *server) createSnapshot(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var req snapshotRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if err := desktop.ValidateText("description", req.Description, 1024, true); err != nil {
		return reply{}, err
	}
	// The manager checks the owner's quota as it records the snapshot.
	sn, err := s.Desktops.CreateSnapshot(c.Request.Context(), c.Param("id"), manager.SnapshotRequest{Name: req.Name,
		Description: req.Description, Scope: req.Scope, Memory: req.Memory, Actor: actor(c), Unlimited: isAdmin(c)})
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, sn}, nil
}

func (s *server) listSnapshots(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	list, err := s.Desktops.ListSnapshots(c.Request.Context(), c.Param("id"))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"snapshots": list}}, nil
}

func (s *server) revertSnapshot(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.Desktops.RevertSnapshot(c.Request.Context(), c.Param("id"), c.Param("name"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *server) deleteSnapshot(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	if err := s.Desktops.DeleteSnapshot(c.Request.Context(), c.Param("id"), c.Param("name"), actor(c)); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
