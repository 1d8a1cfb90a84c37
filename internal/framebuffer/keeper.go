package framebuffer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Display is the hypervisor's own screenshot, used where no live
// framebuffer can be had (no VNC socket, a remote host, a failed dial).
type Display interface {
	Screenshot(ctx context.Context, domain string) ([]byte, string, error)
}

// ErrNotLive says a domain's screen has no live framebuffer now.
var ErrNotLive = errors.New("no live framebuffer")

// Keeper holds a live framebuffer per desktop that is being looked at:
// made on the first screenshot, dropped after Idle without one, remade
// when its display goes away and comes back (a stop, a hibernation).
type Keeper struct {
	// Dial connects to a domain's display (QEMU's VNC server).
	Dial func(ctx context.Context, domain string) (net.Conn, error)
	// Display serves screenshots when there is no live framebuffer.
	Display Display
	// Idle is how long an unused framebuffer is kept.
	Idle time.Duration
	Log  *slog.Logger

	mu   sync.Mutex
	live map[string]*live
	gens atomic.Uint64 // framebuffers made, numbering them (see Version)
	stop chan struct{}
	once sync.Once
}

// live is one domain's framebuffer, or its failed dial (kept retryWait so
// every screenshot of a stopped desktop does not dial again).
type live struct {
	ready  chan struct{}
	gen    uint64
	conn   *Conn
	err    error
	failed time.Time
	used   atomic.Int64

	enc     sync.Mutex
	pngOf   uint64
	png     []byte
	encoded bool
}

// Timeouts: a dial (handshake and the whole first screen), a sync with the
// server, and the pause after a failed dial.
const (
	dialWait  = 5 * time.Second
	syncWait  = 2 * time.Second
	retryWait = 5 * time.Second
)

// NewKeeper returns a Keeper; Close ends its framebuffers.
func NewKeeper(dial func(context.Context, string) (net.Conn, error), display Display, idle time.Duration, log *slog.Logger) *Keeper {
	k := &Keeper{Dial: dial, Display: display, Idle: idle, Log: log, live: map[string]*live{}, stop: make(chan struct{})}
	go k.janitor()
	return k
}

// get returns domain's framebuffer, dialing it when there is none.
func (k *Keeper) get(ctx context.Context, domain string) (*live, error) {
	k.mu.Lock()
	l := k.live[domain]
	if l != nil {
		select {
		case <-l.ready:
			switch {
			case l.conn != nil && l.conn.Err() == nil:
				k.mu.Unlock()
				l.used.Store(time.Now().UnixNano())
				return l, nil
			case l.conn == nil && time.Since(l.failed) < retryWait:
				k.mu.Unlock()
				return nil, l.err
			}
			l = nil // ended or failed a while ago: dial again
		default:
		}
	}
	if l == nil {
		l = &live{ready: make(chan struct{}), gen: k.gens.Add(1)}
		k.live[domain] = l
		k.mu.Unlock()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dialWait)
		l.conn, l.err = k.dial(dctx, domain)
		cancel()
		if l.err != nil {
			l.conn, l.failed = nil, time.Now()
			k.Log.Debug("no live framebuffer", "domain", domain, "err", l.err)
		}
		l.used.Store(time.Now().UnixNano())
		close(l.ready)
	} else {
		k.mu.Unlock()
	}
	select {
	case <-l.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if l.conn == nil {
		return nil, l.err
	}
	return l, nil
}

// dial opens a framebuffer on domain's display.
func (k *Keeper) dial(ctx context.Context, domain string) (*Conn, error) {
	nc, err := k.Dial(ctx, domain)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotLive, err)
	}
	c, err := NewConn(ctx, nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: %v", ErrNotLive, err)
	}
	return c, nil
}

// Screenshot is the screen as PNG: from the live framebuffer, brought up to
// date with the server first, else from the hypervisor.
func (k *Keeper) Screenshot(ctx context.Context, domain string) ([]byte, string, error) {
	b, err := k.Live(ctx, domain)
	if err == nil {
		return b, "image/png", nil
	}
	return k.Display.Screenshot(ctx, domain)
}

