package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
)

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

// stepRecorder records calls as steps of their desktop (stepped): what
// was asked and answered, pictures of the screen (step_shots.go) and the
// checkpoint taken before (checkpoints.go).
type stepRecorder struct {
	*core
	steps Steps // nil: no step log kept
	// computer takes the pictures of the screen.
	computer Computer
	// snapshots takes checkpoints and prunes them.
	snapshots Snapshots
	// thumbnails is Deps.StepThumbnails: which pictures steps keep.
	thumbnails string
	shots      stepShots
	// checkpoints takes each desktop's automatic checkpoints one at a time.
	checkpoints checkpointLocks
}

// stepped records a call to h as a step of its desktop: who made it,
// what it asked, what came of it, and the screen before and after.
// Calls that name no desktop of the caller's are not steps (h refuses
// them).
func (s *stepRecorder) stepped(kind string, h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.steps == nil {
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
		if s.thumbnails != "off" {
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
		if s.thumbnails == "off" {
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
func (s *stepRecorder) thumbnailOf(ctx context.Context, domain string) []byte {
	img, err := s.computer.Screenshot(ctx, domain, computer.ShotOptions{Format: "jpeg", Width: thumbWidth, Quality: thumbQuality})
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
func (s *stepRecorder) stepInput(c *gin.Context, kind string) json.RawMessage {
	var v any
	switch kind {
	case steps.KindComputer, steps.KindExec, steps.KindClipboard:
		body := peekBody(c)
		if body == nil { // the body could not be read: the handler says so
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
		actions := r.Listed()
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
