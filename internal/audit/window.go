package audit

import (
	"sync"
	"time"
)

// Window admits at most Max events a second and counts the rest: the
// audit log takes only so many failed (unauthenticated) calls, so a flood
// of them cannot fill it.
type Window struct {
	Max int
	mu  sync.Mutex
	// start is the current second's; n what it admitted; over what it
	// turned away; suppressed what every window turned away.
	start      time.Time
	n          int
	suppressed int64
}

// Allow says whether an event at now fits this second's budget. When a
// new second begins, it also returns how many the last busy second turned
// away (to be logged), else 0.
func (w *Window) Allow(now time.Time) (ok bool, missed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.start) >= time.Second {
		missed = w.over()
		w.start, w.n = now, 0
	}
	if w.n >= w.Max {
		w.suppressed++
		w.n++
		return false, missed
	}
	w.n++
	return true, missed
}

func (w *Window) over() int {
	if w.n > w.Max {
		return w.n - w.Max
	}
	return 0
}

// Suppressed is how many events were turned away in all.
func (w *Window) Suppressed() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.suppressed
}
