package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/atspi"
	"github.com/bureau/bureau/internal/agent/wire"
)

// UIHelper runs the ui.* ops (the accessibility tree, package atspi). The
// accessibility bus is the session user's and its session bus lets only
// that user in, so each call runs this binary again as the user
// (atspi.HelperArg), one request in and one answer out as JSON on its
// stdin and stdout. A process per call costs a few milliseconds against a
// walk's tens to thousands, keeps nothing between calls that could go
// stale (the session, its buses, the applications come and go), and a
// helper stuck on a frozen application is killed with its call.
type UIHelper struct {
	// Argv runs the helper (nil: /proc/self/exe ui-helper).
	Argv []string
	// SessionBus is the session bus's address ("": the user's own,
	// unix:path=/run/user/<uid>/bus).
	SessionBus string
}

// maxUIAnswer bounds what a helper may answer (a 5000-node tree is a few
// MiB of JSON).
const maxUIAnswer = 64 << 20

// ui serves ui.tree, ui.find and ui.act: a Response at once when the call
// is accepted, then the helper's answer (a JSON Response) as data frames,
// which carry more than a header may.
func (s *Server) ui(ctx context.Context, st net.Conn, req wire.Request) {
	timeout, err := atspi.Check(req)
	var ae *atspi.Error
	if errors.As(err, &ae) {
		refuse(st, ae.Code, ae.Msg)
		return
	}
	name := ""
	if req.UI != nil {
		name = req.UI.User
	} else if req.UIAct != nil {
		name = req.UIAct.User
	}
	cmd, err := s.UI.command(name)
	if err != nil {
		var e *atspi.Error
		if errors.As(err, &e) {
			refuse(st, e.Code, e.Msg)
		} else {
			refuse(st, wire.CodeFailed, err.Error())
		}
		return
	}
	if err := wire.WriteHeader(st, wire.Response{}); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+2*time.Second)
	defer cancel()
	go func() { // bureau sends nothing more: the read ends when it hangs up
		io.Copy(io.Discard, st)
		cancel()
	}()
	answer := s.runUIHelper(ctx, cmd, req)
	if _, err := (wire.FrameWriter{W: st, Kind: wire.FrameData}).Write(answer); err != nil {
		return
	}
	wire.WriteFrame(st, wire.FrameEnd, nil)
}

// runUIHelper runs cmd with req on its stdin and returns its answer, or
// an answer saying why there is none.
func (s *Server) runUIHelper(ctx context.Context, h *helperCmd, req wire.Request) []byte {
	in, _ := json.Marshal(req)
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, h.argv[0], h.argv[1:]...)
	cmd.Env, cmd.Dir, cmd.SysProcAttr = h.env, "/", h.attr
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &capWriter{w: &out, n: maxUIAnswer}
	cmd.Stderr = &capWriter{w: &errOut, n: 4 << 10}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // its group
	cmd.WaitDelay = time.Second
	begun := time.Now()
	err := cmd.Run()
	var resp wire.Response
	switch {
	case ctx.Err() != nil:
		resp = wire.Response{Code: wire.CodeFailed, Error: fmt.Sprintf("the accessibility tree did not answer within %s", time.Since(begun).Round(time.Millisecond))}
	case json.Valid(out.Bytes()) && out.Len() > 0:
		return out.Bytes()
	case err != nil:
		resp = wire.Response{Code: wire.CodeFailed, Error: fmt.Sprintf("ui-helper: %v: %s", err, strings.TrimSpace(errOut.String()))}
	default:
		resp = wire.Response{Code: wire.CodeFailed, Error: "ui-helper answered nothing"}
	}
	s.Log.Warn("ui call failed", "op", req.Op, "err", resp.Error)
	b, _ := json.Marshal(resp)
	return b
}

// helperCmd is how a helper is run.
type helperCmd struct {
	argv []string
	env  []string
	attr *syscall.SysProcAttr
}

// command is the helper for the session of the user named: as that user
// (no switch when it is this process's own), with the session's buses and
// display in its environment.
func (h *UIHelper) command(name string) (*helperCmd, error) {
	if name == "" {
		return nil, &atspi.Error{Code: wire.CodeInvalid, Msg: "ui: no user named"}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, &atspi.Error{Code: wire.CodeInvalid, Msg: fmt.Sprintf("ui: no user %q in the desktop", name)}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("ui: user %s has uid %q, gid %q", name, u.Uid, u.Gid)
	}
	runtime := "/run/user/" + u.Uid
	bus := h.SessionBus
	if bus == "" {
		socket := runtime + "/bus"
		if _, err := os.Stat(socket); err != nil {
			return nil, &atspi.Error{Code: wire.CodeUnavailable, Msg: fmt.Sprintf("the desktop session of %s is not up (no %s)", name, socket)}
		}
		bus = "unix:path=" + socket
	}
	argv := h.Argv
	if len(argv) == 0 {
		argv = []string{"/proc/self/exe", atspi.HelperArg}
	}
	cmd := &helperCmd{argv: argv, attr: &syscall.SysProcAttr{Setpgid: true},
		env: []string{"DBUS_SESSION_BUS_ADDRESS=" + bus, "DISPLAY=:0", "HOME=" + u.HomeDir, "USER=" + name, "LOGNAME=" + name,
			"XDG_RUNTIME_DIR=" + runtime, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}}
	if int(uid) != os.Getuid() {
		cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if groups, err := u.GroupIds(); err == nil {
			for _, g := range groups {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
		cmd.attr.Credential = cred
	}
	return cmd, nil
}

// capWriter keeps the first n bytes written to it and drops the rest.
type capWriter struct {
	w io.Writer
	n int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.n > 0 {
		k := min(len(p), c.n)
		c.w.Write(p[:k])
		c.n -= k
	}
	return len(p), nil
}
