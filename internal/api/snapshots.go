package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Snapshots take, list, revert to and delete desktops' snapshots
// (*manager.Snapshots).
type Snapshots interface {
	CreateSnapshot(ctx context.Context, id string, req manager.SnapshotRequest) (*desktop.Snapshot, error)
	ListSnapshots(ctx context.Context, id string) ([]*desktop.Snapshot, error)
	RevertSnapshot(ctx context.Context, id, name, actor string) (*desktop.Desktop, error)
	DeleteSnapshot(ctx context.Context, id, name, actor string) error
}

// snapshotHandlers take, list, revert to and delete desktops' snapshots.
type snapshotHandlers struct {
	*core
	snapshots Snapshots
}

type snapshotRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Scope       string `json:"scope"`
	Memory      *bool  `json:"memory"`
}

func (s *snapshotHandlers) createSnapshot(c *gin.Context) (reply, error) {
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
	sn, err := s.snapshots.CreateSnapshot(c.Request.Context(), c.Param("id"), manager.SnapshotRequest{Name: req.Name,
		Description: req.Description, Scope: req.Scope, Memory: req.Memory, Actor: actor(c), Unlimited: isAdmin(c)})
	if err != nil {
		return reply{}, err
	}
	created(c, "snapshot", sn.Name)
	return reply{http.StatusCreated, sn}, nil
}

func (s *snapshotHandlers) listSnapshots(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	list, err := s.snapshots.ListSnapshots(c.Request.Context(), c.Param("id"))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"snapshots": list}}, nil
}

func (s *snapshotHandlers) revertSnapshot(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	d, err := s.snapshots.RevertSnapshot(c.Request.Context(), c.Param("id"), c.Param("name"), actor(c))
	return reply{http.StatusAccepted, d}, err
}

func (s *snapshotHandlers) deleteSnapshot(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	if err := s.snapshots.DeleteSnapshot(c.Request.Context(), c.Param("id"), c.Param("name"), actor(c)); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
