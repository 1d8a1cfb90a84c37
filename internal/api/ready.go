package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/readiness"
	"github.com/gin-gonic/gin"
)

// Readiness says whether running desktops are ready: their guest answers
// and their session is up (internal/readiness).
type Readiness interface {
	Status(id string) readiness.Status
	// Check asks the guest now unless the desktop is known ready.
	Check(ctx context.Context, d *desktop.Desktop) readiness.Status
	// Follow starts watching a running desktop (idempotent).
	Follow(d *desktop.Desktop)
	// Wait blocks until it is ready, not followed, or ctx ends.
	Wait(ctx context.Context, id string) readiness.Status
}

// notReady is a 409: the desktop runs but its guest is not ready for the
// call yet.
type notReady struct {
	op      desktop.Op
	name    string
	up      string
	waiting string
}

func (e *notReady) Error() string {
	return fmt.Sprintf("cannot %s desktop %s yet: it is running but not ready (%s); GET /api/v1/desktops/{id}?wait=ready waits for it",
		e.op, e.name, waitingFor(e.waiting))
}

// waitingFor says in words what a desktop waits for.
func waitingFor(w string) string {
	switch w {
	case guest.WaitAgent:
		return "its guest is booting: no agent in it answers yet"
	case guest.WaitUser:
		return "its user is being created by its first-boot setup"
	case guest.WaitSetup:
		return "its first-boot setup (cloud-init) is still running"
	case guest.WaitSession:
		return "its desktop session is starting"
	}
	return "waiting for " + w
}

// ready returns the caller's desktop, running (woken if it slept) and
// ready, or a 409: not running (naming its state) or not_ready (saying
// what it waits for). Routes that need the guest's user or session call
// it: exec, files, computer use, the clipboard, terminals.
func (s *core) ready(c *gin.Context, op desktop.Op) (*desktop.Desktop, error) {
	d, err := s.running(c, op)
	if err != nil {
		return d, err
	}
	return s.readyNow(c, d, op)
}

// readyNow returns d, a running desktop, if it is ready, or a 409
// not_ready saying what it waits for.
func (s *core) readyNow(c *gin.Context, d *desktop.Desktop, op desktop.Op) (*desktop.Desktop, error) {
	if s.readiness == nil {
		return d, nil
	}
	st := s.readiness.Check(c.Request.Context(), d)
	if st.Ready {
		return d, nil
	}
	c.Header("Retry-After", "5")
	up, waiting := st.Up, st.Waiting
	if up == "" {
		up, waiting = readiness.UpBooting, guest.WaitAgent
	}
	return nil, &notReady{op: op, name: d.Name, up: up, waiting: waiting}
}

// Bounds of GET /desktops/{id}?wait=ready.
const (
	defaultReadyWait = 5 * time.Minute
	maxReadyWait     = 15 * time.Minute
	// readyPoll: how often a desktop on its way to running is looked at.
	readyPoll = time.Second
)

// waitReady answers GET /desktops/{id}?wait=ready[&timeout_s=N]: the
// desktop once it is ready or when the time is up (ready false then). A
// desktop asleep is woken (waiting for it is using it); one that is not
// on its way to running (stopped, failed) is a 409 at once.
func (s *desktopHandlers) waitReady(c *gin.Context) (reply, error) {
	limit := defaultReadyWait
	if v := c.Query("timeout_s"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxReadyWait {
			return reply{}, &desktop.ValidationError{Field: "timeout_s", Message: fmt.Sprintf("must be 0..%d seconds", int(maxReadyWait.Seconds()))}
		}
		limit = time.Duration(n) * time.Second
	}
	if s.readiness == nil {
		return reply{}, &conflict{msg: "this bureau does not follow desktops' readiness"}
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), limit)
	defer cancel()
	d, err := s.owned(c)
	for err == nil {
		switch {
		case d.State == desktop.StateRunning:
			s.readiness.Follow(d)
			if st := s.readiness.Wait(ctx, d.ID); st.Ready || ctx.Err() != nil {
				d, err = s.lifecycle.Get(c.Request.Context(), d.ID)
				return reply{http.StatusOK, d}, err
			}
		case comingUp(d.State):
		default:
			if d, err = s.awake(c); err != nil {
				return reply{}, err
			}
			if d.State != desktop.StateRunning && !comingUp(d.State) {
				return reply{}, &desktop.TransitionError{Op: "wait for", State: d.State}
			}
			continue
		}
		select {
		case <-ctx.Done():
			return reply{http.StatusOK, d}, nil
		case <-time.After(readyPoll):
		}
		d, err = s.owned(c)
	}
	return reply{}, err
}

// comingUp: a desktop in this state runs once it is through.
func comingUp(st desktop.State) bool {
	switch st {
	case desktop.StateCreating, desktop.StateStarting, desktop.StateRebooting, desktop.StateResuming,
		desktop.StateReverting, desktop.StateReimaging, desktop.StateMigrating:
		return true
	}
	return false
}
