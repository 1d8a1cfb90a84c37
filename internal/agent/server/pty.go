package server

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"os/exec"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/creack/pty"
)

// pty runs a command on a new terminal: keystrokes come as stdin frames,
// window sizes as resize frames; the screen goes back as stdout frames and
// the end as an exit frame. bureau hanging up hangs the terminal up.
func (s *Server) pty(st net.Conn, req wire.Request) {
	if len(req.Argv) == 0 {
		refuse(st, wire.CodeInvalid, "empty command")
		return
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Env, cmd.Dir = req.Env, req.Dir
	size := &pty.Winsize{Rows: uint16(clamp(req.Rows, 24)), Cols: uint16(clamp(req.Cols, 80))}
	tty, err := pty.StartWithSize(cmd, size)
	if err != nil {
		refuseErr(st, err)
		return
	}
	defer tty.Close()
	begun := time.Now()
	pid := cmd.Process.Pid
	if err := wire.WriteHeader(st, wire.Response{PID: pid}); err != nil {
		syscall.Kill(-pid, syscall.SIGHUP)
		cmd.Wait()
		return
	}
	f := &frames{w: st}
	exited := make(chan struct{})
	go func() {
		var buf []byte
		for {
			kind, p, err := wire.ReadFrame(st, buf)
			if err != nil {
				select {
				case <-exited:
				default:
					syscall.Kill(-pid, syscall.SIGHUP)
					tty.Close()
				}
				return
			}
			buf = p
			switch kind {
			case wire.FrameStdin:
				tty.Write(p)
			case wire.FrameResize:
				if len(p) == 4 {
					pty.Setsize(tty, &pty.Winsize{Rows: binary.BigEndian.Uint16(p), Cols: binary.BigEndian.Uint16(p[2:])})
				}
			case wire.FrameSignal:
				if len(p) == 1 && p[0] > 0 && p[0] < 65 {
					syscall.Kill(-pid, syscall.Signal(p[0]))
				}
			}
		}
	}()
	out := make(chan struct{})
	go func() {
		defer close(out)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			if n > 0 && f.send(wire.FrameStdout, buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	werr := cmd.Wait()
	close(exited)
	select {
	case <-out: // the terminal reads EIO once its last writer is gone
	case <-time.After(drainAfterExit):
	}
	ex := wire.Exit{DurationMS: time.Since(begun).Milliseconds()}
	ex.Code, ex.Signal = exitStatus(cmd.ProcessState, werr)
	b, _ := json.Marshal(ex)
	f.last(wire.FrameExit, b)
}

func clamp(v, def int) int {
	if v < 1 || v > 1000 {
		return def
	}
	return v
}
