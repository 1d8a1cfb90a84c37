package api

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/recording"
	"github.com/gin-gonic/gin"
)

// Recordings records desktops' screens.
type Recordings interface {
	Start(ctx context.Context, d *desktop.Desktop, o recording.Options, actor string) (*recording.Recording, error)
	Stop(ctx context.Context, desktopID, why string) (*recording.Recording, error)
	List(ctx context.Context, desktopID string) ([]*recording.Recording, error)
	Get(ctx context.Context, desktopID, id string) (*recording.Recording, error)
	Video(ctx context.Context, desktopID, id string) (*os.File, *recording.Recording, error)
	Delete(ctx context.Context, desktopID, id string) error
	Active(desktopID string) *recording.Recording
}

// KeptRecordings keeps recordings past their desktop: kept ones outlive
// its deletion and stay reachable by their owner.
type KeptRecordings interface {
	// SetKept marks a recording kept (it outlives its desktop) or not;
	// KeepAll keeps all of a desktop's, Unkeep undoes that.
	SetKept(ctx context.Context, desktopID, id string, kept bool) (*recording.Recording, error)
	KeepAll(ctx context.Context, desktopID string) ([]string, error)
	Unkeep(ctx context.Context, desktopID string, ids []string) error
	// Forget removes a deleted desktop's recordings but the kept ones.
	Forget(ctx context.Context, desktopID string) error
	// Find and ListOwned reach recordings whose desktop may be gone.
	Find(ctx context.Context, id string) (*recording.Recording, error)
	ListOwned(ctx context.Context, owner string) ([]*recording.Recording, error)
}

// recordingHandlers start, stop, serve, keep and delete recordings of
// desktops' screens.
type recordingHandlers struct {
	*core
	recordings Recordings // nil: none made
	// kept keeps recordings past their desktop (nil with recordings).
	kept KeptRecordings
}

func (s *recordingHandlers) recordingsRoutes(v1 *gin.RouterGroup) {
	v1.GET("/desktops/:id/recordings", s.handle(s.listRecordings))
	v1.POST("/desktops/:id/recordings", s.handle(s.startRecording))
	v1.GET("/desktops/:id/recordings/:rid", s.handle(s.getRecording))
	v1.POST("/desktops/:id/recordings/:rid/stop", s.handle(s.stopRecording))
	v1.GET("/desktops/:id/recordings/:rid/video", s.recordingVideo)
	v1.PATCH("/desktops/:id/recordings/:rid", s.handle(s.keepRecording))
	v1.DELETE("/desktops/:id/recordings/:rid", s.handle(s.deleteRecording))
	s.ownedRecordingsRoutes(v1)
}

var errNoRecordings = fmt.Errorf("this bureau makes no recordings: %w", desktop.ErrNotFound)

// recordingsOf returns the caller's desktop named in the path.
func (s *recordingHandlers) recordingsOf(c *gin.Context) (*desktop.Desktop, error) {
	d, err := s.owned(c)
	if err == nil && s.recordings == nil {
		err = errNoRecordings
	}
	return d, err
}

// recordingView is a recording as the API shows it.
type recordingView struct {
	*recording.Recording
	DurationMS int64  `json:"duration_ms"`
	VideoURL   string `json:"video_url,omitempty"`
}

// viewIn is viewOf for the routes of r's desktop d, which found it alive.
func viewIn(d *desktop.Desktop, r *recording.Recording) recordingView {
	r.DesktopName, r.DesktopDeleted = d.Name, d.DeletedAt != nil
	return viewOf(r)
}

func viewOf(r *recording.Recording) recordingView {
	v := recordingView{Recording: r, DurationMS: r.DurationMS()}
	switch {
	case r.State == recording.StateRecording || r.SizeBytes == 0:
	case r.DesktopDeleted: // only the owner's routes reach it now
		v.VideoURL = "/api/v1/recordings/" + r.ID + "/video"
	default:
		v.VideoURL = "/api/v1/desktops/" + r.DesktopID + "/recordings/" + r.ID + "/video"
	}
	return v
}

