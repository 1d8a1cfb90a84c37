package atspi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// HelperArg is the subcommand bureau-agent runs itself with, as the
// session's user, to serve one ui call (HelperMain).
const HelperArg = "ui-helper"

// slack is the time a call has besides its walk: reaching the bus and
// reading the screen's size.
const slack = 3 * time.Second

// HelperMain serves one ui call on stdin and stdout (Serve) through the
// session bus DBUS_SESSION_BUS_ADDRESS names, and returns the exit code.
func HelperMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Serve(ctx, os.Getenv("DBUS_SESSION_BUS_ADDRESS"), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ui-helper:", err)
		return 1
	}
	return 0
}

// Serve runs one ui call: a wire.Request read from r as JSON (OpUITree,
// OpUIFind or OpUIAct), answered on w as a wire.Response in JSON, its UI
// or its Code and Error. It fails only when it cannot answer.
func Serve(ctx context.Context, sessionAddr string, r io.Reader, w io.Writer) error {
	var req wire.Request
	var resp wire.Response
	if err := json.NewDecoder(io.LimitReader(r, wire.MaxHeader)).Decode(&req); err != nil {
		resp = failure(invalid("the request is not JSON: " + err.Error()))
	} else if res, err := run(ctx, sessionAddr, req); err != nil {
		resp = failure(err)
	} else {
		resp.UI = res
	}
	return json.NewEncoder(w).Encode(resp)
}

// run checks the request, reaches the accessibility bus and does the op.
func run(ctx context.Context, sessionAddr string, req wire.Request) (*wire.UIResult, error) {
	timeout, err := Check(req)
	if err != nil {
		return nil, err
	}
	if sessionAddr == "" {
		return nil, &Error{Code: wire.CodeUnavailable, Msg: "no session bus address (DBUS_SESSION_BUS_ADDRESS)"}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+slack)
	defer cancel()
	c, err := Dial(ctx, sessionAddr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	d := New(c)
	switch req.Op {
	case wire.OpUITree:
		return d.Tree(ctx, *req.UI)
	case wire.OpUIFind:
		return d.Find(ctx, *req.UI)
	default:
		return d.Act(ctx, *req.UIAct)
	}
}

// Check refuses a malformed request (an *Error) before the bus is
// dialled, and says how long the op may take.
func Check(req wire.Request) (time.Duration, error) {
	ms := 0
	switch req.Op {
	case wire.OpUITree, wire.OpUIFind:
		if req.UI == nil {
			return 0, invalid(req.Op + " needs its query (ui)")
		}
		q, err := parseQuery(*req.UI, req.Op == wire.OpUIFind)
		if err != nil {
			return 0, err
		}
		return q.timeout, nil
	case wire.OpUIAct:
		if req.UIAct == nil {
			return 0, invalid("ui.act needs its action (ui_act)")
		}
		if _, err := decodeID(req.UIAct.Node); err != nil {
			return 0, err
		}
		ms = req.UIAct.TimeoutMS
	default:
		return 0, invalid("not a ui op: " + req.Op)
	}
	if ms < 0 || ms > wire.UIMaxTimeout {
		return 0, invalid(fmt.Sprintf("timeout_ms must be 1..%d", wire.UIMaxTimeout))
	}
	if ms == 0 {
		ms = wire.UIDefaultTimeout
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// failure is err as an answer: an Error keeps its code, anything else is
// a failure.
func failure(err error) wire.Response {
	var e *Error
	if errors.As(err, &e) {
		return wire.Response{Code: e.Code, Error: e.Msg}
	}
	return wire.Response{Code: wire.CodeFailed, Error: err.Error()}
}

// Timeout is how long the agent lets a helper run for req before it
// stops it: the op's own time and some slack.
func Timeout(req wire.Request) time.Duration {
	t, err := Check(req)
	if err != nil {
		t = 0
	}
	return t + 2*slack
}
