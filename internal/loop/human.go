package loop

import (
	"encoding/json"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

// A person's input through the console becomes steps of kind human: one
// per stretch of input from one console session, which ends after a few
// quiet seconds (or when it has gone on for a minute), if in it they
// pressed a key or a button.

// session names a console session on a desktop.
type session struct{ desktopID, console string }

// typing is what is known of a session's input: the buttons its pointer
// holds, and the stretch of input under way (nil: none).
type typing struct {
	buttons uint8
	ep      *episode
}

// episode is one stretch of a person's input.
type episode struct {
	desktopID   string
	person      Person
	start, last time.Time
	keys        int
	clicks      int
	moves       int
	clipboard   int
	timer       *time.Timer
}

// feed counts ev, input of p's session that went through. Called with
// s.mu held.
func (s *Controls) feed(desktopID string, p Person, ev InputEvent, t time.Time) {
	k := session{desktopID, p.Console}
	ty := s.sessions[k]
	if ty == nil {
		ty = &typing{}
		s.sessions[k] = ty
	}
	if ep := ty.ep; ep != nil && t.Sub(ep.start) >= s.longest {
		ep.timer.Stop()
		ty.ep = nil
		go s.recordEpisode(ep)
	}
	ep := ty.ep
	if ep == nil {
		ep = &episode{desktopID: desktopID, person: p, start: t}
		ep.timer = time.AfterFunc(s.quiet, func() { s.episodeCheck(k, ep) })
		ty.ep = ep
	}
	ep.last = t
	switch {
	case ev.Key:
		if ev.KeyDown {
			ep.keys++
		}
	case ev.Pointer:
		if ev.Buttons&^ty.buttons != 0 {
			ep.clicks++
		} else {
			ep.moves++
		}
		ty.buttons = ev.Buttons
	case ev.Clipboard:
		ep.clipboard++
	}
}

// episodeCheck runs when ep may be over: it records it, or waits until
// it could be.
func (s *Controls) episodeCheck(k session, ep *episode) {
	s.mu.Lock()
	ty := s.sessions[k]
	if ty == nil || ty.ep != ep {
		s.mu.Unlock()
		return
	}
	t := time.Now()
	quietAt, longAt := ep.last.Add(s.quiet), ep.start.Add(s.longest)
	if t.Before(quietAt) && t.Before(longAt) {
		next := quietAt
		if longAt.Before(next) {
			next = longAt
		}
		ep.timer.Reset(next.Sub(t))
		s.mu.Unlock()
		return
	}
	ty.ep = nil
	if ty.buttons == 0 {
		delete(s.sessions, k)
	}
	s.mu.Unlock()
	s.recordEpisode(ep)
}

// recordEpisode writes ep to the desktop's step log (in its own
// goroutine: never the console's).
func (s *Controls) recordEpisode(ep *episode) {
	if s.onStep == nil || s.stopped() {
		return
	}
	// A pointer passing over the screen, or the clipboard noVNC hands
	// over by itself, is no step: a person pressed nothing.
	if ep.keys == 0 && ep.clicks == 0 {
		return
	}
	in, _ := json.Marshal(map[string]any{"person": nameOf(ep.person), "session": ep.person.Console,
		"keys": ep.keys, "clicks": ep.clicks, "pointer_moves": ep.moves, "clipboard": ep.clipboard})
	res := []byte("{}")
	if s.recordingAt != nil {
		if id, off, ok := s.recordingAt(ep.desktopID, ep.start); ok {
			res, _ = json.Marshal(map[string]any{"recording": map[string]any{"id": id, "offset_ms": off}})
		}
	}
	ctx, cancel := s.background()
	defer cancel()
	s.step(ctx, &steps.Step{DesktopID: ep.desktopID, At: ep.start.UTC().Truncate(time.Millisecond),
		DurationMS: ep.last.Sub(ep.start).Milliseconds(), Actor: ep.person.By(), Kind: steps.KindHuman,
		Status: 200, Input: in, Result: res})
}
