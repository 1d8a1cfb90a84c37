package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
)

// deleteDesktop deletes a desktop and what goes with it: its recordings
// but the kept ones (keep_recordings=true keeps them all), its own
// secrets and its share links.
func (s *desktopHandlers) deleteDesktop(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil {
		return reply{}, err
	}
	deleteData, err := boolQuery(c, "delete_data")
	if err != nil {
		return reply{}, err
	}
	keepRecordings, err := boolQuery(c, "keep_recordings")
	if err != nil {
		return reply{}, err
	}
	keptNow, err := s.keepRecordingsOnDelete(c, keepRecordings)
	if err != nil {
		return reply{}, err
	}
	res, err := s.lifecycle.Delete(c.Request.Context(), c.Param("id"), actor(c), deleteData)
	if err != nil {
		s.unkeepRecordings(c, keptNow)
		return reply{}, err
	}
	s.forgetRecordings(c)
	if s.secrets != nil {
		// The desktop's own secrets go with it (its owner's stay).
		if err := s.secrets.ForgetDesktop(c.Request.Context(), c.Param("id")); err != nil {
			s.log.Error("delete the desktop's secrets", "desktop", c.Param("id"), "err", err)
		}
	}
	if s.urls != nil {
		if err := s.urls.Forget(c.Request.Context(), c.Param("id")); err != nil {
			s.log.Error("delete the desktop's share links", "desktop", c.Param("id"), "err", err)
		}
	}
	return reply{http.StatusOK, res}, nil
}

// keepRecordingsOnDelete marks all the desktop's recordings kept when its
// deletion is to leave them (keep_recordings=true); it returns those it
// changed, for unkeepRecordings should the deletion fail.
func (s *desktopHandlers) keepRecordingsOnDelete(c *gin.Context, keep bool) ([]string, error) {
	if !keep || s.keptRecordings == nil {
		return nil, nil
	}
	return s.keptRecordings.KeepAll(c.Request.Context(), c.Param("id"))
}

func (s *desktopHandlers) unkeepRecordings(c *gin.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	if err := s.keptRecordings.Unkeep(context.WithoutCancel(c.Request.Context()), c.Param("id"), ids); err != nil {
		s.log.Error("unkeep recordings after a failed delete", "desktop", c.Param("id"), "err", err)
	}
}

// forgetRecordings removes a deleted desktop's recordings that are not
// kept, before the delete is answered (bureau's follower of desktop
// changes does it too, for desktops deleted otherwise).
func (s *desktopHandlers) forgetRecordings(c *gin.Context) {
	if s.keptRecordings == nil {
		return
	}
	if err := s.keptRecordings.Forget(context.WithoutCancel(c.Request.Context()), c.Param("id")); err != nil {
		s.log.Error("delete the desktop's recordings", "desktop", c.Param("id"), "err", err)
	}
}
