package sshlink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// ExitError is a command that ran on the host and exited non-zero (or
// was killed by a signal: Status is then 128+N, as a shell reports it).
type ExitError struct {
	Status int
	Stderr string // its stderr, as sent
	Cmd    string // the whole command line
}

// Error is "<cmd's first word>: exit status N: <stderr trimmed>".
func (e *ExitError) Error() string {
	s := fmt.Sprintf("%s: exit status %d", firstWord(e.Cmd), e.Status)
	if msg := strings.TrimSpace(e.Stderr); msg != "" {
		s += ": " + msg
	}
	return s
}

func firstWord(cmd string) string {
	if f := strings.Fields(cmd); len(f) > 0 {
		return f[0]
	}
	return "command"
}

// Run runs cmd, a shell command line, on the host through the user's
// login shell, with stdin (nil: empty) as its input, and returns its
// stdout and stderr. A non-zero exit is an *ExitError carrying stderr.
// When ctx ends first, the session is sent SIGKILL and closed, and Run
// returns ctx's error at once (wrapped).
//
// That does not stop the command on the host when logged in as root:
// OpenSSH (9.2 checked) turns privilege separation off after a root login
// and then refuses signal requests ("session signalling requires privilege
// separation"), and closing a session without a pty does not end its
// process either (a `sleep` ran on). Give a command that may hang its own
// limit on the host, e.g. `timeout 20 nft -f -`.
func (l *Link) Run(ctx context.Context, cmd string, stdin io.Reader) (stdout, stderr []byte, err error) {
	name := firstWord(cmd)
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
	if !l.alive() {
		return nil, nil, fmt.Errorf("%s: %w", name, l.Err())
	}
	var (
		// Two buffers: x/crypto/ssh copies stdout and stderr in two
		// goroutines, and one bytes.Buffer for both loses data.
		outBuf, errBuf bytes.Buffer
		mu             sync.Mutex
		session        *ssh.Session
		abandoned      bool
		done           = make(chan error, 1)
	)
	go func() {
		// Opening the session waits for the host's answer: inside the
		// goroutine too, so ctx bounds it.
		s, err := l.client.NewSession()
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		mu.Lock()
		if abandoned {
			mu.Unlock()
			return
		}
		session = s
		mu.Unlock()
		s.Stdin, s.Stdout, s.Stderr = stdin, &outBuf, &errBuf
		done <- s.Run(cmd)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		mu.Lock()
		abandoned = true
		if session != nil {
			session.Signal(ssh.SIGKILL) // refused by OpenSSH for root: see above
			session.Close()
		}
		mu.Unlock()
		return nil, nil, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	case <-l.done:
		// The link died; the session's Run ends on its own soon, but the
		// reason is here already.
		select {
		case err = <-done:
		default:
			mu.Lock()
			abandoned = true
			mu.Unlock()
			return nil, nil, fmt.Errorf("%s: %w", name, l.Err())
		}
	}
	stdout, stderr = outBuf.Bytes(), errBuf.Bytes()
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return stdout, stderr, nil
	case errors.As(err, &exit):
		return stdout, stderr, &ExitError{Status: exit.ExitStatus(), Stderr: string(stderr), Cmd: cmd}
	case !l.alive():
		return stdout, stderr, fmt.Errorf("%s: %w (%v)", name, l.Err(), err)
	}
	return stdout, stderr, fmt.Errorf("%s: %w", name, err)
}

// DialUnix connects to the unix socket at path on the host (OpenSSH's
// direct-streamlocal forwarding; the host's sshd must allow local
// forwarding for bureau's key, AllowTcpForwarding included). The conn has
// no deadlines: bound reads by closing it. A missing socket and a refused
// forward look the same here ("open failed"); only sshd's log tells.
func (l *Link) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	if !l.alive() {
		return nil, fmt.Errorf("dial unix %s: %w", path, l.Err())
	}
	c, err := l.client.DialContext(ctx, "unix", path)
	if err != nil {
		if !l.alive() {
			return nil, fmt.Errorf("dial unix %s: %w (%v)", path, l.Err(), err)
		}
		return nil, fmt.Errorf("%s: dial unix %s: %w", l.name, path, err)
	}
	return c, nil
}
