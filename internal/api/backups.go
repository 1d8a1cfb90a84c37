package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Backups copy desktops' data disks to backup targets, list, verify and
// delete the copies and restore them into new desktops or over a stopped
// desktop's data disk (*manager.Backups).
type Backups interface {
	CreateTarget(ctx context.Context, req manager.TargetRequest) (*desktop.BackupTarget, error)
	Targets(ctx context.Context) ([]*desktop.BackupTarget, error)
	Target(ctx context.Context, idOrName string) (*desktop.BackupTarget, error)
	DeleteTarget(ctx context.Context, idOrName, actor string) error
	Start(ctx context.Context, desktopID string, req manager.BackupRequest) (*desktop.Backup, error)
	List(ctx context.Context, f manager.BackupFilter) ([]*desktop.Backup, error)
	Get(ctx context.Context, id string) (*desktop.Backup, error)
	Restore(ctx context.Context, backupID string, req manager.RestoreRequest) (*desktop.Desktop, error)
	// RestoreOnto writes a backup over a stopped desktop's data disk.
	RestoreOnto(ctx context.Context, backupID string, req manager.RestoreOntoRequest) (*desktop.Desktop, error)
	Verify(ctx context.Context, backupID, actor string) (*desktop.BackupCheck, error)
	// Delete refuses a running backup (*desktop.ConflictError).
	Delete(ctx context.Context, id, actor string) error
}

// BackupSchedules back desktops up by themselves, every so often, and thin
// their backups out (*manager.Backups). Schedule of a desktop without one
// is not found.
type BackupSchedules interface {
	SetSchedule(ctx context.Context, desktopID string, req manager.ScheduleRequest) (*desktop.BackupSchedule, error)
	Schedule(ctx context.Context, desktopID string) (*desktop.BackupSchedule, error)
	DeleteSchedule(ctx context.Context, desktopID, actor string) error
}

// backupHandlers take, list, verify, delete and restore backups, schedule
// them (backup_schedules.go), and keep the targets they go to (admins). A
// backup belongs to its desktop's owner and outlives the desktop: /backups
// reaches those of deleted desktops. A desktop token may back up its
// desktop, list its backups and read its schedule; changing the schedule
// is its owner's (ownerOnly), and the rest (/backups, /backup-targets) is
// outside its desktop and refused by scopeAllows, restores above all (they
// make a desktop) and deletes.
type backupHandlers struct {
	*core
	backups   Backups         // nil: this bureau takes no backups
	schedules BackupSchedules // nil: none scheduled
	// files reads backups' files (nil: it cannot), and guest puts them
	// back into desktops (backup_files.go).
	files BackupFiles
	guest backupGuest
}

func (s *backupHandlers) backupRoutes(v1 *gin.RouterGroup) {
	v1.GET("/backup-targets", s.handle(s.listTargets))
	v1.POST("/backup-targets", s.handle(s.createTarget))
	v1.GET("/backup-targets/:target", s.handle(s.getTarget))
	v1.DELETE("/backup-targets/:target", s.handle(s.deleteTarget))
	v1.GET("/desktops/:id/backups", s.handle(s.listDesktopBackups))
	v1.POST("/desktops/:id/backups", s.rateLimited(rateHeavy, s.handle(s.createBackup)))
	v1.GET("/backups", s.handle(s.listBackups))
	v1.GET("/backups/:backup", s.handle(s.getBackup))
	v1.POST("/backups/:backup/restore", s.rateLimited(rateHeavy, s.handle(s.restoreBackup)))
	v1.POST("/backups/:backup/verify", s.rateLimited(rateHeavy, s.handle(s.verifyBackup)))
	v1.DELETE("/backups/:backup", s.rateLimited(rateHeavy, s.handle(s.deleteBackup)))
	s.backupFileRoutes(v1)
	v1.GET("/desktops/:id/backup-schedule", s.handle(s.getSchedule))
	v1.PUT("/desktops/:id/backup-schedule", s.handle(s.putSchedule))
	v1.DELETE("/desktops/:id/backup-schedule", s.handle(s.deleteSchedule))
}

var errNoBackups = fmt.Errorf("this bureau takes no backups: %w", desktop.ErrUnavailable)

func (s *backupHandlers) on() error {
	if s.backups == nil {
		return errNoBackups
	}
	return nil
}

// admin checks the caller is an admin, then that backups are on.
func (s *backupHandlers) admin(c *gin.Context) error {
	if err := requireAdmin(c); err != nil {
		return err
	}
	return s.on()
}

// ownedBackup returns the backup named in the path if the caller may see
// it: another owner's is "not found", so existence does not leak.
func (s *backupHandlers) ownedBackup(c *gin.Context) (*desktop.Backup, error) {
	if err := s.on(); err != nil {
		return nil, err
	}
	id := c.Param("backup")
	b, err := s.backups.Get(c.Request.Context(), id)
	if err != nil {
		return nil, err
	}
	if !isAdmin(c) && b.Owner != caller(c).Owner {
		return nil, fmt.Errorf("backup %s: %w", id, desktop.ErrNotFound)
	}
	return b, nil
}

func (s *backupHandlers) listTargets(c *gin.Context) (reply, error) {
	if err := s.admin(c); err != nil {
		return reply{}, err
	}
	list, err := s.backups.Targets(c.Request.Context())
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"targets": list}}, nil
}

