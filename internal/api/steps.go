package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
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

// Keys under which handle and fail leave a call's outcome for its step.
const (
	stepReplyKey = "bureau.step.reply"
	stepErrorKey = "bureau.step.error"
)

// StepThumbnailModes are the values of Deps.StepThumbnails.
var StepThumbnailModes = []string{"both", "after", "off"}

// thumbWidth is the width of a step's thumbnails (JPEG).
const (
	thumbWidth   = 320
	thumbQuality = 60
)

// stepsRoutes serves the step log.
func (s *server) stepsRoutes(v1 *gin.RouterGroup) {
	v1.GET("/desktops/:id/steps", s.listSteps)
	v1.GET("/desktops/:id/steps/export", s.handle(s.exportSteps))
	v1.GET("/desktops/:id/steps/:seq", s.handle(s.getStep))
	v1.GET("/desktops/:id/steps/:seq/thumbnails/:which", s.handle(s.stepThumbnail))
	v1.POST("/desktops/:id/steps/:seq/revert", s.handle(s.revertToStep))
	v1.GET("/desktops/:id/checkpoints", s.handle(s.getCheckpointPolicy))
	v1.PUT("/desktops/:id/checkpoints", s.handle(s.putCheckpointPolicy))
}

// stepped records a call to h as a step of its desktop: who made it,
// what it asked, what came of it, and the screen before and after.
// Calls that name no desktop of the caller's are not steps (h refuses
// them).
func (s *server) stepped(kind string, h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.Steps == nil {
			h(c)
			return
		}
		d, err := s.owned(c)
		if err != nil {
			h(c)
			return
		}
		input := s.stepInput(c, kind)
		checkpoint, missed, err := s.checkpoint(c, d, kind)
		if err != nil {
			s.fail(c, err)
			return
		}
		var before []byte
		if s.StepThumbnails != "off" {
			before = s.shotBefore(c.Request.Context(), d)
		}
		start := time.Now()
		c.Set(stepReplyKey, nil)
		h(c)
		st := &steps.Step{DesktopID: d.ID, At: start, DurationMS: time.Since(start).Milliseconds(),
			Actor: actor(c), Kind: kind, Input: input, Status: c.Writer.Status(), Checkpoint: checkpoint, CheckpointError: missed}
		if msg, ok := c.Get(stepErrorKey); ok {
			st.Error = msg.(string)
		}
		r, _ := c.Get(stepReplyKey)
		if kind == steps.KindClipboard || st.Error != "" {
			r = nil // the clipboard's text is not kept
		}
		st.Result = stepResult(r)
		if s.StepThumbnails == "off" {
			go s.record(st, nil, nil)
			return
		}
		s.shotAfter(st, before, d.DomainName())
	}
}

// noteStepResult leaves what a call answered for the step it is (if it
// is one).
func noteStepResult(c *gin.Context, v any) {
	if _, ok := c.Get(stepReplyKey); ok {
		c.Set(stepReplyKey, v)
	}
}

// thumbnailOf is a small picture of a desktop's screen (nil when the
// picture fails: a step is recorded without it).
func (s *server) thumbnailOf(ctx context.Context, domain string) []byte {
	img, err := s.Computer.Screenshot(ctx, domain, computer.ShotOptions{Format: "jpeg", Width: thumbWidth, Quality: thumbQuality})
	if err != nil {
		return nil
	}
	return img.Data
}

// maxStepText bounds a text field kept in a step (typed text, a command,
// output).
const maxStepText = 4096

func clip(s string) string {
	if len(s) <= maxStepText {
		return s
	}
	return s[:maxStepText] + fmt.Sprintf("… (%d bytes in all)", len(s))
}