func (s *recordingHandlers) listRecordings(c *gin.Context) (reply, error) {
	d, err := s.recordingsOf(c)
	if err != nil {
		return reply{}, err
	}
	list, err := s.recordings.List(c.Request.Context(), d.ID)
	if err != nil {
		return reply{}, err
	}
	out := make([]recordingView, 0, len(list))
	for _, r := range list {
		out = append(out, viewIn(d, r))
	}
	return reply{http.StatusOK, gin.H{"recordings": out}}, nil
}

// startRecording records the desktop's screen (woken first if it was
// napping or hibernated) until stopped, max_seconds, or the desktop stops.
func (s *recordingHandlers) startRecording(c *gin.Context) (reply, error) {
	if _, err := s.recordingsOf(c); err != nil {
		return reply{}, err
	}
	var o recording.Options
	if err := decodeOptional(c, &o); err != nil {
		return reply{}, err
	}
	d, err := s.running(c, "record")
	if err != nil {
		return reply{}, err
	}
	r, err := s.recordings.Start(c.Request.Context(), d, o, actor(c))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, viewIn(d, r)}, nil
}

func (s *recordingHandlers) getRecording(c *gin.Context) (reply, error) {
	d, err := s.recordingsOf(c)
	if err != nil {
		return reply{}, err
	}
	r, err := s.recordings.Get(c.Request.Context(), d.ID, c.Param("rid"))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, viewIn(d, r)}, nil
}

// stopRecording ends a recording under way and answers once its file is
// complete (a recording already ended is answered as it is).
func (s *recordingHandlers) stopRecording(c *gin.Context) (reply, error) {
	d, err := s.recordingsOf(c)
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	r, err := s.recordings.Get(ctx, d.ID, c.Param("rid"))
	if err != nil {
		return reply{}, err
	}
	if r.State == recording.StateRecording {
		if r, err = s.recordings.Stop(ctx, d.ID, "stopped by "+actor(c)); err != nil {
			return reply{}, err
		}
	}
	return reply{http.StatusOK, viewIn(d, r)}, nil
}

// recordingVideo serves a finished recording (WebM).
func (s *recordingHandlers) recordingVideo(c *gin.Context) {
	d, err := s.recordingsOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.serveVideo(c, d.ID, c.Param("rid"))
}

// serveVideo serves a desktop's finished recording (WebM), with ranges so
// a player can seek; download=true offers it as a file.
func (s *recordingHandlers) serveVideo(c *gin.Context, desktopID, rid string) {
	f, r, err := s.recordings.Video(c.Request.Context(), desktopID, rid)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer f.Close()
	desk := r.DesktopName
	if desk == "" {
		desk = r.DesktopID
	}
	name := fmt.Sprintf("%s-%s.webm", desk, r.StartedAt.Format("20060102-150405"))
	if c.Query("download") == "true" {
		c.Header("Content-Disposition", `attachment; filename="`+name+`"`)
	}
	c.Header("Content-Type", "video/webm")
	c.Header("Cache-Control", "private, max-age=3600")
	modified := r.StartedAt
	if r.EndedAt != nil {
		modified = *r.EndedAt
	}
	http.ServeContent(c.Writer, c.Request, name, modified.Truncate(time.Second), f)
}

func (s *recordingHandlers) deleteRecording(c *gin.Context) (reply, error) {
	d, err := s.recordingsOf(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.recordings.Delete(c.Request.Context(), d.ID, c.Param("rid")); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}

// keepRecording marks a recording kept ({"kept": true}: it stays when the
// desktop is deleted, and the size budget never removes it) or not.
func (s *recordingHandlers) keepRecording(c *gin.Context) (reply, error) {
	d, err := s.recordingsOf(c)
	if err != nil {
		return reply{}, err
	}
	var req struct {
		Kept *bool `json:"kept"`
	}
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if req.Kept == nil {
		return reply{}, &desktop.ValidationError{Field: "kept", Message: "give true (keep it when the desktop is deleted) or false"}
	}
	if s.kept == nil {
		return reply{}, errNoRecordings
	}
	r, err := s.kept.SetKept(c.Request.Context(), d.ID, c.Param("rid"), *req.Kept)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, viewIn(d, r)}, nil
}
