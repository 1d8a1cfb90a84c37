package api

import (
	"context"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// Migrations move desktops between hosts (admins).
type Migrations interface {
	Migrate(ctx context.Context, id, host, actor string) (*desktop.Desktop, error)
	CancelMigration(ctx context.Context, id, actor string) error
}

// migrateDesktop moves a desktop to another host, live when it runs
// (cold when it does not, or has snapshots): 202, then its state is
// migrating, its step says how far the copy got, and its events say how
// long it took (and the downtime of a live move).
func (s *hostHandlers) migrateDesktop(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	var req struct {
		Host string `json:"host"`
	}
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if s.migrations == nil {
		return reply{}, &desktop.ConflictError{Message: "this bureau does not move desktops between hosts"}
	}
	d, err := s.migrations.Migrate(c.Request.Context(), c.Param("id"), req.Host, actor(c))
	return reply{http.StatusAccepted, d}, err
}

// cancelMigration stops a migration under way; the desktop keeps running
// where it was.
func (s *hostHandlers) cancelMigration(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	if s.migrations == nil {
		return reply{}, &desktop.ConflictError{Message: "the desktop is not migrating"}
	}
	if err := s.migrations.CancelMigration(c.Request.Context(), c.Param("id"), actor(c)); err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusAccepted, body: gin.H{"cancelling": true}}, nil
}
