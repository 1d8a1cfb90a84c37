// Package client is bureau's end of the channel to bureau-agent in
// each desktop: one yamux session per desktop, dialled on first use, made
// again when it breaks (the VM restarted, was restored or reverted, or
// bureau restarted), and an agent whose binary differs from the one
// bureau ships is updated on connect.
package client

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/hashicorp/yamux"
)

// Dialer opens a byte stream to a desktop's agent channel: the channel's
// unix socket on a local host, libvirt's channel stream on a remote one.
type Dialer interface {
	DialAgent(ctx context.Context, domain string) (net.Conn, error)
}

// errDial: the channel itself could not be opened.
var errDial = errors.New("its channel cannot be opened")

// ErrNoAgent: the desktop's agent is not reachable (no channel, not
// installed, not started yet). Callers fall back to QEMU's guest agent.
var ErrNoAgent = errors.New("bureau-agent is not answering")

// Timings.
const (
	helloEvery = 250 * time.Millisecond
	// handshakeWithin bounds waiting for an agent to answer its hello.
	handshakeWithin = 3 * time.Second
	// retryAfter: a desktop whose agent did not answer is not asked again
	// sooner (calls fall back at once meanwhile); one whose channel could
	// not even be opened (a domain defined before it had one) waits
	// retryNoChannel.
	retryAfter     = 10 * time.Second
	retryNoChannel = time.Minute
	// updateEvery bounds update attempts per desktop.
	updateEvery = time.Minute
	// headerWithin bounds the wait for a call's response header (the
	// agent answers before it does the work): past it the session is
	// taken for stale and dialled again.
	headerWithin = 15 * time.Second
)

// A session idle for checkAfter is pinged before use: a guest that
// rebooted or was reverted to a snapshot behind the same QEMU socket has
// an agent that no longer knows the session, and stays silent. (Variables
// so tests can shorten them.)
var (
	checkAfter = 5 * time.Second
	pingWithin = 3 * time.Second
)

// testHookEntry, if set, runs between a call finding its desktop's entry
// and taking it.
var testHookEntry func()

// Client reaches the agents of all desktops.
type Client struct {
	dial Dialer
	log  *slog.Logger
	// ship is the agent binary bureau ships (nil: never update) and its
	// digest.
	ship    []byte
	shipSum string

	mu        sync.Mutex
	conns     map[string]*conn
	onSession func(domain string)
}

// OnSession has f called (in its own goroutine) each time a new session
// with a desktop's agent is up: after a boot, a restore, or the agent's
// own restart, when what the agent holds in memory only is gone.
func (c *Client) OnSession(f func(domain string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onSession = f
}

type conn struct {
	mu        sync.Mutex // held while dialling
	sess      *yamux.Session
	lastUsed  time.Time
	info      wire.Info
	failedAt  time.Time
	retryIn   time.Duration
	failure   error
	updatedAt time.Time
	// gone: Forget dropped this entry. A call that looked it up before
	// must not dial on it: a session made there would be held by no one
	// and keep QEMU's channel busy (it serves one client at a time), so
	// every later dial would wait in its queue unanswered until the queue
	// is full (EAGAIN) and bureau restarts. Set under Client.mu.
	gone atomic.Bool
}

// New builds a client. binary is the agent bureau ships (read for updates);
// "" disables updates.
func New(d Dialer, binary string, log *slog.Logger) (*Client, error) {
	c := &Client{dial: d, log: log, conns: map[string]*conn{}}
	if binary != "" {
		b, err := os.ReadFile(binary)
		if err != nil {
			return nil, fmt.Errorf("the agent binary: %w", err)
		}
		sum := sha256.Sum256(b)
		c.ship, c.shipSum = b, hex.EncodeToString(sum[:])
	}
	return c, nil
}

// Shipped is the digest of the agent binary bureau ships ("" if none).
func (c *Client) Shipped() string { return c.shipSum }

func (c *Client) entry(domain string) *conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.conns[domain]
	if e == nil {
		e = &conn{}
		c.conns[domain] = e
	}
	return e
}

