package client

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// abortOn ends st's reads and writes when ctx is done (closing alone is
// a half-close: the agent's answer could still be read).
func abortOn(ctx context.Context, st net.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		st.SetDeadline(time.Now())
		st.Close()
	})
}

// Command is what exec, spawn and pty run: argv with its whole
// environment, in dir.
type Command struct {
	Argv []string
	Env  []string
	Dir  string
}

// Exit is how a command ended.
type Exit = wire.Exit

// Output receives a command's output: stream is "stdout" or "stderr". An
// error stops the command.
type Output func(stream string, b []byte) error

// ExecIO is where an exec's input comes from and its output goes.
type ExecIO struct {
	// Stdin (may be nil) is sent as it is read.
	Stdin io.Reader
	// Started (may be nil) is called once the command runs; an error
	// stops it.
	Started func() error
	Out     Output
}

// Exec runs a command with real pipes: output arrives as it is written,
// and the call returns when the command exits (not when a child it left
// in the background lets go of its output). Cancelling ctx stops the
// command's process group.
func (c *Client) Exec(ctx context.Context, domain string, cmd Command, io_ ExecIO) (Exit, error) {
	stdin, out := io_.Stdin, io_.Out
	st, _, err := c.open(ctx, domain, wire.Request{Op: wire.OpExec, Argv: cmd.Argv, Env: cmd.Env, Dir: cmd.Dir, Stdin: stdin != nil})
	if err != nil {
		return Exit{}, err
	}
	if io_.Started != nil {
		if err := io_.Started(); err != nil {
			st.Close()
			return Exit{}, err
		}
	}
	defer st.Close()
	defer abortOn(ctx, st)()
	var wmu sync.Mutex
	if stdin != nil {
		go func() {
			buf := make([]byte, 64<<10)
			for {
				n, rerr := stdin.Read(buf)
				wmu.Lock()
				var werr error
				if n > 0 {
					werr = wire.WriteFrame(st, wire.FrameStdin, buf[:n])
				}
				if rerr != nil && werr == nil {
					werr = wire.WriteFrame(st, wire.FrameStdinEOF, nil)
				}
				wmu.Unlock()
				if rerr != nil || werr != nil {
					return
				}
			}
		}()
	}
	var buf []byte
	for {
		kind, p, err := wire.ReadFrame(st, buf)
		if err != nil {
			if ctx.Err() != nil {
				return Exit{}, ctx.Err()
			}
			return Exit{}, fmt.Errorf("bureau-agent exec: the stream broke: %w", err)
		}
		buf = p
		switch kind {
		case wire.FrameStdout, wire.FrameStderr:
			name := "stdout"
			if kind == wire.FrameStderr {
				name = "stderr"
			}
			if err := out(name, p); err != nil {
				return Exit{}, err // closing the stream stops the command
			}
		case wire.FrameExit:
			var ex Exit
			if err := json.Unmarshal(p, &ex); err != nil {
				return Exit{}, fmt.Errorf("bureau-agent exec: exit: %w", err)
			}
			return ex, nil
		}
	}
}

// Proc is a background process.
type Proc = wire.Proc

// Spawn starts a background process; its output goes to a log in the
// guest.
func (c *Client) Spawn(ctx context.Context, domain, name string, cmd Command) (Proc, error) {
	st, resp, err := c.open(ctx, domain, wire.Request{Op: wire.OpSpawn, Name: name, Argv: cmd.Argv, Env: cmd.Env, Dir: cmd.Dir})
	if err != nil {
		return Proc{}, err
	}
	st.Close()
	return Proc{ID: resp.ID, PID: resp.PID, Name: name, Argv: cmd.Argv, Running: true}, nil
}

// Procs lists the background processes, oldest first.
func (c *Client) Procs(ctx context.Context, domain string) ([]Proc, error) {
	st, resp, err := c.open(ctx, domain, wire.Request{Op: wire.OpProcs})
	if err != nil {
		return nil, err
	}
	st.Close()
	if resp.Procs == nil {
		resp.Procs = []Proc{}
	}
	return resp.Procs, nil
}

// Kill signals a background process (0: TERM).
func (c *Client) Kill(ctx context.Context, domain, id string, signal int) error {
	st, _, err := c.open(ctx, domain, wire.Request{Op: wire.OpKill, ID: id, Signal: signal})
	if err != nil {
		return err
	}
	return st.Close()
}

