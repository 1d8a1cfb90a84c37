package sshlink

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
)

// Kept keeps one Link to a Target, dialing again on use after it was
// lost. Safe for concurrent use.
type Kept struct {
	target Target
	ctx    context.Context // ends on Close: stops a dial under way
	cancel context.CancelFunc

	mu      sync.Mutex
	link    *Link    // the last link made; may be lost
	dialing *attempt // the dial under way, if any
	closed  bool
}

// attempt is one dial; done is closed when link or err is set.
type attempt struct {
	done chan struct{}
	link *Link
	err  error
}

// NewKept returns a Kept for t. It does not dial: the first use does.
func NewKept(t Target) *Kept {
	ctx, cancel := context.WithCancel(context.Background())
	return &Kept{target: t, ctx: ctx, cancel: cancel}
}

// Link returns the live link, dialing when there is none or it was lost.
// One dial runs at a time, bounded by its own 30 s rather than by one
// caller's ctx; concurrent callers wait for it or for their ctx. A failed
// dial is returned to those who waited for it; the next call dials again.
func (k *Kept) Link(ctx context.Context) (*Link, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, fmt.Errorf("ssh %s: %w", k.target, ErrClosed)
	}
	if k.link != nil && k.link.alive() {
		l := k.link
		k.mu.Unlock()
		return l, nil
	}
	a := k.dialing
	if a == nil {
		a = &attempt{done: make(chan struct{})}
		k.dialing = a
		go k.dial(a)
	}
	k.mu.Unlock()
	select {
	case <-a.done:
		return a.link, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("ssh %s: %w", k.target, context.Cause(ctx))
	}
}

func (k *Kept) dial(a *attempt) {
	ctx, cancel := context.WithTimeout(k.ctx, dialTimeout)
	defer cancel()
	l, err := Dial(ctx, k.target)
	k.mu.Lock()
	if err == nil && k.closed { // Close came during the dial
		l.Close()
		l, err = nil, fmt.Errorf("ssh %s: %w", k.target, ErrClosed)
	}
	if err == nil {
		k.link = l
	}
	k.dialing = nil
	a.link, a.err = l, err
	k.mu.Unlock()
	close(a.done)
}

// Run runs cmd on the kept link (see Link.Run), dialing first if needed.
func (k *Kept) Run(ctx context.Context, cmd string, stdin io.Reader) ([]byte, []byte, error) {
	l, err := k.Link(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", firstWord(cmd), err)
	}
	return l.Run(ctx, cmd, stdin)
}

// DialUnix connects to a unix socket on the host through the kept link
// (see Link.DialUnix), dialing first if needed.
func (k *Kept) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	l, err := k.Link(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial unix %s: %w", path, err)
	}
	return l.DialUnix(ctx, path)
}

// Close closes the link and stops a dial under way; later calls fail
// with ErrClosed.
func (k *Kept) Close() error {
	k.mu.Lock()
	k.closed = true
	l := k.link
	k.link = nil
	k.mu.Unlock()
	k.cancel()
	if l != nil {
		return l.Close()
	}
	return nil
}
