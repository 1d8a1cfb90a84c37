package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
)

// Steps is each desktop's step log.
type Steps interface {
	Record(ctx context.Context, st *steps.Step, before, after []byte) error
	List(ctx context.Context, desktopID string, p steps.Page) ([]*steps.Step, error)
	Get(ctx context.Context, desktopID string, seq int64) (*steps.Step, error)
	Thumbnail(ctx context.Context, desktopID string, seq int64, w steps.Which) ([]byte, error)
	Follow(desktopID string) (f *steps.Follower, stop func())
	// Each desktop's automatic checkpoint policy, and which of its steps
	// are due a checkpoint under it.
	CheckpointPolicy(ctx context.Context, desktopID string) (steps.CheckpointPolicy, error)
	SetCheckpointPolicy(ctx context.Context, desktopID string, p steps.CheckpointPolicy) (steps.CheckpointPolicy, error)
	CheckpointDue(desktopID, kind string, p steps.CheckpointPolicy, asked bool) bool
	CheckpointMissed(desktopID string)
}

// stepHandlers serve desktops' step logs, their export, reverting to a
// step, and the automatic checkpoint policy.
type stepHandlers struct {
	*core
	steps Steps
	// snapshots finds and reverts to the snapshot before a step.
	snapshots Snapshots
}

// stepsRoutes serves the step log.
func (s *stepHandlers) stepsRoutes(v1 *gin.RouterGroup) {
	v1.GET("/desktops/:id/steps", s.listSteps)
	v1.GET("/desktops/:id/steps/export", s.handle(s.exportSteps))
	v1.GET("/desktops/:id/steps/:seq", s.handle(s.getStep))
	v1.GET("/desktops/:id/steps/:seq/thumbnails/:which", s.handle(s.stepThumbnail))
	v1.POST("/desktops/:id/steps/:seq/revert", s.handle(s.revertToStep))
	v1.GET("/desktops/:id/checkpoints", s.handle(s.getCheckpointPolicy))
	v1.PUT("/desktops/:id/checkpoints", s.handle(s.putCheckpointPolicy))
}

// stepsPage reads after, before, limit and newest (limit's default is
// given).
func stepsPage(c *gin.Context, limit int) (steps.Page, error) {
	p := steps.Page{Limit: limit}
	var err error
	for name, dst := range map[string]*int64{"after": &p.After, "before": &p.Before} {
		if v := c.Query(name); v != "" {
			if *dst, err = strconv.ParseInt(v, 10, 64); err != nil || *dst < 0 {
				return p, &desktop.ValidationError{Field: name, Message: "must be a step number (0 or more)"}
			}
		}
	}
	if v := c.Query("limit"); v != "" {
		if p.Limit, err = strconv.Atoi(v); err != nil || p.Limit < 1 || p.Limit > 1000 {
			return p, &desktop.ValidationError{Field: "limit", Message: "must be 1 to 1000"}
		}
	}
	p.Newest, err = boolQuery(c, "newest")
	return p, err
}

func stepSeq(c *gin.Context) (int64, error) {
	n, err := strconv.ParseInt(c.Param("seq"), 10, 64)
	if err != nil || n < 1 {
		return 0, &desktop.ValidationError{Field: "seq", Message: "must be a step number (1 or more)"}
	}
	return n, nil
}

// listSteps lists a desktop's steps after a number, oldest first; with
// follow=true it is a server-sent event stream of them ("step" events),
// the ones already recorded first, then each new one as it is recorded.
func (s *stepHandlers) listSteps(c *gin.Context) {
	d, err := s.owned(c)
	if err == nil && s.steps == nil {
		err = errNoSteps
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	page, err := stepsPage(c, 100)
	if err != nil {
		s.fail(c, err)
		return
	}
	follow, err := boolQuery(c, "follow")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if !follow {
		list, err := s.steps.List(ctx, d.ID, page)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"steps": list})
		return
	}
	if page.Before > 0 || page.Newest {
		s.fail(c, &desktop.ValidationError{Field: "follow", Message: "a followed log starts after a step: before and newest do not apply"})
		return
	}
	s.followSteps(c, d.ID, page.After)
}

var errNoSteps = fmt.Errorf("this bureau keeps no step log: %w", desktop.ErrNotFound)

// followSteps streams steps numbered above after.
func (s *stepHandlers) followSteps(c *gin.Context, desktopID string, after int64) {
	ctx := c.Request.Context()
	f, stop := s.steps.Follow(desktopID) // before reading the past: none is missed
	defer stop()
	w := c.Writer
	startSSE(w, "bureau step log of "+desktopID)
	for {
		list, err := s.steps.List(ctx, desktopID, steps.Page{After: after, Limit: 1000})
		if err != nil {
			writeEvent(w, "error", gin.H{"message": err.Error()})
			w.Flush()
			return
		}
		for _, st := range list {
			writeEvent(w, "step", st)
			after = st.Seq
		}
		if len(list) < 1000 {
			break
		}
	}
	w.Flush()
	keepalive := time.NewTicker(streamCheckEvery)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if !s.keepStreaming(c) {
				return
			}
		case st := <-f.C:
			if n := f.Dropped(); n > 0 {
				// Fell behind: read the gap from the log.
				list, _ := s.steps.List(ctx, desktopID, steps.Page{After: after, Limit: 1000})
				for _, x := range list {
					if x.Seq < st.Seq {
						writeEvent(w, "step", x)
						after = x.Seq
					}
				}
			}
			if st.Seq > after {
				writeEvent(w, "step", st)
				after = st.Seq
			}
		}
		w.Flush()
	}
}

func (s *stepHandlers) getStep(c *gin.Context) (reply, error) {
	d, seq, err := s.stepOf(c)
	if err != nil {
		return reply{}, err
	}
	st, err := s.steps.Get(c.Request.Context(), d.ID, seq)
	return reply{http.StatusOK, st}, err
}

func (s *stepHandlers) stepOf(c *gin.Context) (*desktop.Desktop, int64, error) {
	d, err := s.owned(c)
	if err != nil {
		return nil, 0, err
	}
	if s.steps == nil {
		return nil, 0, errNoSteps
	}
	seq, err := stepSeq(c)
	return d, seq, err
}

func (s *stepHandlers) stepThumbnail(c *gin.Context) (reply, error) {
	d, seq, err := s.stepOf(c)
	if err != nil {
		return reply{}, err
	}
	w, err := steps.ParseWhich(c.Param("which"))
	if err != nil {
		return reply{}, &desktop.ValidationError{Field: "which", Message: err.Error()}
	}
	b, err := s.steps.Thumbnail(c.Request.Context(), d.ID, seq, w)
	if err != nil {
		return reply{}, err
	}
	c.Header("Cache-Control", "private, max-age=86400")
	c.Data(http.StatusOK, "image/jpeg", b)
	return reply{}, nil
}
