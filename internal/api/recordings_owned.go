package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/recording"
	"github.com/gin-gonic/gin"
)

// ownedRecordingsRoutes reach the caller's recordings by their id alone,
// those of deleted desktops (kept) included; an admin reaches everyone's.
func (s *server) ownedRecordingsRoutes(v1 *gin.RouterGroup) {
	v1.GET("/recordings", s.handle(s.listOwnedRecordings))
	v1.GET("/recordings/:rid", s.handle(s.getOwnedRecording))
	v1.GET("/recordings/:rid/video", s.ownedRecordingVideo)
	v1.DELETE("/recordings/:rid", s.handle(s.deleteOwnedRecording))
}

// ownedRecording returns the recording named in the path if the caller
// may see it: someone else's is "not found", so existence does not leak.
func (s *server) ownedRecording(c *gin.Context) (*recording.Recording, error) {
	if s.Recordings == nil || s.KeptRecordings == nil {
		return nil, errNoRecordings
	}
	rid := c.Param("rid")
	r, err := s.KeptRecordings.Find(c.Request.Context(), rid)
	if err != nil {
		return nil, err
	}
	if !isAdmin(c) && r.Owner != caller(c).Owner {
		return nil, fmt.Errorf("recording %s: %w", rid, desktop.ErrNotFound)
	}
	return r, nil
}

// listOwnedRecordings lists the caller's recordings (an admin's: all),
// oldest first, with what they take on disk and what of it is kept.
func (s *server) listOwnedRecordings(c *gin.Context) (reply, error) {
	if s.KeptRecordings == nil {
		return reply{}, errNoRecordings
	}
	list, err := s.KeptRecordings.ListOwned(c.Request.Context(), ownerFilter(c))
	if err != nil {
		return reply{}, err
	}
	out := make([]recordingView, 0, len(list))
	var size, kept int64
	for _, r := range list {
		out = append(out, viewOf(r))
		size += r.SizeBytes
		if r.Kept {
			kept += r.SizeBytes
		}
	}
	return reply{http.StatusOK, gin.H{"recordings": out, "size_bytes": size, "kept_size_bytes": kept}}, nil
}

func (s *server) getOwnedRecording(c *gin.Context) (reply, error) {
	r, err := s.ownedRecording(c)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, viewOf(r)}, nil
}

func (s *server) ownedRecordingVideo(c *gin.Context) {
	r, err := s.ownedRecording(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.serveVideo(c, r.DesktopID, r.ID)
}

func (s *server) deleteOwnedRecording(c *gin.Context) (reply, error) {
	r, err := s.ownedRecording(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.Recordings.Delete(c.Request.Context(), r.DesktopID, r.ID); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}

// keepRecordingsOnDelete marks all the desktop's recordings kept when its
// deletion is to leave them (keep_recordings=true); it returns those it
// changed, for unkeepRecordings should the deletion fail.
func (s *server) keepRecordingsOnDelete(c *gin.Context, keep bool) ([]string, error) {
	if !keep || s.KeptRecordings == nil {
		return nil, nil
	}
	return s.KeptRecordings.KeepAll(c.Request.Context(), c.Param("id"))
}

func (s *server) unkeepRecordings(c *gin.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	if err := s.KeptRecordings.Unkeep(context.WithoutCancel(c.Request.Context()), c.Param("id"), ids); err != nil {
		s.Log.Error("unkeep recordings after a failed delete", "desktop", c.Param("id"), "err", err)
	}
}

// forgetRecordings removes a deleted desktop's recordings that are not
// kept, before the delete is answered (bureau's follower of desktop
// changes does it too, for desktops deleted otherwise).
func (s *server) forgetRecordings(c *gin.Context) {
	if s.KeptRecordings == nil {
		return
	}
	if err := s.KeptRecordings.Forget(context.WithoutCancel(c.Request.Context()), c.Param("id")); err != nil {
		s.Log.Error("delete the desktop's recordings", "desktop", c.Param("id"), "err", err)
	}
}
