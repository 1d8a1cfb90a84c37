package steps

import "sync/atomic"

// followBuffer is how many steps a slow follower may fall behind before
// it misses some (and is told how many).
const followBuffer = 256

// Follower receives a desktop's steps as they are recorded.
type Follower struct {
	C       chan *Step
	dropped atomic.Int64
}

// Dropped returns and clears how many steps were missed since the last call.
func (f *Follower) Dropped() int64 { return f.dropped.Swap(0) }

// Follow starts following a desktop's steps; stop ends it.
func (l *Log) Follow(desktopID string) (f *Follower, stop func()) {
	f = &Follower{C: make(chan *Step, followBuffer)}
	l.mu.Lock()
	if l.subs[desktopID] == nil {
		l.subs[desktopID] = map[*Follower]struct{}{}
	}
	l.subs[desktopID][f] = struct{}{}
	l.mu.Unlock()
	return f, func() {
		l.mu.Lock()
		delete(l.subs[desktopID], f)
		if len(l.subs[desktopID]) == 0 {
			delete(l.subs, desktopID)
		}
		l.mu.Unlock()
	}
}

func (l *Log) publish(st *Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for f := range l.subs[st.DesktopID] {
		select {
		case f.C <- st:
		default:
			f.dropped.Add(1)
		}
	}
}
