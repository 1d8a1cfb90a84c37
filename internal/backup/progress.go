package backup

import (
	"sync"
	"time"
)

// Progress tells how far a backup or a restore is.
type Progress struct {
	// BytesRead is the bytes of the disk read (a backup) or written (a
	// restore) so far, out of ReadTotal.
	BytesRead, ReadTotal int64
	// Chunks is the non-zero cells done so far: a backup counts those it
	// carries over from its parent at the start, and ends at the
	// manifest's len(Cells).
	Chunks int
	// ChunksNew and BytesNew are the chunks a backup uploaded because the
	// target lacked them, and their stored (compressed, encrypted) bytes.
	ChunksNew int
	BytesNew  int64
}

// reportEvery is how often progress is reported at most.
const reportEvery = 250 * time.Millisecond

// meter counts progress from several goroutines and reports it to a
// callback from one goroutine of its own, at most every reportEvery.
type meter struct {
	mu   sync.Mutex
	p    Progress
	fn   func(Progress)
	stop chan struct{}
	done chan struct{}
}

// newMeter starts reporting to fn (nil: nothing is reported).
func newMeter(p Progress, fn func(Progress)) *meter {
	m := &meter{p: p, fn: fn, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *meter) run() {
	defer close(m.done)
	if m.fn == nil {
		return
	}
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	var last Progress
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			if p := m.get(); p != last {
				last = p
				m.fn(p)
			}
		}
	}
}

// add changes the progress under the meter's lock.
func (m *meter) add(f func(p *Progress)) {
	m.mu.Lock()
	f(&m.p)
	m.mu.Unlock()
}

func (m *meter) get() Progress {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p
}

// finish stops the reporting goroutine, reports the final progress once
// and returns it.
func (m *meter) finish() Progress {
	close(m.stop)
	<-m.done
	p := m.get()
	if m.fn != nil {
		m.fn(p)
	}
	return p
}
