// Package server is bureau-agent, the agent bureau runs inside every
// desktop: it serves bureau's calls (exec with real pipes, background
// processes, files, a port dialer, terminals, its own update) over one
// yamux session on a virtio-serial port. It runs as root and needs no
// network; bureau checks users and paths before it calls.
package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/hashicorp/yamux"
)

// Server serves bureau's calls.
type Server struct {
	Info wire.Info
	Log  *slog.Logger
	// StateDir keeps background processes' records and logs.
	StateDir string
	// Exe is the agent's installed binary, replaced by an update.
	Exe string
	// Restart runs the new binary after an update (exec in place).
	Restart func()

	// RunDir is a tmpfs where services find their secrets as files.
	RunDir string

	// Windows are the X session's windows (nil: display :0's, reached
	// when first asked for).
	Windows WindowSystem
	// UI runs the accessibility tree's ops (ui.go); the zero value runs
	// this binary's ui-helper as the session's user.
	UI UIHelper

	procs *procTable
	svcs  *svcTable
}

// Init prepares the server (and picks up background processes an earlier
// run of the agent started).
func (s *Server) Init() error {
	if s.Log == nil {
		s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	t, err := openProcs(s.StateDir, s.Log)
	if err != nil {
		return err
	}
	s.procs = t
	if s.svcs, err = openServices(filepath.Join(s.StateDir, "services"), s.RunDir, s.Log); err != nil {
		return err
	}
	if s.Windows == nil {
		s.Windows = newX11Windows(":0", s.Log)
	}
	return nil
}

// ServeConn runs one connection: the handshake, then calls until the
// connection ends.
func (s *Server) ServeConn(ctx context.Context, c io.ReadWriteCloser) error {
	r, err := wire.Accept(c, s.Info)
	if err != nil {
		return err
	}
	sess, err := yamux.Server(wire.Joined{R: r, C: c}, wire.Config(false))
	if err != nil {
		return err
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	s.Log.Info("bureau connected")
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return err
		}
		go s.handle(ctx, st)
	}
}

// ServeDevice serves the virtio-serial port at path for good: a closed or
// not yet connected port is opened again.
func (s *Server) ServeDevice(ctx context.Context, path string) {
	quiet := time.Time{}
	for ctx.Err() == nil {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			if time.Since(quiet) > time.Minute {
				s.Log.Warn("cannot open the channel to bureau", "path", path, "err", err)
				quiet = time.Now()
			}
			sleep(ctx, time.Second)
			continue
		}
		err = s.ServeConn(ctx, f)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, yamux.ErrSessionShutdown) {
			s.Log.Info("connection ended", "err", err)
		}
		// A port bureau is not connected to reads as ended at once.
		sleep(ctx, 200*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (s *Server) handle(ctx context.Context, st net.Conn) {
	defer st.Close()
	var req wire.Request
	if err := wire.ReadHeader(st, &req); err != nil {
		return
	}
	switch req.Op {
	case wire.OpExec:
		s.exec(ctx, st, req)
	case wire.OpSpawn:
		s.spawn(st, req)
	case wire.OpProcs:
		wire.WriteHeader(st, wire.Response{Procs: s.procs.list()})
	case wire.OpKill:
		s.kill(st, req)
	case wire.OpLog:
		s.tailLog(ctx, st, req)
	case wire.OpRead:
		s.read(st, req)
	case wire.OpWrite:
		s.write(st, req)
	case wire.OpDial:
		s.dial(st, req)
	case wire.OpPTY:
		s.pty(st, req)
	case wire.OpSvcPut, wire.OpSvcList, wire.OpSvcCtl, wire.OpSecrets:
		s.services(st, req)
	case wire.OpSvcLog:
		s.serviceLog(ctx, st, req)
	case wire.OpUpdate:
		s.update(st, req)
	case wire.OpWindows, wire.OpWindow:
		s.windows(ctx, st, req)
	case wire.OpUITree, wire.OpUIFind, wire.OpUIAct:
		s.ui(ctx, st, req)
	default:
		refuse(st, wire.CodeInvalid, "unknown op "+req.Op)
	}
}

func refuse(w io.Writer, code, msg string) {
	wire.WriteHeader(w, wire.Response{Code: code, Error: msg})
}

func refuseErr(w io.Writer, err error) {
	code := wire.CodeFailed
	if errors.Is(err, os.ErrNotExist) {
		code = wire.CodeNotFound
	}
	refuse(w, code, err.Error())
}
