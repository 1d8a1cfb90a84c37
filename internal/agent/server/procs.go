package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// maxProcs bounds the background processes kept on record; the oldest
// ended ones are forgotten (with their logs) first.
const maxProcs = 200

// procTable is the background processes, each recorded in its own
// directory under dir (meta.json and log), so an agent that restarts
// (after an update, or a crash) still lists them.
type procTable struct {
	dir string
	log *slog.Logger
	mu  sync.Mutex
	all map[string]*wire.Proc
}

func openProcs(dir string, log *slog.Logger) (*procTable, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	t := &procTable{dir: dir, log: log, all: map[string]*wire.Proc{}}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if err != nil {
			continue
		}
		var p wire.Proc
		if json.Unmarshal(b, &p) != nil || p.ID != e.Name() {
			continue
		}
		t.all[p.ID] = &p
		if p.Running {
			go t.watch(p.ID, p.PID)
		}
	}
	return t, nil
}

// watch follows a process an earlier run of the agent started: waited for
// when it is still the agent's child (after an update in place), else
// polled; its exit code is then unknown.
func (t *procTable) watch(id string, pid int) {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err == nil {
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		t.ended(id, &code)
		return
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(2 * time.Second)
	}
	t.ended(id, nil)
}

func (t *procTable) save(p *wire.Proc) {
	b, _ := json.Marshal(p)
	f := filepath.Join(t.dir, p.ID, "meta.json")
	if err := os.WriteFile(f+".tmp", b, 0o600); err == nil {
		os.Rename(f+".tmp", f)
	}
}

func (t *procTable) ended(id string, code *int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.all[id]
	if p == nil {
		return
	}
	p.Running, p.ExitCode, p.EndedAt = false, code, time.Now().UnixMilli()
	t.save(p)
}

func (t *procTable) list() []wire.Proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]wire.Proc, 0, len(t.all))
	for _, p := range t.all {
		c := *p
		if fi, err := os.Stat(t.logPath(p.ID)); err == nil {
			c.LogBytes = fi.Size()
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt < out[j].StartedAt })
	return out
}

func (t *procTable) get(id string) (wire.Proc, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.all[id]
	if !ok {
		return wire.Proc{}, false
	}
	return *p, true
}

func (t *procTable) logPath(id string) string { return filepath.Join(t.dir, id, "log") }

// prune forgets the oldest ended processes beyond maxProcs.
func (t *procTable) prune() {
	var ended []*wire.Proc
	for _, p := range t.all {
		if !p.Running {
			ended = append(ended, p)
		}
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].StartedAt < ended[j].StartedAt })
	for i := 0; len(t.all) >= maxProcs && i < len(ended); i++ {
		delete(t.all, ended[i].ID)
		os.RemoveAll(filepath.Join(t.dir, ended[i].ID))
	}
}

func newProcID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "p-" + hex.EncodeToString(b)
}

// spawn starts a background process in its own session, its output (both
// streams) appended to its log.
func (s *Server) spawn(st net.Conn, req wire.Request) {
	if len(req.Argv) == 0 {
		refuse(st, wire.CodeInvalid, "empty command")
		return
	}
	t := s.procs
	t.mu.Lock()
	t.prune()
	t.mu.Unlock()
	id := newProcID()
	if err := os.MkdirAll(filepath.Join(t.dir, id), 0o700); err != nil {
		refuseErr(st, err)
		return
	}
	logf, err := os.OpenFile(t.logPath(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		refuseErr(st, err)
		return
	}
	defer logf.Close()
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Env, cmd.Dir = req.Env, req.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(filepath.Join(t.dir, id))
		refuseErr(st, err)
		return
	}
	p := &wire.Proc{ID: id, Name: req.Name, Argv: req.Argv, PID: cmd.Process.Pid, Running: true, StartedAt: time.Now().UnixMilli()}
	t.mu.Lock()
	t.all[id] = p
	t.save(p)
	t.mu.Unlock()
	go func() {
		werr := cmd.Wait()
		code, _ := exitStatus(cmd.ProcessState, werr)
		t.ended(id, &code)
	}()
	wire.WriteHeader(st, wire.Response{ID: id, PID: p.PID})
}

// kill signals a background process's session (TERM by default).
func (s *Server) kill(st net.Conn, req wire.Request) {
	p, ok := s.procs.get(req.ID)
	if !ok {
		refuse(st, wire.CodeNotFound, "no background process "+req.ID)
		return
	}
	sig := syscall.SIGTERM
	if req.Signal != 0 {
		if req.Signal < 1 || req.Signal > 64 {
			refuse(st, wire.CodeInvalid, "no such signal")
			return
		}
		sig = syscall.Signal(req.Signal)
	}
	if p.Running {
		// The session leader's group, then the leader itself in case it
		// left its group.
		syscall.Kill(-p.PID, sig)
		syscall.Kill(p.PID, sig)
	}
	wire.WriteHeader(st, wire.Response{ID: p.ID, PID: p.PID})
}

// tailLog sends a background process's log (see streamLog); with Follow
// it goes on until the process has ended and its log is read.
func (s *Server) tailLog(ctx context.Context, st net.Conn, req wire.Request) {
	if _, ok := s.procs.get(req.ID); !ok {
		refuse(st, wire.CodeNotFound, "no background process "+req.ID)
		return
	}
	streamLog(ctx, st, s.procs.logPath(req.ID), req, func() bool {
		p, _ := s.procs.get(req.ID)
		return p.Running
	})
}

// streamLog sends a log from req.Offset (negative: that many bytes before
// the end) as data frames; with Follow it goes on while live says so, or
// until bureau hangs up. A log emptied by rotation is read from its start.
func streamLog(ctx context.Context, st net.Conn, path string, req wire.Request, live func() bool) {
	f, err := os.Open(path)
	if err != nil {
		refuseErr(st, err)
		return
	}
	defer f.Close()
	if req.Offset < 0 {
		if fi, err := f.Stat(); err == nil {
			req.Offset = max(0, fi.Size()+req.Offset)
		}
	}
	pos, err := f.Seek(req.Offset, io.SeekStart)
	if err != nil {
		refuseErr(st, err)
		return
	}
	if err := wire.WriteHeader(st, wire.Response{ID: req.ID}); err != nil {
		return
	}
	gone := make(chan struct{})
	go func() { io.Copy(io.Discard, st); close(gone) }()
	w := wire.FrameWriter{W: st, Kind: wire.FrameData}
	buf := make([]byte, 256<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			pos += int64(n)
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			continue
		}
		if err != nil && err != io.EOF {
			wire.WriteFrame(st, wire.FrameError, []byte(err.Error()))
			return
		}
		if !req.Follow || !live() {
			// One more read: output written just before the exit.
			if n, _ := f.Read(buf); n > 0 {
				pos += int64(n)
				w.Write(buf[:n])
				continue
			}
			wire.WriteFrame(st, wire.FrameEnd, nil)
			return
		}
		if fi, err := f.Stat(); err == nil && fi.Size() < pos {
			pos, _ = f.Seek(0, io.SeekStart) // rotated
		}
		select {
		case <-gone:
			return
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
