package main

import (
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/images"
)

func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		p       images.Progress
		elapsed time.Duration
		want    string
	}{
		{images.Progress{Phase: "bootstrap", Percent: 17.4, Detail: "downloading 312/540 packages", ETA: 4*time.Minute + 10*time.Second},
			72 * time.Second, "bootstrap 17% — downloading 312/540 packages — 1m12s elapsed, about 4m left"},
		{images.Progress{Phase: "bootstrap", Percent: 3},
			4 * time.Second, "bootstrap 3% — 4s elapsed"},
		{images.Progress{Phase: "download", Percent: 50, Done: 100 << 20, Total: 200 << 20, ETA: 43 * time.Second},
			time.Minute, "download 50% — 100/200 MiB — 1m elapsed, about 40s left"},
		{images.Progress{Phase: "done", Percent: 100, ETA: time.Second},
			time.Hour + 5*time.Minute, "done 100% — 1h05m elapsed"},
	} {
		if got := progressLine(c.p, c.elapsed); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// Without a terminal a line is written at each new phase and at most every
// logEvery within one: the newest report, when its turn comes.
func TestProgressPrinterLogPace(t *testing.T) {
	var out strings.Builder
	now := time.Unix(0, 0)
	var due time.Time
	var turn func()
	p := &progressPrinter{w: &out, now: func() time.Time { return now },
		after: func(d time.Duration, f func()) func() bool {
			due, turn = now.Add(d), f
			return func() bool { turn = nil; return true }
		}}
	tick := func(d time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(time.Second) {
			if turn != nil && !now.Before(due) {
				f := turn
				turn = nil
				f()
			}
		}
	}
	for i := 0; i < 10; i++ { // a report every 2 s for 20 s
		p.report(images.Progress{Phase: "bootstrap", Percent: float64(2 + i)})
		tick(2 * time.Second)
	}
	p.report(images.Progress{Phase: "bootstrap", Percent: 20, Detail: "the last before a long step"})
	tick(30 * time.Second)
	p.report(images.Progress{Phase: "customize", Percent: 76})
	p.report(images.Progress{Phase: "customize", Percent: 77})
	p.finish()
	want := `bootstrap 2% — 0s elapsed
bootstrap 4% — 5s elapsed
bootstrap 7% — 10s elapsed
bootstrap 9% — 15s elapsed
bootstrap 20% — the last before a long step — 20s elapsed
customize 76% — 50s elapsed
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// On a terminal every report redraws the one line.
func TestProgressPrinterTerminal(t *testing.T) {
	var out strings.Builder
	now := time.Unix(0, 0)
	p := &progressPrinter{w: &out, tty: true, now: func() time.Time { return now }}
	p.report(images.Progress{Phase: "bootstrap", Percent: 2})
	now = now.Add(time.Second)
	p.report(images.Progress{Phase: "bootstrap", Percent: 3, Detail: "reading package lists"})
	p.finish()
	want := "\rbootstrap 2% — 0s elapsed\x1b[K\rbootstrap 3% — reading package lists — 1s elapsed\x1b[K\n"
	if out.String() != want {
		t.Errorf("got %q", out.String())
	}
}
