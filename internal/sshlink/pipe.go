package sshlink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// exitGrace is how long a Read that met the end of the command's stdout
// waits for its exit status (which normally comes with the end), so that
// a failure can be told from a clean end.
const exitGrace = 5 * time.Second

// maxStderr is how much of a piped command's stderr is kept for its
// ExitError; the rest is read and dropped.
const maxStderr = 64 << 10

// Pipe runs cmd, a shell command line, on the host (through the user's
// login shell, as Run) and returns a conn to it: Read reads the command's
// stdout, Write writes its stdin, CloseWrite closes its stdin (half-close:
// reads go on), and Close closes stdin and the session. ctx bounds only
// starting the session (opening it and the host's answer to the exec
// request); the conn lives on after it.
//
// When the command's stdout ends, Read returns io.EOF if it exited 0, and
// otherwise its *ExitError (status and stderr), so a command that fails
// before writing anything (a refusal, a missing program) gives its reason
// on the first Read rather than a bare EOF. If the link is lost, Read
// returns its error.
//
// SSH channels have no deadlines: SetDeadline, SetReadDeadline and
// SetWriteDeadline do nothing and return nil. Bound a Read by closing the
// conn, which ends it at once (net.ErrClosed). A Write blocked because the
// host stopped taking data ends when the host answers the close or the
// link is lost (keepalive).
//
// Closing does not kill the command (OpenSSH refuses signals for root;
// see Run): it ends when it sees its stdin end or its stdout closed, as
// `cat` or a relay does. Give a command that may run on otherwise its own
// limit.
func (l *Link) Pipe(ctx context.Context, cmd string) (net.Conn, error) {
	name := firstWord(cmd)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
	if !l.alive() {
		return nil, fmt.Errorf("%s: %w", name, l.Err())
	}
	type started struct {
		c   *pipeConn
		err error
	}
	var (
		mu        sync.Mutex
		abandoned bool
		done      = make(chan started, 1)
	)
	go func() {
		c, err := l.startPipe(cmd)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if c != nil {
				c.Close()
			}
			return
		}
		done <- started{c, err}
	}()
	select {
	case s := <-done:
		if s.err != nil {
			if !l.alive() {
				return nil, fmt.Errorf("%s: %w (%v)", name, l.Err(), s.err)
			}
			return nil, fmt.Errorf("%s: %w", name, s.err)
		}
		return s.c, nil
	case <-ctx.Done():
		mu.Lock()
		abandoned = true
		mu.Unlock()
		select { // started meanwhile: closed by us, not by the goroutine
		case s := <-done:
			if s.c != nil {
				s.c.Close()
			}
		default:
		}
		return nil, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	case <-l.done:
		mu.Lock()
		abandoned = true
		mu.Unlock()
		select {
		case s := <-done:
			if s.c != nil {
				s.c.Close()
			}
		default:
		}
		return nil, fmt.Errorf("%s: %w", name, l.Err())
	}
}

// startPipe opens a session, starts cmd in it and returns its conn; it
// waits for the host's answers.
func (l *Link) startPipe(cmd string) (*pipeConn, error) {
	s, err := l.client.NewSession()
	if err != nil {
		return nil, err
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	stderr := &capBuffer{max: maxStderr}
	s.Stderr = stderr
	if err := s.Start(cmd); err != nil {
		s.Close()
		return nil, err
	}
	pr, pw := io.Pipe()
	c := &pipeConn{
		link: l, cmd: cmd, session: s, stdin: stdin, stderr: stderr,
		pr: pr, pw: pw, closed: make(chan struct{}), waited: make(chan error, 1),
	}
	go func() { c.waited <- s.Wait() }()
	go c.pump(stdout)
	return c, nil
}

// Pipe runs cmd on the kept link (see Link.Pipe), dialing first if
// needed; ctx bounds the dial too.
func (k *Kept) Pipe(ctx context.Context, cmd string) (net.Conn, error) {
	l, err := k.Link(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", firstWord(cmd), err)
	}
	return l.Pipe(ctx, cmd)
}

// pipeConn is a command's stdin and stdout as a net.Conn. Its stdout is
// read by pump into an io.Pipe, so that Close ends a blocked Read at once
// whatever the host does.
type pipeConn struct {
	link    *Link
	cmd     string
	session *ssh.Session
	stdin   io.WriteCloser
	stderr  *capBuffer
	pr      *io.PipeReader
	pw      *io.PipeWriter
	waited  chan error // the session's Wait, once
	once    sync.Once
	closed  chan struct{}
}

// pump copies the command's stdout to pw, then ends pw with io.EOF or
// the command's failure.
func (c *pipeConn) pump(stdout io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := stdout.Read(buf)
		if n > 0 {
			if _, werr := c.pw.Write(buf[:n]); werr != nil {
				return // the conn was closed
			}
		}
		if err != nil {
			c.pw.CloseWithError(c.end(err))
			return
		}
	}
}

// end is what Read returns once stdout ended with err.
func (c *pipeConn) end(err error) error {
	name := firstWord(c.cmd)
	if !errors.Is(err, io.EOF) {
		if !c.link.alive() {
			return fmt.Errorf("%s: %w (%v)", name, c.link.Err(), err)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	var werr error
	select {
	case werr = <-c.waited:
	case <-c.closed:
		return net.ErrClosed
	case <-t.C:
		return io.EOF // stdout closed, the command runs on
	}
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case werr == nil:
		return io.EOF
	case errors.As(werr, &exit):
		return &ExitError{Status: exit.ExitStatus(), Stderr: c.stderr.String(), Cmd: c.cmd}
	case errors.As(werr, &missing):
		// OpenSSH always reports how a command ended, so this is the
		// link going: the session may see it a little before the link.
		select {
		case <-c.link.done:
		case <-time.After(time.Second):
		}
	}
	if !c.link.alive() {
		return fmt.Errorf("%s: %w (%v)", name, c.link.Err(), werr)
	}
	return fmt.Errorf("%s: %w", name, werr)
}

func (c *pipeConn) Read(b []byte) (int, error) {
	n, err := c.pr.Read(b)
	if errors.Is(err, io.ErrClosedPipe) {
		err = net.ErrClosed
	}
	return n, err
}

func (c *pipeConn) Write(b []byte) (int, error) {
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	n, err := c.stdin.Write(b)
	if err != nil && c.isClosed() {
		err = net.ErrClosed
	}
	return n, err
}

// CloseWrite closes the command's stdin (it reads EOF); reads go on.
func (c *pipeConn) CloseWrite() error {
	if c.isClosed() {
		return net.ErrClosed
	}
	return c.stdin.Close()
}

// Close closes the command's stdin, then the session; a Read under way
// returns net.ErrClosed. Later calls return net.ErrClosed.
func (c *pipeConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		err = nil
		close(c.closed)
		c.pr.CloseWithError(net.ErrClosed)
		c.stdin.Close() // EOF first: a command reading its input to the end ends on it
		c.session.Close()
	})
	return err
}

func (c *pipeConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *pipeConn) LocalAddr() net.Addr { return pipeAddr(c.link.name) }
func (c *pipeConn) RemoteAddr() net.Addr {
	return pipeAddr(c.link.name + " " + firstWord(c.cmd))
}

// SSH channels have no deadlines: these do nothing (see Link.Pipe).
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// pipeAddr names a piped command's ends: "ssh root@host:22 python3".
type pipeAddr string

func (a pipeAddr) Network() string { return "ssh" }
func (a pipeAddr) String() string  { return string(a) }

// capBuffer keeps the first max bytes written to it and drops the rest;
// safe for one writer and concurrent readers.
type capBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