// Live is the screen as PNG from the live framebuffer only.
func (k *Keeper) Live(ctx context.Context, domain string) ([]byte, error) {
	l, err := k.synced(ctx, domain)
	if err != nil {
		return nil, err
	}
	return l.encodePNG()
}

// Frame is the screen's pixels from the live framebuffer (a copy).
func (k *Keeper) Frame(ctx context.Context, domain string) (image.Image, error) {
	l, err := k.synced(ctx, domain)
	if err != nil {
		return nil, err
	}
	m, _ := l.conn.Snapshot()
	return m, nil
}

// synced returns domain's framebuffer once it holds what the display
// showed at a scan after the call.
func (k *Keeper) synced(ctx context.Context, domain string) (*live, error) {
	l, err := k.get(ctx, domain)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	if err := l.conn.Sync(sctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", ErrNotLive, err)
	}
	return l, nil
}

// Settle waits until the screen has not changed for quiet (counted from
// the call at the earliest) or limit has passed, and returns its pixels (a
// copy) with whether it settled. ErrNotLive: the caller must find out
// another way.
func (k *Keeper) Settle(ctx context.Context, domain string, quiet, limit time.Duration) (image.Image, bool, error) {
	start := time.Now()
	l, err := k.get(ctx, domain)
	if err != nil {
		return nil, false, err
	}
	for {
		// Each sync nudges the server, so it keeps scanning every 30 ms
		// and a change is seen within a scan of being drawn.
		sctx, cancel := context.WithTimeout(ctx, syncWait)
		err := l.conn.Sync(sctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			return nil, false, fmt.Errorf("%w: %v", ErrNotLive, err)
		}
		_, damaged := l.conn.State()
		now := time.Now()
		settled := now.Sub(later(damaged, start)) >= quiet
		if settled || now.Sub(start) >= limit {
			m, _ := l.conn.Snapshot()
			return m, settled, nil
		}
		wait := min(syncEvery, quiet-now.Sub(later(damaged, start)), limit-now.Sub(start))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// syncEvery is how often a settle wait syncs with the server.
const syncEvery = 25 * time.Millisecond

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// encodePNG encodes the screen, once per version.
func (l *live) encodePNG() ([]byte, error) {
	l.enc.Lock()
	defer l.enc.Unlock()
	if v, _ := l.conn.State(); l.encoded && v == l.pngOf {
		return l.png, nil
	}
	m, v := l.conn.Snapshot()
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, m); err != nil {
		return nil, fmt.Errorf("encode screenshot: %w", err)
	}
	l.png, l.pngOf, l.encoded = out.Bytes(), v, true
	return l.png, nil
}

// Forget drops domain's framebuffer (its display is going away).
func (k *Keeper) Forget(domain string) {
	k.mu.Lock()
	l := k.live[domain]
	delete(k.live, domain)
	k.mu.Unlock()
	if l != nil {
		go l.close()
	}
}

func (l *live) close() {
	<-l.ready
	if l.conn != nil {
		l.conn.Close()
	}
}

// Count is how many live framebuffers are open.
func (k *Keeper) Count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, l := range k.live {
		select {
		case <-l.ready:
			if l.conn != nil && l.conn.Err() == nil {
				n++
			}
		default:
		}
	}
	return n
}

// janitor drops framebuffers unused for Idle and those whose display went.
func (k *Keeper) janitor() {
	t := time.NewTicker(max(k.Idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		k.mu.Lock()
		for domain, l := range k.live {
			select {
			case <-l.ready:
			default:
				continue
			}
			idle := time.Since(time.Unix(0, l.used.Load())) > k.Idle
			gone := l.conn != nil && l.conn.Err() != nil
			if idle || gone {
				delete(k.live, domain)
				go l.close()
			}
		}
		k.mu.Unlock()
	}
}

// Close ends every framebuffer.
func (k *Keeper) Close() {
	k.once.Do(func() { close(k.stop) })
	k.mu.Lock()
	all := k.live
	k.live = map[string]*live{}
	k.mu.Unlock()
	for _, l := range all {
		l.close()
	}
}
