package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/images"
	"golang.org/x/term"
)

// logEvery is how often a progress line is written when stderr is not a
// terminal (make's output, CI logs): often enough to show the work moves,
// rarely enough to keep the log readable.
const logEvery = 5 * time.Second

// progressPrinter shows long work on w: one line kept up to date on a
// terminal, else a line at each new phase and at most one every logEvery
// within a phase (the newest report, written when its turn comes even if no
// other follows).
type progressPrinter struct {
	w   io.Writer
	tty bool
	now func() time.Time
	// after runs f after d, like time.AfterFunc (tests run it themselves).
	after func(d time.Duration, f func()) (stop func() bool)

	mu      sync.Mutex
	start   time.Time
	last    time.Time        // when a line was last written
	phase   string           // the phase of that line
	pending *images.Progress // a report waiting for its turn
	stop    func() bool      // cancels the pending report's turn
	open    bool             // a terminal line is waiting for its newline
}

func newProgressPrinter(w *os.File) *progressPrinter {
	return &progressPrinter{w: w, tty: term.IsTerminal(int(w.Fd())), now: time.Now,
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
}

// report is an images.ProgressFunc.
func (p *progressPrinter) report(pr images.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.start.IsZero() {
		p.start = now
	}
	if wait := logEvery - now.Sub(p.last); !p.tty && pr.Phase == p.phase && wait > 0 {
		if p.pending == nil {
			p.stop = p.after(wait, p.flush)
		}
		p.pending = &pr
		return
	}
	p.write(pr, now)
}

// flush writes the report that waited for its turn.
func (p *progressPrinter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil {
		p.write(*p.pending, p.now())
	}
}

func (p *progressPrinter) write(pr images.Progress, now time.Time) {
	if p.pending != nil {
		p.stop()
		p.pending, p.stop = nil, nil
	}
	p.last, p.phase = now, pr.Phase
	line := progressLine(pr, now.Sub(p.start))
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.open = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// finish drops a report still waiting (the work ended) and ends the
// terminal line, so what follows starts on its own.
func (p *progressPrinter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil {
		p.stop()
		p.pending, p.stop = nil, nil
	}
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// progressLine reads e.g. "bootstrap 17% — downloading 312/540 packages —
// 1m12s elapsed, about 4m left".
func progressLine(p images.Progress, elapsed time.Duration) string {
	parts := []string{fmt.Sprintf("%s %.0f%%", p.Phase, p.Percent)}
	switch {
	case p.Detail != "":
		parts = append(parts, p.Detail)
	case p.Total > 0:
		parts = append(parts, fmt.Sprintf("%d/%d MiB", p.Done>>20, p.Total>>20))
	}
	clock := shortDuration(elapsed) + " elapsed"
	if p.ETA > 0 && p.Percent < 100 {
		clock += ", about " + shortDuration(roughly(p.ETA)) + " left"
	}
	return strings.Join(append(parts, clock), " — ")
}

// roughly rounds an estimate to what it is worth: 10 s under two minutes,
// else whole minutes.
func roughly(d time.Duration) time.Duration {
	if d < 2*time.Minute {
		return max(d.Round(10*time.Second), 10*time.Second)
	}
	return d.Round(time.Minute)
}

// shortDuration prints 7s, 1m12s, 4m, 1h05m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0 && s == 0:
		return fmt.Sprintf("%dm", m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}
