package api

import (
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

var errNoSchedules = fmt.Errorf("this bureau schedules no backups: %w", desktop.ErrUnavailable)

// schedulesOn says whether this bureau schedules backups.
func (s *backupHandlers) schedulesOn() error {
	if s.schedules == nil {
		return errNoSchedules
	}
	return nil
}

// getSchedule answers the desktop's backup schedule (404 when it has none).
// A desktop token may read its desktop's.
func (s *backupHandlers) getSchedule(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.schedulesOn(); err != nil {
		return reply{}, err
	}
	sc, err := s.schedules.Schedule(c.Request.Context(), d.ID)
	return reply{http.StatusOK, sc}, err
}

// putSchedule sets the desktop's backup schedule whole: what the request
// leaves out takes its default; its first backup is due one period on.
func (s *backupHandlers) putSchedule(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	var req apiv1.BackupScheduleRequest
	if err := decodeOptional(c, &req); err != nil {
		return reply{}, err
	}
	if err := s.schedulesOn(); err != nil {
		return reply{}, err
	}
	sc, err := s.schedules.SetSchedule(c.Request.Context(), d.ID, manager.ScheduleRequest{Target: req.Target,
		EveryMinutes: req.EveryMinutes, KeepLast: req.KeepLast, KeepHourly: req.KeepHourly, KeepDaily: req.KeepDaily,
		KeepWeekly: req.KeepWeekly, Actor: actor(c)})
	return reply{http.StatusOK, sc}, err
}

// deleteSchedule stops the desktop's scheduled backups (none is no error);
// the backups taken stay.
func (s *backupHandlers) deleteSchedule(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.schedulesOn(); err != nil {
		return reply{}, err
	}
	if err := s.schedules.DeleteSchedule(c.Request.Context(), d.ID, actor(c)); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
