package loop

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

// gated runs a gated call in the background.
func gated(w *world, ctx context.Context, in Input, title func(context.Context) string) <-chan gateResult {
	out := make(chan gateResult, 1)
	go func() {
		r, err := w.Gate(ctx, "d1", "alice", agent, in, title, json.RawMessage(`{"cmd":"x"}`))
		out <- gateResult{r, err}
	}()
	return out
}

type gateResult struct {
	r   *Request
	err error
}

// pendingApproval waits for the gate's request.
func pendingApproval(t *testing.T, w *world) *Request {
	t.Helper()
	var r *Request
	eventually(t, "an approval pending", func() bool {
		list, _ := w.List(context.Background(), Filter{DesktopID: "d1", Status: StatusPending, Kind: KindApproval})
		if len(list) == 1 {
			r = list[0]
		}
		return r != nil
	})
	return r
}

func TestGate(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	if err := w.SetPolicy(ctx, "d1", Policy{Exec: []string{`rm\s+-rf`}, Keys: []KeyRule{{Key: "Return", WindowTitle: "Checkout"}}, TimeoutS: 3600}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetPolicy(ctx, "d1", Policy{TimeoutS: 1}); field(err) != "timeout_s" {
		t.Fatalf("bad policy: %v", err)
	}
	p, err := w.Policy(ctx, "d1")
	if err != nil || len(p.Exec) != 1 {
		t.Fatalf("policy: %+v %v", p, err)
	}

	// Nothing gated: no request, no title asked.
	asked := 0
	title := func(context.Context) string { asked++; return "Checkout – Shop" }
	if r, err := w.Gate(ctx, "d1", "alice", agent, Input{Kind: ActionExec, Command: "ls"}, title, nil); r != nil || err != nil {
		t.Fatalf("not gated: %+v %v", r, err)
	}
	if r, err := w.Gate(ctx, "d1", "alice", agent, Input{Kind: ActionKey, Keys: "ctrl+s"}, title, nil); r != nil || err != nil || asked != 0 {
		t.Fatalf("another key: %+v %v, title asked %d times", r, err, asked)
	}
	if r, err := w.Gate(ctx, "d2", "alice", agent, Input{Kind: ActionExec, Command: "rm -rf /"}, title, nil); r != nil || err != nil {
		t.Fatalf("another desktop: %+v %v", r, err)
	}

	// Approved: the call goes ahead.
	res := gated(w, ctx, Input{Kind: ActionExec, Command: "rm -rf /home/agent/build"}, title)
	r := pendingApproval(t, w)
	if !r.Gated || r.Question != "exec: rm -rf /home/agent/build" || r.Action.Rule != `exec[0]: rm\s+-rf` ||
		r.Action.Kind != ActionExec || string(r.Action.Detail) != `{"cmd":"x"}` || r.AskedBy != agent || r.Owner != "alice" ||
		r.ExpiresAt.Sub(r.AskedAt) != time.Hour {
		t.Fatalf("request: %+v %+v", r, r.Action)
	}
	if _, err := w.Decide(ctx, "d1", r.ID, sam, true, "fine"); err != nil {
		t.Fatal(err)
	}
	if g := <-res; g.err != nil || g.r == nil || g.r.Status != StatusApproved || g.r.DecidedBy != "alice/tok_sam" {
		t.Fatalf("approved: %+v %v", g.r, g.err)
	}

	// Denied: it does not; the title is asked once, for the key rule.
	res = gated(w, ctx, Input{Kind: ActionKey, Keys: "Return"}, title)
	r = pendingApproval(t, w)
	if asked != 1 || r.Question != `key Return in window "Checkout – Shop"` {
		t.Fatalf("key request: %q, title asked %d times", r.Question, asked)
	}
	if _, err := w.Decide(ctx, "d1", r.ID, dana, false, "no"); err != nil {
		t.Fatal(err)
	}
	var de *DeniedError
	if g := <-res; !errors.As(g.err, &de) || de.Request.Reason != "no" || de.Request.DecidedBy != "console/ct_dana" || g.r == nil {
		t.Fatalf("denied: %+v %v", g.r, g.err)
	}
	if s := w.stepsOf(steps.KindApproval); len(s) != 2 || s[0].Status != 200 || s[1].Status != 403 {
		t.Fatalf("steps: %+v", s)
	}
}

func TestGateTimesOut(t *testing.T) {
	w := newWorld(t, nil)
	w.gateUnit = 4 * time.Millisecond
	ctx := context.Background()
	if err := w.SetPolicy(ctx, "d1", Policy{FileDelete: true, TimeoutS: 5}); err != nil {
		t.Fatal(err)
	}
	r, err := w.Gate(ctx, "d1", "alice", agent, Input{Kind: ActionFileDelete, Path: "/home/agent/x"}, nil, nil)
	var de *DeniedError
	if !errors.As(err, &de) || r.Status != StatusDenied || r.DecidedBy != "" || r.Reason != "no decision within 20ms" ||
		r.Question != "delete file /home/agent/x" {
		t.Fatalf("timed out: %+v %v", r, err)
	}
	if e := w.eventsOf("denied"); len(e) != 1 || e[0].actor != "bureau" {
		t.Fatalf("events: %+v", e)
	}
	if s := w.stepsOf(steps.KindApproval); len(s) != 1 || s[0].Status != 408 {
		t.Fatalf("steps: %+v", s)
	}
}

func TestGateCallerGoesAway(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	if err := w.SetPolicy(ctx, "d1", Policy{Clicks: []Region{{Name: "Pay", X: 10, Y: 10, Width: 5, Height: 5}}}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	res := gated(w, cctx, Input{Kind: ActionClick, X: 12, Y: 12}, nil)
	r := pendingApproval(t, w)
	if r.Question != "click at (12, 12) in Pay" || r.ExpiresAt.Sub(r.AskedAt) != DefaultGateTimeoutS*time.Second {
		t.Fatalf("request: %+v", r)
	}
	cancel()
	if g := <-res; !errors.Is(g.err, context.Canceled) || g.r != nil {
		t.Fatalf("gone: %+v %v", g.r, g.err)
	}
	if r, _ = w.Get(ctx, "d1", r.ID); r.Status != StatusDenied || r.Reason != "the caller went away" || r.DecidedBy != "" {
		t.Fatalf("request after: %+v", r)
	}
	if s := w.Status("d1"); s.Approvals != 0 {
		t.Fatalf("status: %+v", s)
	}
}

func TestPolicyCache(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	if p, err := w.Policy(ctx, "d1"); err != nil || p.FileDelete {
		t.Fatalf("none: %+v %v", p, err)
	}
	if err := w.SetPolicy(ctx, "d1", Policy{FileDelete: true}); err != nil {
		t.Fatal(err)
	}
	if p, _ := w.Policy(ctx, "d1"); !p.FileDelete {
		t.Fatal("set policy not seen")
	}
	if b, _ := w.store.ApprovalPolicy(ctx, "d1"); string(b) != `{"file_delete":true}` {
		t.Fatalf("stored: %s", b)
	}
	if err := w.DeletePolicy(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if p, _ := w.Policy(ctx, "d1"); p.FileDelete {
		t.Fatal("deleted policy still seen")
	}
}