// createTarget records a target once bureau reached it (and found there no
// backups written with another install's key).
func (s *backupHandlers) createTarget(c *gin.Context) (reply, error) {
	if err := s.admin(c); err != nil {
		return reply{}, err
	}
	var req apiv1.BackupTargetRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	t, err := s.backups.CreateTarget(c.Request.Context(), manager.TargetRequest{Name: req.Name, Kind: req.Kind, Dir: req.Dir,
		S3: req.S3.ToS3Location(), Actor: actor(c)})
	if err != nil {
		return reply{}, err
	}
	c.Header("Location", "/api/v1/backup-targets/"+t.ID)
	return reply{http.StatusCreated, t}, nil
}

func (s *backupHandlers) getTarget(c *gin.Context) (reply, error) {
	if err := s.admin(c); err != nil {
		return reply{}, err
	}
	t, err := s.backups.Target(c.Request.Context(), c.Param("target"))
	return reply{http.StatusOK, t}, err
}

func (s *backupHandlers) deleteTarget(c *gin.Context) (reply, error) {
	if err := s.admin(c); err != nil {
		return reply{}, err
	}
	if err := s.backups.DeleteTarget(c.Request.Context(), c.Param("target"), actor(c)); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}

// createBackup starts a backup of the desktop's data disk: 202 with its
// record, which shows its progress until it ends.
func (s *backupHandlers) createBackup(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	var req apiv1.BackupRequest
	if err := decodeOptional(c, &req); err != nil {
		return reply{}, err
	}
	if err := s.on(); err != nil {
		return reply{}, err
	}
	b, err := s.backups.Start(c.Request.Context(), d.ID, manager.BackupRequest{Target: req.Target, Actor: actor(c)})
	if err != nil {
		return reply{}, err
	}
	c.Header("Location", "/api/v1/backups/"+b.ID)
	return reply{http.StatusAccepted, b}, nil
}

func (s *backupHandlers) listDesktopBackups(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.on(); err != nil {
		return reply{}, err
	}
	return s.list(c, manager.BackupFilter{Owner: ownerFilter(c), DesktopID: d.ID})
}

// listBackups lists the caller's backups (an admin's: everyone's), those
// of deleted desktops included; ?desktop= and ?target= narrow it.
func (s *backupHandlers) listBackups(c *gin.Context) (reply, error) {
	if err := s.on(); err != nil {
		return reply{}, err
	}
	return s.list(c, manager.BackupFilter{Owner: ownerFilter(c), DesktopID: c.Query("desktop"), TargetID: c.Query("target")})
}

func (s *backupHandlers) list(c *gin.Context, f manager.BackupFilter) (reply, error) {
	list, err := s.backups.List(c.Request.Context(), f)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, gin.H{"backups": list}}, nil
}

func (s *backupHandlers) getBackup(c *gin.Context) (reply, error) {
	b, err := s.ownedBackup(c)
	return reply{http.StatusOK, b}, err
}

// restoreBackup makes a new desktop, the backup's owner's (an admin
// restoring someone's backup gives it back to them), whose data disk is the
// backup's: 202 with the desktop, which boots like a create. With desktop
// instead of name, it writes the backup over that stopped desktop's data
// disk (the owner's own desktop): 202 with the desktop, reverting.
func (s *backupHandlers) restoreBackup(c *gin.Context) (reply, error) {
	b, err := s.ownedBackup(c)
	if err != nil {
		return reply{}, err
	}
	var req apiv1.RestoreRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	var d *desktop.Desktop
	switch {
	case req.Name != "" && req.Desktop != "":
		return reply{}, &desktop.ValidationError{Field: "desktop", Message: "give name (a new desktop) or desktop (restore over its data disk), not both"}
	case req.Desktop != "":
		var onto *desktop.Desktop
		if onto, err = s.ownedRef(c, req.Desktop); err != nil {
			return reply{}, err
		}
		if onto.Owner != b.Owner {
			return reply{}, &desktop.ConflictError{Message: fmt.Sprintf("backup %s is %s's and desktop %s is %s's: a backup is restored only onto its owner's desktops", b.ID, b.Owner, onto.Name, onto.Owner)}
		}
		d, err = s.backups.RestoreOnto(c.Request.Context(), b.ID, manager.RestoreOntoRequest{Desktop: onto.ID, ReplaceDataDisk: req.ReplaceDataDisk,
			Actor: actor(c), Unlimited: isAdmin(c)})
	case req.ReplaceDataDisk:
		return reply{}, &desktop.ValidationError{Field: "replace_data_disk", Message: "replace_data_disk goes with desktop, the desktop whose data disk the backup replaces"}
	default:
		d, err = s.backups.Restore(c.Request.Context(), b.ID, manager.RestoreRequest{Name: req.Name, Owner: b.Owner,
			Actor: actor(c), Unlimited: isAdmin(c)})
	}
	if err != nil {
		return reply{}, err
	}
	c.Header("Location", "/api/v1/desktops/"+d.ID)
	return reply{http.StatusAccepted, d}, nil
}

// verifyBackup reads back every chunk the backup uses and checks it.
func (s *backupHandlers) verifyBackup(c *gin.Context) (reply, error) {
	b, err := s.ownedBackup(c)
	if err != nil {
		return reply{}, err
	}
	check, err := s.backups.Verify(c.Request.Context(), b.ID, actor(c))
	return reply{http.StatusOK, check}, err
}

// deleteBackup removes a backup from its target (its manifest; the chunks
// no other backup uses are swept in the background) and its record.
func (s *backupHandlers) deleteBackup(c *gin.Context) (reply, error) {
	b, err := s.ownedBackup(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.backups.Delete(c.Request.Context(), b.ID, actor(c)); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