// stepInput is what a call asks, as a step keeps it: the actions of a
// computer call, the command of an exec (environment names, not values;
// secrets by name), the path of a file call, the size of a clipboard
// text. The body is read here and handed on to the handler unchanged.
func (s *server) stepInput(c *gin.Context, kind string) json.RawMessage {
	var v any
	switch kind {
	case steps.KindComputer, steps.KindExec, steps.KindClipboard:
		body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxBody+1))
		c.Request.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), c.Request.Body))
		if err != nil {
			break
		}
		v = bodyInput(kind, body)
	case steps.KindFileWrite, steps.KindFileDelete:
		q := gin.H{"path": c.Query("path")}
		for _, k := range []string{"user", "mode", "recursive", "parents"} {
			if x := c.Query(k); x != "" {
				q[k] = x
			}
		}
		v = q
	}
	b, err := json.Marshal(v)
	if err != nil || v == nil {
		return json.RawMessage(`{}`)
	}
	return b
}

func bodyInput(kind string, body []byte) any {
	switch kind {
	case steps.KindComputer:
		var r computer.Request
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		actions := r.Actions
		if r.Action.Action != "" || r.Action.Type != "" {
			actions = append([]computer.Action{r.Action}, actions...)
		}
		for i := range actions {
			actions[i].Text = clip(actions[i].Text)
		}
		return gin.H{"actions": actions, "display": r.Display, "screenshot": r.Screenshot}
	case steps.KindExec:
		var r guest.ExecRequest
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		env := []string{}
		for k := range r.Env {
			env = append(env, k)
		}
		return gin.H{"cmd": clip(r.Cmd), "argv": r.Argv, "cwd": r.Cwd, "user": r.User, "env": env,
			"secrets": r.Secrets, "background": r.Background, "name": r.Name, "timeout_s": r.TimeoutS}
	case steps.KindClipboard:
		var r struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		return gin.H{"chars": len([]rune(r.Text))}
	}
	return nil
}

// stepResult is what a call answered, as a step keeps it: without
// images, with output clipped.
func stepResult(r any) json.RawMessage {
	switch v := r.(type) {
	case *computer.Result:
		if v == nil {
			break
		}
		out := *v
		out.Screenshot = nil
		out.Results = append([]computer.StepResult(nil), v.Results...)
		for i := range out.Results {
			out.Results[i].Image = nil
		}
		r = out
	case *guest.ExecResult:
		if v == nil {
			break
		}
		out := *v
		out.Stdout, out.Stderr = clip(v.Stdout), clip(v.Stderr)
		r = out
	}
	b, err := json.Marshal(r)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
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
func (s *server) listSteps(c *gin.Context) {
	d, err := s.owned(c)
	if err == nil && s.Steps == nil {
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
		list, err := s.Steps.List(ctx, d.ID, page)
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
func (s *server) followSteps(c *gin.Context, desktopID string, after int64) {
	ctx := c.Request.Context()
	f, stop := s.Steps.Follow(desktopID) // before reading the past: none is missed
	defer stop()
	w := c.Writer
	startSSE(w, "bureau step log of "+desktopID)
	for {
		list, err := s.Steps.List(ctx, desktopID, steps.Page{After: after, Limit: 1000})
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
				list, _ := s.Steps.List(ctx, desktopID, steps.Page{After: after, Limit: 1000})
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

func (s *server) getStep(c *gin.Context) (reply, error) {
	d, seq, err := s.stepOf(c)
	if err != nil {
		return reply{}, err
	}
	st, err := s.Steps.Get(c.Request.Context(), d.ID, seq)
	return reply{http.StatusOK, st}, err
}

func (s *server) stepOf(c *gin.Context) (*desktop.Desktop, int64, error) {
	d, err := s.owned(c)
	if err != nil {
		return nil, 0, err
	}
	if s.Steps == nil {
		return nil, 0, errNoSteps
	}
	seq, err := stepSeq(c)
	return d, seq, err
}

func (s *server) stepThumbnail(c *gin.Context) (reply, error) {
	d, seq, err := s.stepOf(c)
	if err != nil {
		return reply{}, err
	}
	w, err := steps.ParseWhich(c.Param("which"))
	if err != nil {
		return reply{}, &desktop.ValidationError{Field: "which", Message: err.Error()}
	}
	b, err := s.Steps.Thumbnail(c.Request.Context(), d.ID, seq, w)
	if err != nil {
		return reply{}, err
	}
	c.Header("Cache-Control", "private, max-age=86400")
	c.Data(http.StatusOK, "image/jpeg", b)
	return reply{}, nil
}
