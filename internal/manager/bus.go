package manager

import (
	"context"
	"sync"

	"github.com/bureau/bureau/internal/desktop"
)

// Change is what subscribers of the manager's live feed receive: a new
// event of a desktop, or its record after a change of state.
type Change struct {
	Owner   string
	Event   *desktop.Event
	Desktop *desktop.Desktop
}

// Feed fans changes out to subscribers. A subscriber that does not keep up
// loses changes rather than slowing desktops down; Dropped tells it so.
type Feed struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscription is one live feed of changes.
type Subscription struct {
	C     <-chan Change
	c     chan Change
	owner string // "" = every owner

	mu      sync.Mutex
	dropped int
}

// Dropped returns and resets how many changes were lost to a full buffer.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.dropped
	s.dropped = 0
	return n
}

// Subscribe follows changes of owner's desktops ("" = all) until ctx ends.
func (b *Feed) Subscribe(ctx context.Context, owner string) *Subscription {
	c := make(chan Change, 128)
	s := &Subscription{C: c, c: c, owner: owner}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[*Subscription]struct{}{}
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		delete(b.subs, s)
		b.mu.Unlock()
	}()
	return s
}

// Publish sends a change to the subscribers that may see it.
func (b *Feed) Publish(ch Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.owner != "" && s.owner != ch.Owner {
			continue
		}
		select {
		case s.c <- ch:
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
	}
}