// Log copies a background process's log to w from offset (negative: that
// many bytes before the end); with follow, until the process has ended
// or ctx is done.
func (c *Client) Log(ctx context.Context, domain, id string, offset int64, follow bool, w io.Writer) error {
	return c.copyLog(ctx, domain, wire.Request{Op: wire.OpLog, ID: id, Offset: offset, Follow: follow}, w)
}

// copyLog sends req (a process's or a service's log) and copies the log
// it answers with to w until it ends or ctx is done.
func (c *Client) copyLog(ctx context.Context, domain string, req wire.Request, w io.Writer) error {
	st, _, err := c.open(ctx, domain, req)
	if err != nil {
		return err
	}
	defer st.Close()
	defer abortOn(ctx, st)()
	_, err = wire.ReceiveData(st, w)
	if err != nil && ctx.Err() != nil {
		return nil // the reader went away: a follow ends that way
	}
	return err
}

// ReadFile streams a file (as root: bureau has checked the user may read
// it) to w and returns its size as it was opened.
func (c *Client) ReadFile(ctx context.Context, domain, path string, w io.Writer) (int64, error) {
	st, resp, err := c.open(ctx, domain, wire.Request{Op: wire.OpRead, Path: path})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	defer abortOn(ctx, st)()
	_, err = wire.ReceiveData(st, w)
	return resp.Size, err
}

// WriteFile creates path (it must not exist) with mode from r; only a
// complete upload is kept.
func (c *Client) WriteFile(ctx context.Context, domain, path string, mode uint32, r io.Reader) (int64, error) {
	st, _, err := c.open(ctx, domain, wire.Request{Op: wire.OpWrite, Path: path, Mode: mode})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	defer abortOn(ctx, st)()
	if _, err := io.CopyBuffer(wire.FrameWriter{W: st, Kind: wire.FrameData}, r, make([]byte, 256<<10)); err != nil {
		return 0, fmt.Errorf("upload: %w", err)
	}
	if err := wire.WriteFrame(st, wire.FrameEnd, nil); err != nil {
		return 0, fmt.Errorf("bureau-agent write: %w", err)
	}
	var resp wire.Response
	if err := wire.ReadHeader(st, &resp); err != nil {
		return 0, fmt.Errorf("bureau-agent write: %w", err)
	}
	if resp.Error != "" {
		return 0, callError("write", resp)
	}
	return resp.Size, nil
}

// DialPort opens a TCP stream to 127.0.0.1:port inside the guest. Close
// ends both ways; CloseWrite (on the returned conn, when it has it) only
// bureau's.
func (c *Client) DialPort(ctx context.Context, domain string, port int) (net.Conn, error) {
	st, _, err := c.open(ctx, domain, wire.Request{Op: wire.OpDial, Port: port})
	return st, err
}

// Terminal is a command on a terminal in the guest.
type Terminal struct {
	st net.Conn
	mu sync.Mutex
}

// PTY starts cmd on a new terminal of rows×cols.
func (c *Client) PTY(ctx context.Context, domain string, cmd Command, rows, cols int) (*Terminal, error) {
	st, _, err := c.open(ctx, domain, wire.Request{Op: wire.OpPTY, Argv: cmd.Argv, Env: cmd.Env, Dir: cmd.Dir, Rows: rows, Cols: cols})
	if err != nil {
		return nil, err
	}
	return &Terminal{st: st}, nil
}

// Input sends keystrokes.
func (t *Terminal) Input(b []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return wire.WriteFrame(t.st, wire.FrameStdin, b)
}

// Resize changes the window size.
func (t *Terminal) Resize(rows, cols int) error {
	var p [4]byte
	binary.BigEndian.PutUint16(p[:], uint16(rows))
	binary.BigEndian.PutUint16(p[2:], uint16(cols))
	t.mu.Lock()
	defer t.mu.Unlock()
	return wire.WriteFrame(t.st, wire.FrameResize, p[:])
}

// Output calls out with the screen's bytes until the command ends, and
// returns how it ended.
func (t *Terminal) Output(out func([]byte) error) (Exit, error) {
	var buf []byte
	for {
		kind, p, err := wire.ReadFrame(t.st, buf)
		if err != nil {
			return Exit{}, fmt.Errorf("bureau-agent pty: %w", err)
		}
		buf = p
		switch kind {
		case wire.FrameStdout:
			if err := out(p); err != nil {
				return Exit{}, err
			}
		case wire.FrameExit:
			var ex Exit
			err := json.Unmarshal(p, &ex)
			return ex, err
		}
	}
}

// Close hangs the terminal up.
func (t *Terminal) Close() error { return t.st.Close() }
