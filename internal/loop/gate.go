package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Gates are desktops' approval policies and the gate that holds a call
// a policy names until a person decides it (an approval request of
// Requests).
type Gates struct {
	*env
	store    Store
	requests *Requests
	// gateUnit counts a policy's timeout_s (a second; tests shorten it).
	gateUnit time.Duration

	mu       sync.Mutex
	policies map[string]Policy // compiled policies by desktop id (the zero Policy: none set)
	polGen   uint64            // bumped by every policy change: reads older than it are not cached
}

// Policy is desktopID's approval policy (the zero Policy when none is
// set).
func (s *Gates) Policy(ctx context.Context, desktopID string) (Policy, error) {
	s.mu.Lock()
	p, ok := s.policies[desktopID]
	gen := s.polGen
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	b, err := s.store.ApprovalPolicy(ctx, desktopID)
	if err != nil {
		return Policy{}, fmt.Errorf("approval policy: %w", err)
	}
	if b != nil {
		if p, err = ParsePolicy(b); err != nil {
			return Policy{}, fmt.Errorf("the stored approval policy of %s: %w", desktopID, err)
		}
	}
	s.mu.Lock()
	if s.polGen == gen {
		s.policies[desktopID] = p
	}
	s.mu.Unlock()
	return p, nil
}

// SetPolicy validates and stores desktopID's approval policy.
func (s *Gates) SetPolicy(ctx context.Context, desktopID string, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("approval policy: %w", err)
	}
	defer s.policyChanged(desktopID)
	if err := s.store.SetApprovalPolicy(ctx, desktopID, b); err != nil {
		return fmt.Errorf("store the approval policy: %w", err)
	}
	return nil
}

// DeletePolicy removes desktopID's approval policy: nothing is gated.
func (s *Gates) DeletePolicy(ctx context.Context, desktopID string) error {
	defer s.policyChanged(desktopID)
	if err := s.store.DeleteApprovalPolicy(ctx, desktopID); err != nil {
		return fmt.Errorf("delete the approval policy: %w", err)
	}
	return nil
}

func (s *Gates) policyChanged(desktopID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.policies, desktopID)
	s.polGen++
}

// forget drops deleted desktopID's approval policy.
func (s *Gates) forget(ctx context.Context, desktopID string) {
	s.policyChanged(desktopID)
	if err := s.store.DeleteApprovalPolicy(ctx, desktopID); err != nil {
		s.log.Error("delete the approval policy of a deleted desktop", "desktop", desktopID, "err", err)
	}
}

// Gate holds a call of actor's on desktopID until a person decides it,
// when the desktop's policy gates in: it returns nil and nil when
// nothing gates it, the approved request, or the request and a
// *DeniedError (denied, or no decision in time). title says the active
// window's title; it is asked at most once, and only when a key or click
// rule that names one would match. detail is the call's input, shown to
// whoever decides. If ctx ends first, the request is denied ("the caller
// went away") and ctx's error returned.
func (s *Gates) Gate(ctx context.Context, desktopID, owner, actor string, in Input, title func(context.Context) string, detail json.RawMessage) (*Request, error) {
	p, err := s.Policy(ctx, desktopID)
	if err != nil {
		return nil, err
	}
	asked := in.WindowTitle != ""
	windowTitle := func() string {
		if !asked && title != nil {
			in.WindowTitle = title(ctx)
		}
		asked = true
		return in.WindowTitle
	}
	h, ok := p.match(in, windowTitle)
	if !ok {
		return nil, nil
	}
	timeoutS := p.TimeoutS
	if timeoutS == 0 {
		timeoutS = DefaultGateTimeoutS
	}
	sum := summary(in, h)
	r, err := s.requests.Ask(ctx, &Request{DesktopID: desktopID, Owner: owner, Kind: KindApproval, Question: sum,
		Action: &Action{Kind: in.Kind, Summary: sum, Rule: h.rule, Detail: detail}, AskedBy: actor, Gated: true},
		time.Duration(timeoutS)*s.gateUnit, nil)
	if err != nil {
		return nil, err
	}
	// The request's own timer decides it when its time is up.
	id := r.ID
	r, err = s.requests.Wait(ctx, desktopID, id, time.Duration(math.MaxInt64))
	if ctx.Err() != nil {
		bg := context.WithoutCancel(ctx)
		if cur, gerr := s.requests.Get(bg, desktopID, id); gerr == nil && !cur.Decided() {
			if _, err := s.requests.end(bg, cur, outcome{status: StatusDenied, reason: "the caller went away"}); err != nil && !errors.As(err, new(*DecidedError)) {
				s.log.Warn("deny an approval its caller stopped waiting for", "desktop", desktopID, "request", id, "err", err)
			}
		}
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if r.Status == StatusApproved {
		return r, nil
	}
	return r, &DeniedError{Request: r}
}

// maxSummary bounds an action's summary.
const maxSummary = 1000

// summary says in one line what a gated call would do.
func summary(in Input, h hit) string {
	var s string
	switch in.Kind {
	case ActionExec:
		s = "exec: " + in.Command
	case ActionFileDelete:
		s = "delete file " + in.Path
	case ActionKey:
		s = "key " + in.Keys
		if in.WindowTitle != "" {
			s += fmt.Sprintf(" in window %q", in.WindowTitle)
		}
	case ActionClick:
		s = fmt.Sprintf("click at (%d, %d)", in.X, in.Y)
		if h.region != nil {
			s += " in " + h.region.describe()
		}
	case ActionURL:
		s = "open URL " + in.URL
	default:
		s = in.Kind
	}
	return clip(s, maxSummary)
}
