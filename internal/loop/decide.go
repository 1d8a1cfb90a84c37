package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/steps"
)

// outcome is how a pending request ends: a person's answer or decision
// (person set), or its time running out (person zero: decided by no one).
type outcome struct {
	status string
	person Person
	answer string
	choice bool
	reason string
	// quiet: nothing goes to the desktop's history or step log (it was
	// deleted).
	quiet bool
}

// Answer answers one of desktopID's help requests as p: answer is the
// text, or with choice one of the request's choices.
func (s *Requests) Answer(ctx context.Context, desktopID, id string, p Person, answer string, choice bool) (*Request, error) {
	r, err := s.decidable(ctx, desktopID, id, p, KindHelp)
	if err != nil {
		return nil, err
	}
	answer = strings.TrimSpace(answer)
	if choice {
		if !slices.Contains(r.Choices, answer) {
			msg := "the request has no choices: answer in words"
			if len(r.Choices) > 0 {
				msg = fmt.Sprintf("one of %q", r.Choices)
			}
			return nil, &desktop.ValidationError{Field: "choice", Message: msg}
		}
	} else if n := utf8.RuneCountInString(answer); n < 1 || n > MaxAnswer {
		return nil, &desktop.ValidationError{Field: "answer", Message: fmt.Sprintf("1 to %d characters", MaxAnswer)}
	}
	if r.Decided() {
		return nil, &DecidedError{Request: r}
	}
	return s.end(ctx, r, outcome{status: StatusAnswered, person: p, answer: answer, choice: choice})
}

// Decide approves or denies one of desktopID's approval requests as p,
// for reason (may be empty).
func (s *Requests) Decide(ctx context.Context, desktopID, id string, p Person, approve bool, reason string) (*Request, error) {
	r, err := s.decidable(ctx, desktopID, id, p, KindApproval)
	if err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if utf8.RuneCountInString(reason) > MaxReason {
		return nil, &desktop.ValidationError{Field: "reason", Message: fmt.Sprintf("at most %d characters", MaxReason)}
	}
	if r.Decided() {
		return nil, &DecidedError{Request: r}
	}
	o := outcome{status: StatusDenied, person: p, reason: reason}
	if approve {
		o.status = StatusApproved
	}
	return s.end(ctx, r, o)
}

// decidable finds a request p may answer or decide: of kind, not asked
// by p.
func (s *Requests) decidable(ctx context.Context, desktopID, id string, p Person, kind string) (*Request, error) {
	r, err := s.Get(ctx, desktopID, id)
	if err != nil {
		return nil, err
	}
	if r.Kind != kind {
		how := "approved or denied"
		if r.Kind == KindHelp {
			how = "answered"
		}
		return nil, fmt.Errorf("request %s is a %s request, %s: %w", id, r.Kind, how, ErrWrongKind)
	}
	if p.By() == r.AskedBy || p.Actor != "" && p.Actor == r.AskedBy {
		return nil, fmt.Errorf("request %s was asked by %s: %w", id, r.AskedBy, ErrOwnRequest)
	}
	return r, nil
}

// timeUp runs when a pending request's time is up.
func (s *Requests) timeUp(id string) {
	if s.stopped() {
		return
	}
	ctx, cancel := s.background()
	defer cancel()
	s.expire(ctx, id, "", false)
}

// expire ends a pending request that nobody decided: help expires; an
// approval is denied (by no one), so a call waiting on it does not run.
// reason "" says its time ran out.
func (s *Requests) expire(ctx context.Context, id, reason string, quiet bool) {
	r, err := s.store.GetRequest(ctx, id)
	if errors.Is(err, ErrNotFound) {
		s.untrack(id)
		return
	}
	if err != nil {
		s.retry(id, err)
		return
	}
	if r.Decided() {
		s.untrack(id)
		return
	}
	o := outcome{status: StatusExpired, reason: reason, quiet: quiet}
	took := r.ExpiresAt.Sub(r.AskedAt)
	if r.Kind == KindApproval {
		o.status = StatusDenied
		if reason == "" {
			o.reason = "no decision within " + took.String()
		}
	} else if reason == "" {
		o.reason = "no answer within " + took.String()
	}
	if _, err := s.end(ctx, r, o); err != nil && !errors.As(err, new(*DecidedError)) {
		s.retry(id, err)
	}
}

