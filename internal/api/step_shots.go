package api

import (
	"context"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
)

// Pictures of the screen for steps, kept off the path of calls made in
// quick succession. A step's "after" picture is taken once the screen has
// had settleFor to answer and no other call came meanwhile; the next
// call's "before" picture is that one when it is at most reuseWithin old,
// else a fresh one (only after a pause, when 30 ms do not matter). In a
// burst of calls closer than settleFor, the steps inside it go without
// the pictures between them: screenshots there would delay every call
// (each one waits behind the other on QEMU's monitor).
const (
	settleFor   = 250 * time.Millisecond
	reuseWithin = time.Second
)

// stepShots holds, per desktop, the last picture and the step waiting
// for its after picture.
type stepShots struct {
	mu   sync.Mutex
	desk map[string]*deskShots
}

type deskShots struct {
	last    []byte
	lastAt  time.Time
	pending *pendingStep
}

// pendingStep is a step recorded once its after picture is decided.
type pendingStep struct {
	st     *steps.Step
	before []byte
	timer  *time.Timer
	// taking is made when the after picture is being taken and closed
	// once it is.
	taking chan struct{}
}

func (s *stepShots) entry(id string) *deskShots {
	if s.desk == nil {
		s.desk = map[string]*deskShots{}
	}
	ds := s.desk[id]
	if ds == nil {
		ds = &deskShots{}
		s.desk[id] = ds
	}
	return ds
}

// before is the picture of the screen as a call begins (nil: none). The
// step still waiting for its after picture is recorded without it when
// this call comes too soon after it.
func (s *stepRecorder) shotBefore(ctx context.Context, d *desktop.Desktop) []byte {
	sh := &s.shots
	sh.mu.Lock()
	ds := sh.entry(d.ID)
	if p := ds.pending; p != nil {
		if p.taking == nil && p.timer.Stop() {
			ds.pending = nil
			sh.mu.Unlock()
			go s.record(p.st, p.before, nil)
			return nil // in a burst: neither picture
		}
		if ch := p.taking; ch != nil {
			sh.mu.Unlock()
			<-ch // being taken: it is this call's before
			sh.mu.Lock()
		}
	}
	if ds.last != nil && time.Since(ds.lastAt) <= reuseWithin {
		b := ds.last
		sh.mu.Unlock()
		return b
	}
	sh.mu.Unlock()
	if s.thumbnails == "after" || d.State != desktop.StateRunning {
		return nil
	}
	return s.thumbnailOf(ctx, d.DomainName())
}

// shotAfter records st once its after picture is taken (settleFor from
// now, unless another call comes first).
func (s *stepRecorder) shotAfter(st *steps.Step, before []byte, domain string) {
	sh := &s.shots
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ds := sh.entry(st.DesktopID)
	if prev := ds.pending; prev != nil && prev.taking == nil && prev.timer.Stop() {
		// Two calls at once on one desktop: the earlier goes without.
		go s.record(prev.st, prev.before, nil)
	}
	p := &pendingStep{st: st, before: before}
	ds.pending = p
	p.timer = time.AfterFunc(settleFor, func() {
		sh.mu.Lock()
		if ds.pending != p {
			sh.mu.Unlock()
			return
		}
		p.taking = make(chan struct{})
		sh.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		after := s.thumbnailOf(ctx, domain)
		cancel()
		sh.mu.Lock()
		if after != nil {
			ds.last, ds.lastAt = after, time.Now()
		}
		if ds.pending == p {
			ds.pending = nil
		}
		close(p.taking)
		sh.mu.Unlock()
		s.record(st, before, after)
	})
}

// record stores a step.
func (s *stepRecorder) record(st *steps.Step, before, after []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.steps.Record(ctx, st, before, after); err != nil {
		s.log.Warn("recording a step", "desktop", st.DesktopID, "kind", st.Kind, "err", err)
	}
}
