package loop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
)

func helpRequest(q string, choices ...string) *Request {
	return &Request{DesktopID: "d1", Owner: "alice", Kind: KindHelp, Question: q, Choices: choices, AskedBy: agent}
}

func approval(action string) *Request {
	return &Request{DesktopID: "d1", Owner: "alice", Kind: KindApproval, Question: action, AskedBy: agent}
}

func field(err error) string {
	var ve *desktop.ValidationError
	if errors.As(err, &ve) {
		return ve.Field
	}
	return "(not a ValidationError: " + errString(err) + ")"
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func TestAskValidates(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	for _, c := range []struct {
		r       *Request
		timeout time.Duration
		field   string
	}{
		{helpRequest("  "), time.Minute, "question"},
		{helpRequest(strings.Repeat("x", MaxQuestion+1)), time.Minute, "question"},
		{helpRequest("ok?", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"), time.Minute, "choices"},
		{helpRequest("ok?", "yes", " "), time.Minute, "choices[1]"},
		{helpRequest("ok?", "yes", strings.Repeat("n", MaxChoice+1)), time.Minute, "choices[1]"},
		{helpRequest("ok?", "yes", "no", "yes "), time.Minute, "choices[2]"},
		{helpRequest("ok?"), 0, "timeout_s"},
		{&Request{DesktopID: "d1", Kind: "chat", Question: "hi"}, time.Minute, "kind"},
	} {
		if _, err := w.Ask(ctx, c.r, c.timeout, nil); field(err) != c.field {
			t.Errorf("%q %q %v: field %s, want %s", c.r.Question, c.r.Choices, c.timeout, field(err), c.field)
		}
	}
	if list, _ := w.List(ctx, Filter{}); len(list) != 0 {
		t.Fatalf("stored: %d", len(list))
	}
}

func TestHelpRequest(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	shot := []byte("\x89PNG picture")
	r, err := w.Ask(ctx, helpRequest(" Which account? ", "work", "personal"), time.Hour, shot)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "req_") || len(r.ID) != 20 || r.Status != StatusPending || !r.Screenshot ||
		r.Question != "Which account?" || r.ExpiresAt.Sub(r.AskedAt) != time.Hour {
		t.Fatalf("asked: %+v", r)
	}
	if st := w.Status("d1"); st.Help != 1 || st.Approvals != 0 {
		t.Fatalf("status: %+v", st)
	}
	if e := w.eventsOf("help_requested"); len(e) != 1 || e[0].actor != agent || !contains(e[0].msg, `"Which account?"`) {
		t.Fatalf("events: %+v", e)
	}
	if b, err := w.Screenshot(ctx, "d1", r.ID); err != nil || !bytes.Equal(b, shot) {
		t.Fatalf("screenshot: %q %v", b, err)
	}
	if fi, err := os.Stat(w.shotPath(r.ID)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("screenshot file: %v %v", fi, err)
	}
	if _, err := w.Get(ctx, "d2", r.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("through another desktop: %v", err)
	}
	if _, err := w.Screenshot(ctx, "d2", r.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("screenshot through another desktop: %v", err)
	}

	// Wait returns the request pending when nobody answers in time.
	if got, err := w.Wait(ctx, "d1", r.ID, 10*time.Millisecond); err != nil || got.Status != StatusPending {
		t.Fatalf("wait: %+v %v", got, err)
	}
	if _, err := w.Decide(ctx, "d1", r.ID, dana, true, ""); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("approve help: %v", err)
	}
	if _, err := w.Answer(ctx, "d1", r.ID, Person{Name: "me", Actor: agent, Console: "ct_x"}, "work", true); !errors.Is(err, ErrOwnRequest) {
		t.Fatalf("a console link of the asking token: %v", err)
	}
	if _, err := w.Answer(ctx, "d1", r.ID, Person{Actor: agent}, "work", true); !errors.Is(err, ErrOwnRequest) {
		t.Fatalf("the asking token: %v", err)
	}
	if _, err := w.Answer(ctx, "d1", r.ID, dana, "home", true); field(err) != "choice" {
		t.Fatalf("not a choice: %v", err)
	}
	if _, err := w.Answer(ctx, "d1", r.ID, dana, " ", false); field(err) != "answer" {
		t.Fatalf("empty answer: %v", err)
	}

	// A waiter wakes when Dana answers.
	waited := make(chan *Request)
	go func() {
		got, _ := w.Wait(ctx, "d1", r.ID, time.Minute)
		waited <- got
	}()
	time.Sleep(5 * time.Millisecond)
	got, err := w.Answer(ctx, "d1", r.ID, dana, "work", true)
	if err != nil || got.Status != StatusAnswered || got.Answer != "work" || !got.Choice || got.DecidedBy != "console/ct_dana" || got.DecidedAt == nil {
		t.Fatalf("answered: %+v %v", got, err)
	}
	select {
	case got := <-waited:
		if got == nil || got.Status != StatusAnswered {
			t.Fatalf("waiter: %+v", got)
		}
	case <-time.After(time.Second):
		t.Fatal("waiter not woken")
	}
	if st := w.Status("d1"); st.Help != 0 {
		t.Fatalf("still counted: %+v", st)
	}
	var de *DecidedError
	if _, err := w.Answer(ctx, "d1", r.ID, sam, "personal", true); !errors.As(err, &de) || de.Request.Answer != "work" || de.Expired() {
		t.Fatalf("answer twice: %v", err)
	}
	if e := w.eventsOf("help_answered"); len(e) != 1 || e[0].actor != "console/ct_dana" || e[0].msg != `Dana answered: "work"` {
		t.Fatalf("answered event: %+v", e)
	}
	s := w.stepsOf(steps.KindHelp)
	if len(s) != 1 || s[0].Actor != agent || !s[0].At.Equal(r.AskedAt) || s[0].Status != 200 {
		t.Fatalf("step: %+v", s)
	}
	in, res := fields(t, s[0].Input), fields(t, s[0].Result)
	if in["request_id"] != r.ID || in["question"] != "Which account?" || len(in["choices"].([]any)) != 2 ||
		res["status"] != "answered" || res["answer"] != "work" || res["choice"] != true || res["by"] != "Dana" || res["by_actor"] != "console/ct_dana" {
		t.Fatalf("step: %s %s", s[0].Input, s[0].Result)
	}
}

func TestApprovalRequest(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	r, err := w.Ask(ctx, approval("submit the order"), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Action == nil || r.Action.Kind != ActionExplicit || r.Action.Summary != "submit the order" || r.Screenshot {
		t.Fatalf("asked: %+v", r)
	}
	if st := w.Status("d1"); st.Approvals != 1 {
		t.Fatalf("status: %+v", st)
	}
	if _, err := w.Screenshot(ctx, "d1", r.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no screenshot: %v", err)
	}
	if _, err := w.Answer(ctx, "d1", r.ID, dana, "yes", false); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("answer an approval: %v", err)
	}
	if _, err := w.Decide(ctx, "d1", r.ID, Person{Actor: agent}, true, ""); !errors.Is(err, ErrOwnRequest) {
		t.Fatalf("own: %v", err)
	}
	if _, err := w.Decide(ctx, "d1", r.ID, dana, false, strings.Repeat("r", MaxReason+1)); field(err) != "reason" {
		t.Fatalf("long reason: %v", err)
	}
	got, err := w.Decide(ctx, "d1", r.ID, dana, false, "not today")
	if err != nil || got.Status != StatusDenied || got.Reason != "not today" || got.DecidedBy != "console/ct_dana" {
		t.Fatalf("denied: %+v %v", got, err)
	}
	if e := w.eventsOf("denied"); len(e) != 1 || e[0].actor != "console/ct_dana" || e[0].msg != `Dana denied "submit the order": not today` {
		t.Fatalf("event: %+v", e)
	}
	s := w.stepsOf(steps.KindApproval)
	if len(s) != 1 || s[0].Status != 403 || fields(t, s[0].Result)["reason"] != "not today" || fields(t, s[0].Result)["by"] != "Dana" {
		t.Fatalf("step: %+v", s)
	}
	if fields(t, s[0].Input)["action"].(map[string]any)["summary"] != "submit the order" {
		t.Fatalf("step input: %s", s[0].Input)
	}
}

func TestDecidersRace(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	for range 20 {
		r, err := w.Ask(ctx, approval("deploy"), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range []Person{dana, sam} {
			wg.Go(func() { _, errs[i] = w.Decide(ctx, "d1", r.ID, p, i == 0, "") })
		}
		wg.Wait()
		var de *DecidedError
		if (errs[0] == nil) == (errs[1] == nil) || !errors.As(errors.Join(errs...), &de) {
			t.Fatalf("both or neither won: %v", errs)
		}
	}
	if n := len(w.eventsOf("approved")) + len(w.eventsOf("denied")); n != 20 {
		t.Fatalf("%d decisions told, want 20", n)
	}
	if st := w.Status("d1"); st.Approvals != 0 {
		t.Fatalf("status: %+v", st)
	}
}

func TestRequestsExpire(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	h, _ := w.Ask(ctx, helpRequest("anyone?"), 20*time.Millisecond, nil)
	a, _ := w.Ask(ctx, approval("deploy"), 20*time.Millisecond, nil)
	if st := w.Status("d1"); st.Help != 1 || st.Approvals != 1 {
		t.Fatalf("status: %+v", st)
	}
	got, err := w.Wait(ctx, "d1", a.ID, time.Second)
	if err != nil || got.Status != StatusDenied || got.DecidedBy != "" || got.Reason != "no decision within 20ms" {
		t.Fatalf("approval: %+v %v", got, err)
	}
	got, _ = w.Wait(ctx, "d1", h.ID, time.Second)
	if got.Status != StatusExpired || got.DecidedBy != "" {
		t.Fatalf("help: %+v", got)
	}
	var de *DecidedError
	if _, err := w.Decide(ctx, "d1", a.ID, dana, true, ""); !errors.As(err, &de) || !de.Expired() {
		t.Fatalf("decide expired: %v", err)
	}
	if _, err := w.Answer(ctx, "d1", h.ID, dana, "me", false); !errors.As(err, &de) || !de.Expired() {
		t.Fatalf("answer expired: %v", err)
	}
	eventually(t, "counts and history", func() bool {
		st := w.Status("d1")
		return st.Help == 0 && st.Approvals == 0 && len(w.eventsOf("help_expired")) > 0 && len(w.eventsOf("denied")) > 0
	})
	if e := w.eventsOf("help_expired"); len(e) != 1 || e[0].actor != "bureau" {
		t.Fatalf("help expired: %+v", e)
	}
	if e := w.eventsOf("denied"); len(e) != 1 || e[0].actor != "bureau" || !contains(e[0].msg, "no decision within 20ms") {
		t.Fatalf("denied: %+v", e)
	}
	for _, s := range append(w.stepsOf(steps.KindHelp), w.stepsOf(steps.KindApproval)...) {
		if s.Status != 408 {
			t.Errorf("%s step: %d", s.Kind, s.Status)
		}
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	w := newWorld(t, nil)
	r, _ := w.Ask(context.Background(), helpRequest("?"), time.Hour, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if got, err := w.Wait(ctx, "d1", r.ID, time.Minute); err != nil || got.Status != StatusPending {
		t.Fatalf("deadline: %+v %v", got, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := w.Wait(ctx, "d1", r.ID, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := w.Wait(context.Background(), "d1", "req_nope", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestRestart(t *testing.T) {
	st := newFakeStore()
	ctx := context.Background()
	t0 := time.Now().UTC()
	for _, r := range []*Request{
		{ID: "req_gated", DesktopID: "d1", Kind: KindApproval, Status: StatusPending, Question: "exec: rm", Gated: true,
			Action: &Action{Kind: ActionExec, Summary: "exec: rm"}, AskedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ID: "req_help", DesktopID: "d1", Kind: KindHelp, Status: StatusPending, Question: "?", AskedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ID: "req_late", DesktopID: "d1", Kind: KindHelp, Status: StatusPending, Question: "?", AskedAt: t0.Add(-time.Hour), ExpiresAt: t0.Add(-time.Minute)},
		{ID: "req_done", DesktopID: "d1", Kind: KindHelp, Status: StatusAnswered, Question: "?", AskedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	} {
		st.AddRequest(ctx, r)
	}
	w := newWorld(t, st)
	r, _ := w.Get(ctx, "d1", "req_gated")
	if r.Status != StatusExpired || r.DecidedBy != "" || r.Reason != "bureau restarted while it waited" {
		t.Fatalf("gated: %+v", r)
	}
	eventually(t, "the late one expired", func() bool {
		r, _ := w.Get(ctx, "d1", "req_late")
		return r.Status == StatusExpired && w.Status("d1").Help == 1
	})
	if s := w.Status("d1"); s.Help != 1 || s.Approvals != 0 {
		t.Fatalf("status: %+v", s)
	}
	if r, err := w.Answer(ctx, "d1", "req_help", dana, "yes", false); err != nil || r.Status != StatusAnswered {
		t.Fatalf("the one still pending: %+v %v", r, err)
	}
	if s := w.Status("d1"); s.Help != 0 {
		t.Fatalf("status: %+v", s)
	}
}

func TestForget(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	h, _ := w.Ask(ctx, helpRequest("?"), time.Hour, []byte("png"))
	w.Take(ctx, "d1", dana, time.Hour)
	if err := w.SetPolicy(ctx, "d1", Policy{FileDelete: true}); err != nil {
		t.Fatal(err)
	}
	gated := make(chan error)
	go func() {
		_, err := w.Gate(ctx, "d1", "alice", agent, Input{Kind: ActionFileDelete, Path: "/x"}, nil, nil)
		gated <- err
	}()
	eventually(t, "the gate waits", func() bool { return w.Status("d1").Approvals == 1 })
	before := len(w.eventsOf("denied"))

	w.Forget(ctx, "d1")
	var de *DeniedError
	if err := <-gated; !errors.As(err, &de) || de.Request.Reason != "the desktop was deleted" {
		t.Fatalf("gated call: %v", err)
	}
	if r, _ := w.Get(ctx, "d1", h.ID); r.Status != StatusExpired {
		t.Fatalf("help: %+v", r)
	}
	if s := w.Status("d1"); s.Control.Holder != HolderAgent || s.Help != 0 || s.Approvals != 0 {
		t.Fatalf("status: %+v", s)
	}
	if p, _ := w.Policy(ctx, "d1"); p.FileDelete {
		t.Fatal("policy kept")
	}
	if _, err := os.Stat(w.shotPath(h.ID)); !os.IsNotExist(err) {
		t.Fatalf("screenshot kept: %v", err)
	}
	if len(w.eventsOf("denied")) != before || len(w.eventsOf("help_expired")) != 0 {
		t.Fatal("a deleted desktop's history was told")
	}
}