// retryExpiry is how long a request whose expiry could not be stored
// waits before it is tried again.
const retryExpiry = 30 * time.Second

func (s *Requests) retry(id string, err error) {
	s.log.Error("expire a request", "request", id, "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.pending[id]; w != nil {
		w.timer.Reset(retryExpiry)
	}
}

// end stores how r ends, if it is still pending there (the store decides
// between two deciders, or a decider and the timer: the one that comes
// second gets a *DecidedError with the request as it ended), tells the
// desktop's history and step log, and wakes its waiters.
func (s *Requests) end(ctx context.Context, r *Request, o outcome) (*Request, error) {
	d := *r
	t := now()
	d.Status, d.DecidedBy, d.DecidedAt = o.status, o.person.By(), &t
	d.Answer, d.Choice, d.Reason = o.answer, o.choice, o.reason
	stored, err := s.store.DecideRequest(ctx, &d)
	if errors.Is(err, ErrAlreadyDecided) {
		s.untrack(r.ID)
		if stored == nil {
			stored = r
		}
		return nil, &DecidedError{Request: stored}
	}
	if err != nil {
		return nil, fmt.Errorf("store the outcome of request %s: %w", r.ID, err)
	}
	// Waiters wake once the decision is in the history and step log: a
	// gated call's own step comes after its approval's.
	wake := s.untracked(r.ID)
	if !o.quiet {
		s.changed(d.DesktopID)
		s.tell(ctx, &d, o.person)
	}
	wake()
	out := d
	return &out, nil
}

// tell records how r ended in its desktop's step log and history.
func (s *Requests) tell(ctx context.Context, r *Request, p Person) {
	by := ""
	if r.DecidedBy != "" {
		by = nameOf(p)
	}
	st := &steps.Step{DesktopID: r.DesktopID, At: r.AskedAt, DurationMS: r.DecidedAt.Sub(r.AskedAt).Milliseconds(),
		Actor: r.AskedBy, Kind: steps.KindHelp, Status: 200}
	if r.DecidedBy == "" {
		st.Status, st.Error = 408, r.Reason
	}
	actor := r.DecidedBy
	if actor == "" {
		actor = "bureau"
	}
	var typ, msg string
	if r.Kind == KindHelp {
		st.Input, _ = json.Marshal(map[string]any{"request_id": r.ID, "question": r.Question, "choices": r.Choices})
		st.Result, _ = json.Marshal(map[string]any{"status": r.Status, "answer": r.Answer, "choice": r.Choice,
			"by": by, "by_actor": r.DecidedBy, "reason": r.Reason})
		typ, msg = "help_answered", fmt.Sprintf("%s answered: %s", by, quote(r.Answer))
		if r.Status != StatusAnswered {
			typ, msg = "help_expired", fmt.Sprintf("%s went unanswered: %s", quote(r.Question), r.Reason)
		}
	} else {
		st.Kind = steps.KindApproval
		st.Input, _ = json.Marshal(map[string]any{"request_id": r.ID, "action": r.Action})
		st.Result, _ = json.Marshal(map[string]any{"status": r.Status, "by": by, "by_actor": r.DecidedBy, "reason": r.Reason})
		switch {
		case r.Status == StatusApproved:
			typ, msg = "approved", fmt.Sprintf("%s approved %s", by, quote(r.Question))
		case r.DecidedBy != "":
			typ, msg = "denied", fmt.Sprintf("%s denied %s", by, quote(r.Question))
			st.Status, st.Error = 403, "denied by "+by
		case r.Status == StatusExpired:
			typ, msg = "denied", fmt.Sprintf("%s expired: %s", quote(r.Question), r.Reason)
		default:
			typ, msg = "denied", fmt.Sprintf("%s was denied: %s", quote(r.Question), r.Reason)
		}
		if r.DecidedBy != "" && r.Reason != "" {
			msg += ": " + clip(r.Reason, 200)
			if st.Error != "" {
				st.Error += ": " + r.Reason
			}
		}
	}
	s.step(ctx, st)
	s.note(ctx, r.DesktopID, typ, actor, msg)
}