// Forget drops a desktop's session (its VM is gone or was replaced).
func (c *Client) Forget(domain string) {
	c.mu.Lock()
	e := c.conns[domain]
	if e != nil {
		e.gone.Store(true)
	}
	delete(c.conns, domain)
	c.mu.Unlock()
	if e != nil {
		e.mu.Lock()
		if e.sess != nil {
			e.sess.Close()
			e.sess = nil
		}
		e.mu.Unlock()
	}
}

// Info is what an agent says of itself.
type Info = wire.Info

// Info says which agent answers in a desktop.
func (c *Client) Info(ctx context.Context, domain string) (Info, error) {
	_, info, err := c.session(ctx, domain)
	return info, err
}

// session returns the desktop's live session and what its agent said of
// itself, dialling one if needed.
func (c *Client) session(ctx context.Context, domain string) (*yamux.Session, wire.Info, error) {
	for {
		e := c.entry(domain)
		if testHookEntry != nil {
			testHookEntry()
		}
		e.mu.Lock()
		if e.gone.Load() { // forgotten while this call waited for it
			e.mu.Unlock()
			continue
		}
		sess, err := c.sessionLocked(ctx, domain, e)
		info := e.info
		e.mu.Unlock()
		if err != nil {
			return nil, wire.Info{}, err
		}
		return sess, info, nil
	}
}

// sessionLocked is session with the entry held.
func (c *Client) sessionLocked(ctx context.Context, domain string, e *conn) (*yamux.Session, error) {
	if e.sess != nil && !e.sess.IsClosed() {
		if time.Since(e.lastUsed) < checkAfter || alive(e.sess) {
			e.lastUsed = time.Now()
			return e.sess, nil
		}
		c.log.Info("bureau-agent session went silent; dialling again", "domain", domain)
		e.sess.Close()
	}
	e.sess = nil
	if time.Since(e.failedAt) < e.retryIn {
		return nil, e.failure
	}
	sess, info, err := c.connect(ctx, domain)
	if err == nil && c.ship != nil && info.SHA256 != c.shipSum && time.Since(e.updatedAt) > updateEvery {
		e.updatedAt = time.Now()
		c.log.Info("updating bureau-agent", "domain", domain, "from", info.Version, "sha256", short(info.SHA256), "to", short(c.shipSum))
		if uerr := c.update(ctx, sess); uerr != nil {
			c.log.Warn("bureau-agent update failed; using the running agent", "domain", domain, "err", uerr)
		} else {
			sess.Close()
			sess, info, err = c.reconnect(ctx, domain)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller gave up: not the agent's fault
		}
		e.failedAt, e.failure, e.retryIn = time.Now(), err, retryAfter
		if errors.Is(err, errDial) {
			e.retryIn = retryNoChannel
		}
		return nil, err
	}
	e.sess, e.info, e.failure, e.lastUsed = sess, info, nil, time.Now()
	c.mu.Lock()
	f := c.onSession
	c.mu.Unlock()
	if f != nil {
		go f(domain)
	}
	return sess, nil
}

// alive pings a session.
func alive(sess *yamux.Session) bool {
	done := make(chan error, 1)
	go func() {
		_, err := sess.Ping()
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(pingWithin):
		return false
	}
}

