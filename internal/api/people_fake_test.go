package api

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
)

// fakePeople keeps people in the loop in memory, as internal/loop does
// in its essentials: control, requests that wait for an answer, a policy
// that gates (exec, file deletes, keys, clicks, URLs).
type fakePeople struct {
	mu       sync.Mutex
	control  map[string]loop.Control
	requests []*loop.Request
	shots    map[string][]byte
	policies map[string]loop.Policy
	// gated are the inputs the gate was asked about and matched.
	gated []loop.Input
	// asked are the inputs the gate was asked about, matched or not.
	asked []loop.Input
	// titles are the window titles the gate read.
	titles []string
	// wake is closed (and replaced) on every change.
	wake chan struct{}
	// consoleInputs counts ConsoleInput calls.
	consoleInputs int
	left          []string
}

var _ People = (*fakePeople)(nil)

func newFakePeople() *fakePeople {
	return &fakePeople{control: map[string]loop.Control{}, shots: map[string][]byte{}, policies: map[string]loop.Policy{},
		wake: make(chan struct{})}
}

func (f *fakePeople) changed() {
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *fakePeople) ctl(id string) loop.Control {
	c, ok := f.control[id]
	if !ok {
		return loop.Control{Holder: loop.HolderAgent}
	}
	return c
}

func (f *fakePeople) Status(id string) loop.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := loop.Status{Control: f.ctl(id)}
	for _, r := range f.requests {
		if r.DesktopID == id && r.Status == loop.StatusPending {
			if r.Kind == loop.KindHelp {
				st.Help++
			} else {
				st.Approvals++
			}
		}
	}
	return st
}

func (f *fakePeople) Control(id string) loop.Control {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ctl(id)
}

func (f *fakePeople) Take(_ context.Context, id string, p loop.Person, idle time.Duration) loop.Control {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UTC()
	until := now.Add(idle)
	f.control[id] = loop.Control{Holder: loop.HolderPerson, Person: p.Name, By: p.By(), Since: now, Until: &until,
		IdleTimeoutS: int(idle.Seconds())}
	return f.control[id]
}

func (f *fakePeople) Release(_ context.Context, id string, _ loop.Person) loop.Control {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.control, id)
	return f.ctl(id)
}

func (f *fakePeople) AgentInput(id, actor string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.ctl(id); c.Holder == loop.HolderPerson && c.By != actor {
		return &loop.InControlError{Control: c}
	}
	return nil
}

func (f *fakePeople) ConsoleInput(id string, p loop.Person, _ loop.InputEvent) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.consoleInputs++
	c := f.ctl(id)
	return c.Holder == loop.HolderAgent || c.By == p.By()
}

func (f *fakePeople) Ask(_ context.Context, r *loop.Request, timeout time.Duration, shot []byte) (*loop.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.add(r, timeout, shot), nil
}

func (f *fakePeople) add(r *loop.Request, timeout time.Duration, shot []byte) *loop.Request {
	cp := *r
	cp.ID = fmt.Sprintf("req_%04d", len(f.requests)+1)
	cp.Status = loop.StatusPending
	cp.AskedAt = time.Now().UTC()
	cp.ExpiresAt = cp.AskedAt.Add(timeout)
	cp.Screenshot = len(shot) > 0
	if cp.Screenshot {
		f.shots[cp.ID] = shot
	}
	f.requests = append(f.requests, &cp)
	f.changed()
	out := cp
	return &out
}

func (f *fakePeople) find(desktopID, id string) (*loop.Request, error) {
	for _, r := range f.requests {
		if r.ID == id && r.DesktopID == desktopID {
			return r, nil
		}
	}
	return nil, fmt.Errorf("request %s: %w", id, loop.ErrNotFound)
}

func (f *fakePeople) Get(_ context.Context, desktopID, id string) (*loop.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.find(desktopID, id)
	if err != nil {
		return nil, err
	}
	cp := *r
	return &cp, nil
}

func (f *fakePeople) List(_ context.Context, flt loop.Filter) ([]*loop.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*loop.Request
	for i := len(f.requests) - 1; i >= 0; i-- {
		r := f.requests[i]
		if (flt.Owner == "" || r.Owner == flt.Owner) && (flt.DesktopID == "" || r.DesktopID == flt.DesktopID) &&
			(flt.Kind == "" || r.Kind == flt.Kind) && (flt.Status == "" || r.Status == flt.Status) {
			cp := *r
			out = append(out, &cp)
		}
	}
	return out, nil
}

func (f *fakePeople) Wait(ctx context.Context, desktopID, id string, max time.Duration) (*loop.Request, error) {
	deadline := time.After(max)
	for {
		f.mu.Lock()
		r, err := f.find(desktopID, id)
		wake := f.wake
		var cp loop.Request
		if err == nil {
			cp = *r
		}
		f.mu.Unlock()
		if err != nil || cp.Decided() {
			return &cp, err
		}
		select {
		case <-wake:
		case <-deadline:
			return &cp, nil
		case <-ctx.Done():
			return &cp, nil
		}
	}
}

// settle checks that r may be answered or decided by p.
func settle(r *loop.Request, kind string, p loop.Person) error {
	switch {
	case r.Kind != kind:
		return loop.ErrWrongKind
	case p.By() == r.AskedBy || p.Actor != "" && p.Actor == r.AskedBy:
		return loop.ErrOwnRequest
	}
	return nil
}

