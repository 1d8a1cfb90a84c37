package loop

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Controls is who holds desktops' input: the agent, or a person who took
// over until they hand it back or go idle. It also makes a person's
// console input into steps (human.go).
type Controls struct {
	*env
	// recordingAt says where a time falls in the recording of a desktop's
	// screen being made (Config.RecordingAt; may be nil).
	recordingAt func(desktopID string, t time.Time) (recordingID string, offsetMS int64, ok bool)

	quiet, longest time.Duration

	mu       sync.Mutex
	control  map[string]*holding // by desktop id; absent: the agent holds it
	sessions map[session]*typing // console sessions' input, by desktop and session
}

// holding is a person's hold on a desktop's input. Input extends it by
// moving last only; its timer, when it fires, looks at last and either
// waits on or hands control back (no timer reset per pointer event).
type holding struct {
	ctl   Control
	idle  time.Duration
	last  time.Time
	timer *time.Timer
	// left is when the holder's last console session closed (zero while
	// one is open, or when they took control through the API).
	left time.Time
}

// LeftGrace is how long control waits for a person whose console closed
// (a reload, a dropped connection) before it goes back to the agent.
const LeftGrace = 30 * time.Second

// until is when control goes back to the agent without more input.
func (h *holding) until() time.Time {
	u := h.last.Add(h.idle)
	if !h.left.IsZero() && h.left.Add(LeftGrace).Before(u) {
		u = h.left.Add(LeftGrace)
	}
	return u
}

// Control says who holds desktopID's input.
func (s *Controls) Control(desktopID string) Control {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.controlLocked(desktopID)
}

func (s *Controls) controlLocked(desktopID string) Control {
	h := s.control[desktopID]
	if h == nil {
		return Control{Holder: HolderAgent}
	}
	c := h.ctl
	u := h.until().UTC().Truncate(time.Millisecond)
	c.Until = &u
	return c
}

// Take gives desktopID's input to p until p releases it, someone else
// takes it, or idle (0: DefaultIdle) passes without input from p.
func (s *Controls) Take(ctx context.Context, desktopID string, p Person, idle time.Duration) Control {
	if idle <= 0 {
		idle = DefaultIdle
	}
	t := time.Now()
	h := &holding{idle: idle, last: t, ctl: Control{Holder: HolderPerson, Person: nameOf(p), By: p.By(),
		Since: t.UTC().Truncate(time.Millisecond), IdleTimeoutS: int(idle.Round(time.Second) / time.Second)}}
	s.mu.Lock()
	was := s.control[desktopID]
	if was != nil {
		was.timer.Stop()
	}
	s.control[desktopID] = h
	h.timer = time.AfterFunc(idle, func() { s.idleCheck(desktopID, h) })
	ctl := s.controlLocked(desktopID)
	s.mu.Unlock()

	msg := fmt.Sprintf("%s took control of the mouse and keyboard (back to the agent after %s without input)", h.ctl.Person, idle)
	if was != nil && was.ctl.By != h.ctl.By {
		msg = fmt.Sprintf("%s took control from %s (back to the agent after %s without input)", h.ctl.Person, was.ctl.Person, idle)
	}
	s.changed(desktopID)
	s.note(ctx, desktopID, "control_taken", p.By(), msg)
	return ctl
}

// Release hands desktopID's input back to the agent (nothing happens when
// the agent holds it).
func (s *Controls) Release(ctx context.Context, desktopID string, p Person) Control {
	s.mu.Lock()
	h := s.control[desktopID]
	if h != nil {
		h.timer.Stop()
		delete(s.control, desktopID)
	}
	s.mu.Unlock()
	if h == nil {
		return Control{Holder: HolderAgent}
	}
	msg := fmt.Sprintf("%s handed control back to the agent", nameOf(p))
	if p.By() != h.ctl.By {
		msg = fmt.Sprintf("%s handed control back to the agent (from %s)", nameOf(p), h.ctl.Person)
	}
	s.changed(desktopID)
	s.note(ctx, desktopID, "control_returned", p.By(), msg)
	return Control{Holder: HolderAgent}
}

// idleCheck runs when h may have gone idle: it hands control back, or
// waits for the idle timeout after the latest input.
func (s *Controls) idleCheck(desktopID string, h *holding) {
	s.mu.Lock()
	if s.control[desktopID] != h || s.stopped() {
		s.mu.Unlock()
		return
	}
	if left := time.Until(h.until()); left > 0 {
		h.timer.Reset(left)
		s.mu.Unlock()
		return
	}
	delete(s.control, desktopID)
	s.mu.Unlock()
	ctx, cancel := s.background()
	defer cancel()
	s.changed(desktopID)
	why := fmt.Sprintf("control went back to the agent after %s without input from %s", h.idle, h.ctl.Person)
	if !h.left.IsZero() && h.left.After(h.last) {
		why = fmt.Sprintf("control went back to the agent: %s closed the console and did not come back within %s", h.ctl.Person, LeftGrace)
	}
	s.note(ctx, desktopID, "control_returned", "bureau", why)
}

// AgentInput refuses (*InControlError) input from actor while a person
// holds desktopID's input, unless actor is who took it.
func (s *Controls) AgentInput(desktopID, actor string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.control[desktopID]
	if h == nil || h.ctl.By == actor {
		return nil
	}
	return &InControlError{Control: s.controlLocked(desktopID)}
}

// ConsoleInput says whether an input message of p's console session goes
// to desktopID: always while the agent holds its input, and only from the
// holder's sessions while a person does (a console link made with the
// token that took over is the holder's too). Input that goes through
// keeps the holder's control and is counted as a person's step. It is
// called for every message, so it only looks at memory.
func (s *Controls) ConsoleInput(desktopID string, p Person, ev InputEvent) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.control[desktopID]
	if h != nil && h.ctl.By != "console/"+p.Console && (p.Actor == "" || h.ctl.By != p.Actor) {
		return false
	}
	t := time.Now()
	if h != nil {
		h.last = t
		h.left = time.Time{}
	}
	s.feed(desktopID, p, ev, t)
	return true
}

// Left is told when the last console session of p on desktopID closed.
// If p holds its input from that console, control goes back to the agent
// after LeftGrace unless p comes back and types or clicks by then.
func (s *Controls) Left(desktopID string, p Person) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.control[desktopID]
	if h == nil || h.ctl.By != "console/"+p.Console {
		return
	}
	h.left = time.Now()
	h.timer.Reset(time.Until(h.until()))
}

// forget drops what is held of deleted desktopID's input, and its console
// sessions' stretches of input (not recorded: the desktop is gone).
func (s *Controls) forget(desktopID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.control[desktopID]; h != nil {
		h.timer.Stop()
		delete(s.control, desktopID)
	}
	for k, ty := range s.sessions {
		if k.desktopID == desktopID {
			if ty.ep != nil {
				ty.ep.timer.Stop()
			}
			delete(s.sessions, k)
		}
	}
}
