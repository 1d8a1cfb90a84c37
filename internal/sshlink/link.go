package sshlink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Target is where and how one host is reached.
type Target struct {
	Addr    string        // "host:port" (see ParseAddr)
	User    string        // e.g. "root"
	HostKey ssh.PublicKey // pinned; required
	Signer  ssh.Signer    // bureau's client key (ClientKey)

	keepalive time.Duration // 0: defaultKeepalive; tests shorten it
}

const (
	defaultKeepalive = 5 * time.Second
	missedKeepalives = 3
	// dialTimeout bounds a dial whose ctx has no deadline.
	dialTimeout = 30 * time.Second
)

var (
	// ErrHostKeyMismatch: the host offered another key than the pinned one.
	ErrHostKeyMismatch = errors.New("host key mismatch")
	// ErrKeyRefused: the host does not accept bureau's client key.
	ErrKeyRefused = errors.New("the host does not accept bureau's key")
	// ErrClosed: the link (or Kept) was closed by Close.
	ErrClosed = errors.New("ssh link closed")
)

func (t Target) String() string { return t.User + "@" + t.Addr }

// Link is one live SSH connection to a host. Its methods are safe for
// concurrent use; each Run is its own SSH session.
type Link struct {
	name   string
	client *ssh.Client
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	err    error
}

// Dial connects to t and authenticates within ctx (30 s when ctx has no
// deadline). The link then sends a keepalive@openssh.com request every
// 5 s; when 3 intervals pass without an answer, it closes (Done).
func Dial(ctx context.Context, t Target) (*Link, error) {
	name := "ssh " + t.String()
	switch {
	case t.HostKey == nil:
		return nil, fmt.Errorf("%s: no pinned host key", name)
	case t.Signer == nil:
		return nil, fmt.Errorf("%s: no client key", name)
	case t.Addr == "" || t.User == "":
		return nil, fmt.Errorf("%s: address and user are required", name)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var offered atomic.Pointer[ssh.PublicKey]
	config := &ssh.ClientConfig{
		User: t.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(t.Signer)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if !bytes.Equal(key.Marshal(), t.HostKey.Marshal()) {
				offered.Store(&key)
				return ErrHostKeyMismatch
			}
			return nil
		},
		// Only the pinned key's type, so the host cannot offer another.
		HostKeyAlgorithms: hostKeyAlgorithms(t.HostKey),
		ClientVersion:     "SSH-2.0-bureau",
	}
	// SSH has no deadlines of its own: the handshake is bounded by
	// closing the conn when ctx ends.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, t.Addr, config)
	if !stop() { // ctx ended: conn is (being) closed
		if err == nil {
			c.Close()
		}
		return nil, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
	if err != nil {
		conn.Close()
		if k := offered.Load(); k != nil {
			return nil, fmt.Errorf("%s: %w: the host offered %s, but %s is pinned (another machine at this address, or the host's key changed)",
				name, ErrHostKeyMismatch, FormatKey(*k), FormatKey(t.HostKey))
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("%s: %w for %s; add this line to ~%s/.ssh/authorized_keys on the host: %s (%v)",
				name, ErrKeyRefused, t.User, t.User, FormatKey(t.Signer.PublicKey()), err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &Link{name: name, client: ssh.NewClient(c, chans, reqs), done: make(chan struct{})}
	every := t.keepalive
	if every <= 0 {
		every = defaultKeepalive
	}
	go func() {
		err := l.client.Wait()
		if err == nil {
			err = net.ErrClosed
		}
		l.fail(fmt.Errorf("%s: connection lost: %w", name, err))
	}()
	go l.keepalive(every)
	return l, nil
}

// hostKeyAlgorithms are the signature algorithms for the pinned key's
// type: an RSA key signs with SHA-2 (OpenSSH refuses ssh-rsa's SHA-1).
func hostKeyAlgorithms(k ssh.PublicKey) []string {
	if k.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{k.Type()}
}

// keepalive sends keepalive@openssh.com requests, one at a time (x/crypto
// serialises global requests anyway), every `every`. Any answer counts,
// even a refusal; when one has waited `missedKeepalives` intervals, the
// link is closed.
func (l *Link) keepalive(every time.Duration) {
	tick := time.NewTimer(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-l.done:
			return
		}
		answer := make(chan error, 1)
		go func() {
			_, _, err := l.client.SendRequest("keepalive@openssh.com", true, nil)
			answer <- err
		}()
		for missed := 0; ; {
			tick.Reset(every)
			select {
			case err := <-answer:
				if err != nil {
					l.fail(fmt.Errorf("%s: keepalive: %w", l.name, err))
					return
				}
			case <-tick.C:
				if missed++; missed < missedKeepalives {
					continue
				}
				l.fail(fmt.Errorf("%s: no answer to keepalive in %s; link closed", l.name, missedKeepalives*every))
				return
			case <-l.done:
				return
			}
			break // answered; tick is already set for the next one
		}
	}
}

// fail closes the link once, keeping err as the reason.
func (l *Link) fail(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.done)
		l.client.Close()
	})
}

// Done is closed when the link is lost (keepalive unanswered, connection
// closed) or closed.
func (l *Link) Done() <-chan struct{} { return l.done }

// Err says why Done was closed (wrapping ErrClosed after Close); nil
// while the link is up.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the link, its sessions and forwarded connections.
func (l *Link) Close() error {
	l.fail(fmt.Errorf("%s: %w", l.name, ErrClosed))
	return nil
}

// alive reports whether the link is up.
func (l *Link) alive() bool {
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}
