package computer

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Verified actions. An action that sends input reports whether the screen
// changed after it: the live framebuffer's mark is taken before the input,
// and after it the framebuffer is watched for the first change, for a
// short window (stopping at the change, so an action that shows its effect
// costs no wait). With expect "change", an action that changed nothing
// stops the request. The pointer is not drawn into the framebuffer (see
// internal/framebuffer/watch.go), so a move or a click on an empty desktop
// is no change; a blinking caret or a clock that ticks is one.

// Verification windows: the default, the longest a request may ask for,
// and the most a plain move waits unless expect asks for its change
// (hover effects are rare and moves must stay fast).
const (
	DefaultVerify = 500 * time.Millisecond
	MaxVerify     = 10 * time.Second
	MoveVerify    = 100 * time.Millisecond
)

// ExpectChange is Request.Expect for "every input action must change the
// screen".
const ExpectChange = "change"

// NoEffectError is an input action after which the screen did not change
// within Window, with expect "change": the actions after it did not run.
type NoEffectError struct {
	// Index is the action's place in the request (0 for a single action).
	Index  int
	Action string
	// At is where the action pointed, in display coordinates (nil: a key
	// or text action; for a drag, where it began).
	At, To *Point
	Window time.Duration
	// Results are the actions run, this one last.
	Results []StepResult
}

func (e *NoEffectError) Error() string {
	where := ""
	switch {
	case e.At != nil && e.To != nil:
		where = fmt.Sprintf(" from (%d, %d) to (%d, %d)", e.At.X, e.At.Y, e.To.X, e.To.Y)
	case e.At != nil:
		where = fmt.Sprintf(" at (%d, %d)", e.At.X, e.At.Y)
	}
	return fmt.Sprintf("actions[%d] %s%s: the screen did not change within %d ms", e.Index, e.Action, where, e.Window.Milliseconds())
}

// CannotVerifyError is a request with expect "change" on a screen bureau
// cannot watch now (Reason says why, as Result.Verify would). Nothing ran,
// unless the watch was lost midway (Index is then the action it was lost
// at, and Results what ran before).
type CannotVerifyError struct {
	Reason  string
	Index   int
	Results []StepResult
}

func (e *CannotVerifyError) Error() string {
	return fmt.Sprintf(`cannot verify that the actions change the screen, as expect "change" asks: %s; leave out expect to run them unchecked`, e.Reason)
}

// Why verification may be impossible (Result.Verify).
const (
	noLiveScreen = "unavailable: screenshots here are the hypervisor's screen dumps (live framebuffers are off), which report no changes"
	liveLost     = "unavailable: bureau has no live copy of this desktop's screen now: its display could not be reached"
)

// verifyWindow is the window a request asks for (0: no verification) and
// whether it expects changes.
func verifyWindow(req Request) (time.Duration, bool, error) {
	expect := false
	switch req.Expect {
	case "":
	case ExpectChange:
		expect = true
	default:
		return 0, false, invalid("expect", `must be "change" or left out`)
	}
	if req.VerifyMS == nil {
		return DefaultVerify, expect, nil
	}
	ms := *req.VerifyMS
	if ms < 0 || time.Duration(ms)*time.Millisecond > MaxVerify {
		return 0, false, invalid("verify_ms", fmt.Sprintf("must be 0 (no check) to %d ms", MaxVerify.Milliseconds()))
	}
	if ms == 0 && expect {
		return 0, false, invalid("verify_ms", `0 turns the check off, which expect "change" needs; leave verify_ms out or give 1..10000`)
	}
	return time.Duration(ms) * time.Millisecond, expect, nil
}

// sendsInput says whether a step sends input, and so is verified: not a
// wait, screenshot, zoom or cursor position (even with a coordinate to
// move to first).
func (s step) sendsInput() bool {
	if s.wait > 0 || s.screenshot || s.region != nil || s.cursor {
		return false
	}
	return s.at != nil || len(s.path) > 0 || s.clicks > 0 || s.press || s.lift || s.scrollV != 0 || s.scrollH != 0 ||
		len(s.keys) > 0 || s.text != ""
}

// moveOnly says whether a step only moves the pointer.
func (s step) moveOnly() bool {
	return s.sendsInput() && len(s.path) == 0 && s.clicks == 0 && !s.press && !s.lift && s.scrollV == 0 &&
		s.scrollH == 0 && len(s.keys) == 0 && s.text == ""
}

// watcher verifies a request's input steps on the live framebuffer.
type watcher struct {
	live   LiveScreen
	domain string
	window time.Duration
	expect bool
	// off says why verification is not possible ("" while it is).
	off string
	// mark is the screen's mark before the next input step, when fresh.
	mark  uint64
	fresh bool
}

// newWatcher sets up verification for steps; it asks for the screen's
// mark once now, so that a screen that cannot be watched is known before
// anything runs. Nil: nothing to verify.
func (c *Computer) newWatcher(ctx context.Context, domain string, window time.Duration, expect bool, steps []step) (*watcher, error) {
	if window == 0 {
		return nil, nil
	}
	inputs := false
	for _, s := range steps {
		inputs = inputs || s.sendsInput()
	}
	if !inputs {
		return nil, nil
	}
	w := &watcher{domain: domain, window: window, expect: expect}
	live, ok := c.screen.(LiveScreen)
	if !ok {
		w.off = noLiveScreen
	} else {
		w.live = live
		if err := w.take(ctx); err != nil {
			return nil, err
		}
	}
	if w.off != "" && expect {
		return nil, &CannotVerifyError{Reason: w.off}
	}
	return w, nil
}

// take reads the screen's mark; a screen that cannot be read turns
// verification off (an error only when the request is being abandoned).
func (w *watcher) take(ctx context.Context) error {
	m, err := w.live.Version(ctx, w.domain)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.off = liveLost
		return nil
	}
	w.mark, w.fresh = m, true
	return nil
}

// before readies the mark for input step i.
func (w *watcher) before(ctx context.Context, i int, done []StepResult) error {
	if w.off != "" || w.fresh {
		return nil
	}
	if err := w.take(ctx); err != nil {
		return err
	}
	if w.off != "" && w.expect {
		return &CannotVerifyError{Reason: w.off, Index: i, Results: done}
	}
	return nil
}

// after watches for input step i's effect and notes it in r; with expect,
// a step that changed nothing is a NoEffectError.
func (w *watcher) after(ctx context.Context, i int, s step, r *StepResult, done []StepResult) error {
	if w.off != "" {
		return nil
	}
	window := w.window
	if s.moveOnly() && !w.expect {
		window = min(window, MoveVerify)
	}
	changed, took, err := w.live.Changed(ctx, w.domain, w.mark, window)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.off = liveLost
		if w.expect {
			return &CannotVerifyError{Reason: w.off, Index: i, Results: done}
		}
		return nil
	}
	// Unchanged through the window: the mark, synced all along, still
	// holds for the next step; after a change it is read again.
	w.fresh = !changed
	r.ScreenChanged = &changed
	if changed {
		ms := took.Milliseconds()
		r.ChangedAfterMS = &ms
		return nil
	}
	if w.expect {
		e := &NoEffectError{Index: i, Action: s.name, At: s.at, Window: window, Results: append(slices.Clip(done), *r)}
		if len(s.path) > 0 {
			e.At, e.To = &s.path[0], &s.path[len(s.path)-1]
		}
		return e
	}
	return nil
}
