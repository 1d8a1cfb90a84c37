package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// drainAfterExit is how long output still arriving after a command has
// exited is forwarded. A child it left running in the background may hold
// the pipes for good: the call ends regardless, and what the child writes
// later is read and dropped so it never blocks on a full pipe.
const drainAfterExit = 150 * time.Millisecond

// killGrace is how long a command gets after TERM before KILL.
const killGrace = 5 * time.Second

// frames serialises the frames an exec writes from several goroutines and
// stops them once the exit has been sent.
type frames struct {
	mu   sync.Mutex
	w    io.Writer
	shut bool
}

func (f *frames) send(kind byte, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut {
		return nil
	}
	return wire.WriteFrame(f.w, kind, b)
}

func (f *frames) closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shut
}

// last sends the final frame and drops every later one.
func (f *frames) last(kind byte, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shut = true
	return wire.WriteFrame(f.w, kind, b)
}

func (s *Server) exec(ctx context.Context, st net.Conn, req wire.Request) {
	if len(req.Argv) == 0 {
		refuse(st, wire.CodeInvalid, "empty command")
		return
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Env, cmd.Dir = req.Env, req.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		refuseErr(st, err)
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		refuseErr(st, err)
		return
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var inW *os.File
	if req.Stdin {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			refuseErr(st, err)
			return
		}
		cmd.Stdin = inR
		defer inR.Close()
	}
	begun := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		refuseErr(st, err)
		return
	}
	pgid := cmd.Process.Pid
	if err := wire.WriteHeader(st, wire.Response{PID: pgid}); err != nil {
		killGroup(pgid)
		cmd.Wait()
		return
	}
	f := &frames{w: st}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go pump(outR, f, wire.FrameStdout, &pumps)
	go pump(errR, f, wire.FrameStderr, &pumps)

	exited := make(chan struct{})
	go s.control(st, inW, pgid, exited)

	werr := cmd.Wait()
	close(exited)
	drained := make(chan struct{})
	go func() { pumps.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainAfterExit):
	}
	ex := wire.Exit{DurationMS: time.Since(begun).Milliseconds()}
	ex.Code, ex.Signal = exitStatus(cmd.ProcessState, werr)
	b, _ := json.Marshal(ex)
	f.last(wire.FrameExit, b)
}

// control reads bureau's frames: stdin, its end, signals. When bureau goes
// away before the command has exited, the command's group is stopped.
func (s *Server) control(st net.Conn, inW *os.File, pgid int, exited <-chan struct{}) {
	closeIn := func() {
		if inW != nil {
			inW.Close()
			inW = nil
		}
	}
	defer closeIn()
	var buf []byte
	for {
		kind, p, err := wire.ReadFrame(st, buf)
		if err != nil {
			select {
			case <-exited:
			default:
				stopGroup(pgid, exited)
			}
			return
		}
		buf = p
		switch kind {
		case wire.FrameStdin:
			if inW != nil {
				if _, err := inW.Write(p); err != nil {
					closeIn()
				}
			}
		case wire.FrameStdinEOF:
			closeIn()
		case wire.FrameSignal:
			if len(p) == 1 && p[0] > 0 && p[0] < 65 {
				syscall.Kill(-pgid, syscall.Signal(p[0]))
			}
		}
	}
}

// pump forwards a pipe as frames until it ends. Once the exit is sent (or
// bureau is gone) it goes on reading and dropping, so a child left running
// never blocks on a full pipe.
func pump(r *os.File, f *frames, kind byte, wg *sync.WaitGroup) {
	defer r.Close()
	counted := false
	finish := func() {
		if !counted {
			counted = true
			wg.Done()
		}
	}
	defer finish()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && f.send(kind, buf[:n]) != nil {
			finish()
		}
		if err != nil {
			return
		}
		if f.closed() {
			finish()
		}
	}
}

func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// stopGroup sends TERM to the group, then KILL if it has not exited.
func stopGroup(pgid int, exited <-chan struct{}) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(killGrace):
		killGroup(pgid)
	}
}

// exitStatus is the exit code (128+signal when a signal ended it) and the
// signal.
func exitStatus(ps *os.ProcessState, err error) (int, int) {
	if ps == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ps = ee.ProcessState
		}
	}
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ps.ExitCode(), 0
}