func (f *fakePeople) Answer(_ context.Context, desktopID, id string, p loop.Person, answer string, choice bool) (*loop.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.find(desktopID, id)
	if err != nil {
		return nil, err
	}
	if err := settle(r, loop.KindHelp, p); err != nil {
		return nil, err
	}
	if choice && !slices.Contains(r.Choices, answer) {
		return nil, &desktop.ValidationError{Field: "choice", Message: fmt.Sprintf("one of %q", r.Choices)}
	}
	if r.Decided() {
		cp := *r
		return nil, &loop.DecidedError{Request: &cp}
	}
	now := time.Now().UTC()
	r.Status, r.Answer, r.Choice, r.DecidedBy, r.DecidedAt = loop.StatusAnswered, answer, choice, p.By(), &now
	f.changed()
	cp := *r
	return &cp, nil
}

func (f *fakePeople) Decide(_ context.Context, desktopID, id string, p loop.Person, approve bool, reason string) (*loop.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.find(desktopID, id)
	if err != nil {
		return nil, err
	}
	if err := settle(r, loop.KindApproval, p); err != nil {
		return nil, err
	}
	if r.Decided() {
		cp := *r
		return nil, &loop.DecidedError{Request: &cp}
	}
	now := time.Now().UTC()
	r.Status, r.Reason, r.DecidedBy, r.DecidedAt = loop.StatusDenied, reason, p.By(), &now
	if approve {
		r.Status = loop.StatusApproved
	}
	f.changed()
	cp := *r
	return &cp, nil
}

// expire ends a request as its timeout would.
func (f *fakePeople) expire(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if r.ID == id {
			r.Status = loop.StatusExpired
			if r.Kind == loop.KindApproval {
				r.Status, r.Reason = loop.StatusDenied, "no decision within 5m0s"
			}
		}
	}
	f.changed()
}

func (f *fakePeople) Screenshot(_ context.Context, desktopID, id string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.find(desktopID, id); err != nil {
		return nil, err
	}
	return f.shots[id], nil
}

func (f *fakePeople) Policy(_ context.Context, id string) (loop.Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.policies[id], nil
}

func (f *fakePeople) SetPolicy(_ context.Context, id string, p loop.Policy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policies[id] = p
	return nil
}

func (f *fakePeople) DeletePolicy(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.policies, id)
	return nil
}

// matches is the rule of p that in matches ("" none).
func matches(p loop.Policy, in loop.Input, title func() string) string {
	switch in.Kind {
	case loop.ActionExec:
		for i, e := range p.Exec {
			if regexp.MustCompile(e).MatchString(in.Command) {
				return fmt.Sprintf("exec[%d]: %s", i, e)
			}
		}
	case loop.ActionURL:
		for i, e := range p.URLs {
			if regexp.MustCompile(e).MatchString(in.URL) {
				return fmt.Sprintf("urls[%d]: %s", i, e)
			}
		}
	case loop.ActionFileDelete:
		if p.FileDelete {
			return "file_delete"
		}
	case loop.ActionKey:
		for i, k := range p.Keys {
			if slices.ContainsFunc(strings.Fields(in.Keys), func(s string) bool { return strings.EqualFold(s, k.Key) }) &&
				(k.WindowTitle == "" || regexp.MustCompile(k.WindowTitle).MatchString(title())) {
				return fmt.Sprintf("keys[%d]: %s", i, k.Key)
			}
		}
	case loop.ActionClick:
		for i, r := range p.Clicks {
			if in.X >= r.X && in.X < r.X+r.Width && in.Y >= r.Y && in.Y < r.Y+r.Height {
				return fmt.Sprintf("clicks[%d]: %s", i, r.Name)
			}
		}
	}
	return ""
}

func (f *fakePeople) Gate(ctx context.Context, desktopID, owner, actor string, in loop.Input, title func(context.Context) string,
	detail json.RawMessage) (*loop.Request, error) {
	f.mu.Lock()
	f.asked = append(f.asked, in)
	rule := matches(f.policies[desktopID], in, func() string {
		t := title(ctx)
		f.titles = append(f.titles, t)
		return t
	})
	if rule == "" {
		f.mu.Unlock()
		return nil, nil
	}
	f.gated = append(f.gated, in)
	summary := in.Kind + ": " + in.Command + in.Path + in.Keys + in.URL
	r := f.add(&loop.Request{DesktopID: desktopID, Owner: owner, Kind: loop.KindApproval, Question: summary, AskedBy: actor,
		Gated: true, Action: &loop.Action{Kind: in.Kind, Summary: summary, Rule: rule, Detail: detail}}, 5*time.Minute, nil)
	f.mu.Unlock()
	r, err := f.Wait(ctx, desktopID, r.ID, time.Minute)
	if err != nil {
		return nil, err
	}
	if r.Status != loop.StatusApproved {
		return nil, &loop.DeniedError{Request: r}
	}
	return r, nil
}

// pending waits for a pending request of kind on the desktop and
// returns it.
func (f *fakePeople) pending(desktopID, kind string) *loop.Request {
	for range 500 {
		list, _ := f.List(context.Background(), loop.Filter{DesktopID: desktopID, Kind: kind, Status: loop.StatusPending})
		if len(list) > 0 {
			return list[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// The real thing is what the fake stands for.
var _ People = (*loop.Service)(nil)

func (f *fakePeople) Left(id string, p loop.Person) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.left = append(f.left, p.By())
}
