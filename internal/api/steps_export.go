package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
)

// exportSteps gives a desktop's steps for replay and evaluation: as they
// are (format=bureau), or as a conversation in Anthropic's Messages format
// or OpenAI's Responses input items, with the screen after each step
// (images=false leaves the pictures out).
func (s *stepHandlers) exportSteps(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if s.steps == nil {
		return reply{}, errNoSteps
	}
	format := c.DefaultQuery("format", steps.FormatBureau)
	if !slices.Contains(steps.Formats, format) {
		return reply{}, &desktop.ValidationError{Field: "format", Message: "must be one of " + strings.Join(steps.Formats, ", ")}
	}
	images := true
	if c.Query("images") != "" {
		if images, err = boolQuery(c, "images"); err != nil {
			return reply{}, err
		}
	}
	page, err := stepsPage(c, 1000)
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	list, err := s.steps.List(ctx, d.ID, page)
	if err != nil {
		return reply{}, err
	}
	image := func(st *steps.Step) []byte {
		if !images || !st.After {
			return nil
		}
		b, _ := s.steps.Thumbnail(ctx, d.ID, st.Seq, steps.After)
		return b
	}
	var out map[string]any
	switch format {
	case steps.FormatAnthropic:
		out = steps.Anthropic(list, image)
	case steps.FormatOpenAI:
		out = steps.OpenAI(list, image)
	default:
		out = map[string]any{"format": steps.FormatBureau, "steps": list}
	}
	out["desktop_id"] = d.ID
	if len(list) == page.Limit && !page.Newest {
		out["next_after"] = list[len(list)-1].Seq
	}
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-steps-%s.json"`, d.Name, format))
	return reply{http.StatusOK, out}, nil
}

// revertToStep puts the desktop back as it was before a step: reverted to
// the checkpoint taken for it, or else (none was, or it was deleted) the
// newest snapshot taken before the step began. It answers which snapshot
// that was, the last step it holds, and a note when the step's own
// checkpoint is gone.
func (s *stepHandlers) revertToStep(c *gin.Context) (reply, error) {
	d, seq, err := s.stepOf(c)
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	st, err := s.steps.Get(ctx, d.ID, seq)
	if err != nil {
		return reply{}, err
	}
	snaps, err := s.snapshots.ListSnapshots(ctx, d.ID)
	if err != nil {
		return reply{}, err
	}
	var cp *desktop.Snapshot
	for _, sn := range snaps {
		if sn.Name == st.Checkpoint { // the one taken for this step
			cp = sn
			break
		}
		if !sn.CreatedAt.After(st.At) && (cp == nil || sn.CreatedAt.After(cp.CreatedAt)) {
			cp = sn
		}
	}
	if cp == nil && st.Checkpoint != "" {
		return reply{}, &conflict{fmt.Sprintf("step %d's checkpoint %q is gone and no snapshot of this desktop taken before the step began is left", seq, st.Checkpoint)}
	}
	if cp == nil {
		return reply{}, &conflict{fmt.Sprintf(
			"no snapshot of this desktop was taken before step %d began: take one (POST /desktops/%s/snapshots) before the steps you may want to undo", seq, d.ID)}
	}
	// The last step finished when the snapshot was taken.
	var holds int64
	if list, err := s.steps.List(ctx, d.ID, steps.Page{Before: seq, Limit: 1000, Newest: true}); err == nil {
		for _, x := range list {
			if x.Seq < seq && !x.At.Add(time.Duration(x.DurationMS)*time.Millisecond).After(cp.CreatedAt) {
				holds = x.Seq
			}
		}
	}
	reverted, err := s.snapshots.RevertSnapshot(ctx, d.ID, cp.Name, actor(c))
	if err != nil {
		return reply{}, err
	}
	out := gin.H{"desktop": reverted, "snapshot": cp, "holds_through_step": holds}
	if st.Checkpoint != "" && cp.Name != st.Checkpoint {
		// Deleted (an automatic one pruned, say): the snapshot before it.
		out["note"] = fmt.Sprintf("step %d's checkpoint %q is gone: reverted to %q, the newest snapshot taken before the step began (it holds the steps through %d)",
			seq, st.Checkpoint, cp.Name, holds)
	}
	return reply{http.StatusAccepted, out}, nil
}
