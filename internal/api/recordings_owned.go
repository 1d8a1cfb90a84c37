package api

import (
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/recording"
	"github.com/gin-gonic/gin"
)

// ownedRecordingsRoutes reach the caller's recordings by their id alone,
// those of deleted desktops (kept) included; an admin reaches everyone's.
func (s *recordingHandlers) ownedRecordingsRoutes(v1 *gin.RouterGroup) {
	v1.GET("/recordings", s.handle(s.listOwnedRecordings))
	v1.GET("/recordings/:rid", s.handle(s.getOwnedRecording))
	v1.GET("/recordings/:rid/video", s.ownedRecordingVideo)
	v1.DELETE("/recordings/:rid", s.handle(s.deleteOwnedRecording))
}

// ownedRecording returns the recording named in the path if the caller
// may see it: someone else's is "not found", so existence does not leak.
func (s *recordingHandlers) ownedRecording(c *gin.Context) (*recording.Recording, error) {
	if s.recordings == nil || s.kept == nil {
		return nil, errNoRecordings
	}
	rid := c.Param("rid")
	r, err := s.kept.Find(c.Request.Context(), rid)
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
func (s *recordingHandlers) listOwnedRecordings(c *gin.Context) (reply, error) {
	if s.kept == nil {
		return reply{}, errNoRecordings
	}
	list, err := s.kept.ListOwned(c.Request.Context(), ownerFilter(c))
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

func (s *recordingHandlers) getOwnedRecording(c *gin.Context) (reply, error) {
	r, err := s.ownedRecording(c)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, viewOf(r)}, nil
}

func (s *recordingHandlers) ownedRecordingVideo(c *gin.Context) {
	r, err := s.ownedRecording(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.serveVideo(c, r.DesktopID, r.ID)
}

func (s *recordingHandlers) deleteOwnedRecording(c *gin.Context) (reply, error) {
	r, err := s.ownedRecording(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.recordings.Delete(c.Request.Context(), r.DesktopID, r.ID); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