// reconnect waits for the agent to restart into the binary it was sent.
func (c *Client) reconnect(ctx context.Context, domain string) (*yamux.Session, wire.Info, error) {
	var err error
	for i := 0; i < 20; i++ {
		var sess *yamux.Session
		var info wire.Info
		if sess, info, err = c.connect(ctx, domain); err == nil {
			if info.SHA256 == c.shipSum || i == 19 {
				return sess, info, nil
			}
			sess.Close() // the old agent, still on its way out
		}
		select {
		case <-ctx.Done():
			return nil, wire.Info{}, err
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil, wire.Info{}, err
}

func (c *Client) connect(ctx context.Context, domain string) (*yamux.Session, wire.Info, error) {
	raw, err := c.dial.DialAgent(ctx, domain)
	if err != nil {
		return nil, wire.Info{}, fmt.Errorf("%w: %w: %v", ErrNoAgent, errDial, err)
	}
	hctx, cancel := context.WithTimeout(ctx, handshakeWithin)
	defer cancel()
	info, r, err := wire.Dial(hctx, raw, nonce(), helloEvery)
	if err != nil {
		raw.Close()
		if ctx.Err() != nil {
			return nil, wire.Info{}, ctx.Err()
		}
		return nil, wire.Info{}, fmt.Errorf("%w: no answer on its channel within %s (not installed or not started yet)", ErrNoAgent, handshakeWithin)
	}
	sess, err := wire.HostSession(r, raw, c.log.With("domain", domain))
	if err != nil {
		raw.Close()
		return nil, wire.Info{}, err
	}
	return sess, info, nil
}

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func short(s string) string { return s[:min(12, len(s))] }

// open starts a call: a stream with its request sent and the response
// read. A broken session is dialled again once.
func (c *Client) open(ctx context.Context, domain string, req wire.Request) (net.Conn, wire.Response, error) {
	for attempt := 0; ; attempt++ {
		sess, _, err := c.session(ctx, domain)
		if err != nil {
			return nil, wire.Response{}, err
		}
		st, err := sess.OpenStream()
		if err != nil {
			sess.Close()
			if attempt == 0 {
				continue
			}
			return nil, wire.Response{}, fmt.Errorf("%w: %v", ErrNoAgent, err)
		}
		stop := abortOn(ctx, st)
		var resp wire.Response
		st.SetReadDeadline(time.Now().Add(headerWithin))
		err = wire.WriteHeader(st, req)
		if err == nil {
			err = wire.ReadHeader(st, &resp)
		}
		st.SetReadDeadline(time.Time{})
		stop()
		if err != nil {
			st.Close()
			if ctx.Err() != nil {
				return nil, resp, ctx.Err()
			}
			if errors.Is(err, yamux.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
				sess.Close() // a stale session: the agent does not know it
			}
			if attempt == 0 && sess.IsClosed() {
				continue
			}
			return nil, resp, fmt.Errorf("bureau-agent %s: %w", req.Op, err)
		}
		if resp.Error != "" {
			st.Close()
			return nil, resp, callError(req.Op, resp)
		}
		return st, resp, nil
	}
}

// callError turns an agent's refusal into bureau's error kinds.
func callError(op string, r wire.Response) error {
	switch r.Code {
	case wire.CodeNotFound:
		return fmt.Errorf("%s: %s: %w", op, r.Error, desktop.ErrNotFound)
	case wire.CodeInvalid:
		return &desktop.ValidationError{Field: op, Message: r.Error}
	case wire.CodeUnavailable:
		return fmt.Errorf("%s: %s: %w", op, r.Error, desktop.ErrUnavailable)
	}
	return fmt.Errorf("bureau-agent %s: %s", op, r.Error)
}

// update sends the shipped binary; the agent restarts into it.
func (c *Client) update(ctx context.Context, sess *yamux.Session) error {
	st, err := sess.OpenStream()
	if err != nil {
		return err
	}
	defer st.Close()
	defer abortOn(ctx, st)()
	if err := wire.WriteHeader(st, wire.Request{Op: wire.OpUpdate, Size: int64(len(c.ship)), SHA256: c.shipSum}); err != nil {
		return err
	}
	if _, err := (wire.FrameWriter{W: st, Kind: wire.FrameData}).Write(c.ship); err != nil {
		return err
	}
	if err := wire.WriteFrame(st, wire.FrameEnd, nil); err != nil {
		return err
	}
	var resp wire.Response
	if err := wire.ReadHeader(st, &resp); err != nil {
		return err
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}
