package loop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
)

// Bounds of a request.
const (
	MaxQuestion = 2000
	MaxChoices  = 10
	MaxChoice   = 200
	MaxAnswer   = 4000
	MaxReason   = 1000
)

// Requests are desktops' help and approval requests: asked, waited on,
// answered or decided by a person (decide.go), or expired. They are
// stored; the pending ones are also held in memory, with their expiry
// timers and their waiters.
type Requests struct {
	*env
	store Store
	// dir keeps the screenshots requests come with.
	dir string

	mu      sync.Mutex
	pending map[string]*waiting // pending requests by id
	counts  map[string]*[2]int  // pending help and approval requests by desktop id
}

// waiting is a pending request as held in memory: its expiry timer, and
// done, closed when it is decided (Wait's broadcast).
type waiting struct {
	desktopID string
	kind      string
	done      chan struct{}
	timer     *time.Timer
}

// Ask stores a help or approval request of r.DesktopID, with a picture of
// the screen when shot is given, pending for timeout. Ask sets its ID,
// Status, AskedAt, ExpiresAt and Screenshot; the caller sets DesktopID,
// Owner, Kind, Question, Choices (help) or Action (approval; an explicit
// one when nil), AskedBy and Gated.
func (s *Requests) Ask(ctx context.Context, r *Request, timeout time.Duration, shot []byte) (*Request, error) {
	req := *r
	if err := req.check(timeout); err != nil {
		return nil, err
	}
	t := now()
	req.ID, req.Status, req.AskedAt, req.ExpiresAt = newID(), StatusPending, t, t.Add(timeout)
	req.Screenshot = shot != nil
	req.DecidedBy, req.DecidedAt, req.Answer, req.Choice, req.Reason = "", nil, "", false, ""
	if shot != nil {
		if err := s.saveShot(req.ID, shot); err != nil {
			return nil, err
		}
	}
	if err := s.store.AddRequest(ctx, &req); err != nil {
		if shot != nil {
			os.Remove(s.shotPath(req.ID))
		}
		return nil, fmt.Errorf("store the request: %w", err)
	}
	s.track(&req)
	s.changed(req.DesktopID)
	if req.Kind == KindHelp {
		s.note(ctx, req.DesktopID, "help_requested", req.AskedBy, "asks for help: "+quote(req.Question))
	} else {
		verb := "asks for approval: "
		if req.Gated {
			verb = "waits for approval: "
		}
		s.note(ctx, req.DesktopID, "approval_requested", req.AskedBy, verb+quote(req.Question))
	}
	out := req
	return &out, nil
}

// check validates a request to be asked (and tidies it: question and
// choices trimmed, an approval's action filled in).
func (r *Request) check(timeout time.Duration) error {
	if r.Kind != KindHelp && r.Kind != KindApproval {
		return &desktop.ValidationError{Field: "kind", Message: fmt.Sprintf("want %s or %s", KindHelp, KindApproval)}
	}
	r.Question = strings.TrimSpace(r.Question)
	if n := utf8.RuneCountInString(r.Question); n < 1 || n > MaxQuestion {
		field := "question"
		if r.Kind == KindApproval {
			field = "action"
		}
		return &desktop.ValidationError{Field: field, Message: fmt.Sprintf("1 to %d characters", MaxQuestion)}
	}
	if timeout <= 0 {
		return &desktop.ValidationError{Field: "timeout_s", Message: "must be positive"}
	}
	if r.Kind == KindApproval {
		if len(r.Choices) > 0 {
			return &desktop.ValidationError{Field: "choices", Message: "an approval is approved or denied: it takes no choices"}
		}
		if r.Action == nil {
			r.Action = &Action{Kind: ActionExplicit, Summary: r.Question}
		}
		return nil
	}
	r.Action = nil
	if len(r.Choices) > MaxChoices {
		return &desktop.ValidationError{Field: "choices", Message: fmt.Sprintf("at most %d", MaxChoices)}
	}
	choices := make([]string, len(r.Choices))
	for i, c := range r.Choices {
		c = strings.TrimSpace(c)
		field := fmt.Sprintf("choices[%d]", i)
		if n := utf8.RuneCountInString(c); n < 1 || n > MaxChoice {
			return &desktop.ValidationError{Field: field, Message: fmt.Sprintf("1 to %d characters", MaxChoice)}
		}
		for j := range i {
			if choices[j] == c {
				return &desktop.ValidationError{Field: field, Message: fmt.Sprintf("the same as choices[%d]: choices are distinct", j)}
			}
		}
		choices[i] = c
	}
	if len(choices) == 0 {
		choices = nil
	}
	r.Choices = choices
	return nil
}

// track holds a pending request in memory until it is decided or
// expires.
func (s *Requests) track(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[r.ID]; ok {
		return
	}
	id := r.ID
	w := &waiting{desktopID: r.DesktopID, kind: r.Kind, done: make(chan struct{})}
	w.timer = time.AfterFunc(max(0, time.Until(r.ExpiresAt)), func() { s.timeUp(id) })
	s.pending[id] = w
	s.count(w, 1)
}

// untrack drops a request decided, and wakes its waiters.
func (s *Requests) untrack(id string) { s.untracked(id)() }

// untracked drops a request decided and returns what wakes its waiters
// (a request's history is told first).
func (s *Requests) untracked(id string) (wake func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.pending[id]
	if w == nil {
		return func() {}
	}
	w.timer.Stop()
	delete(s.pending, id)
	s.count(w, -1)
	return func() { close(w.done) }
}

// count adds n to w's desktop's pending count. Called with s.mu held.
func (s *Requests) count(w *waiting, n int) {
	c := s.counts[w.desktopID]
	if c == nil {
		c = new([2]int)
		s.counts[w.desktopID] = c
	}
	i := 0
	if w.kind == KindApproval {
		i = 1
	}
	c[i] += n
	if c[0] == 0 && c[1] == 0 {
		delete(s.counts, w.desktopID)
	}
}

// Get returns one of desktopID's requests (ErrNotFound: none by that id
// on that desktop).
func (s *Requests) Get(ctx context.Context, desktopID, id string) (*Request, error) {
	r, err := s.store.GetRequest(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && r.DesktopID != desktopID {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

// List returns requests, newest first.
func (s *Requests) List(ctx context.Context, f Filter) ([]*Request, error) {
	list, err := s.store.ListRequests(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	return list, nil
}

// Wait returns the request once it is decided, or as it is when maxWait has
// passed or ctx's deadline has; a cancelled ctx returns its error.
func (s *Requests) Wait(ctx context.Context, desktopID, id string, maxWait time.Duration) (*Request, error) {
	// A request still held here is waited on even when the store has its
	// decision already: its waiters wake once it is told.
	s.mu.Lock()
	w := s.pending[id]
	s.mu.Unlock()
	r, err := s.Get(ctx, desktopID, id)
	if err != nil || maxWait <= 0 || w == nil {
		return r, err
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
	}
	return s.Get(context.WithoutCancel(ctx), desktopID, id)
}

// Screenshot is the picture of the screen a request came with
// (ErrNotFound: none).
func (s *Requests) Screenshot(ctx context.Context, desktopID, id string) ([]byte, error) {
	r, err := s.Get(ctx, desktopID, id)
	if err != nil {
		return nil, err
	}
	if !r.Screenshot {
		return nil, fmt.Errorf("request %s came without a screenshot: %w", id, ErrNotFound)
	}
	b, err := os.ReadFile(s.shotPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the screenshot of request %s is gone: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("screenshot of request %s: %w", id, err)
	}
	return b, nil
}

func (s *Requests) shotPath(id string) string { return filepath.Join(s.dir, id+".png") }

func (s *Requests) saveShot(id string, shot []byte) error {
	if s.dir == "" {
		return errors.New("save the screenshot: no directory for requests' screenshots")
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("save the screenshot: %w", err)
	}
	if err := os.WriteFile(s.shotPath(id), shot, 0o600); err != nil {
		return fmt.Errorf("save the screenshot: %w", err)
	}
	return nil
}

// pendingCount is how many help and approval requests of desktopID are
// pending.
func (s *Requests) pendingCount(desktopID string) (help, approvals int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.counts[desktopID]; c != nil {
		return c[0], c[1]
	}
	return 0, 0
}

// forget ends deleted desktopID's pending requests (they expire, and
// gated calls waiting on them are denied) and deletes its requests'
// screenshots. Nothing of it goes to the desktop's history or step log.
func (s *Requests) forget(ctx context.Context, desktopID string) {
	s.mu.Lock()
	var ids []string
	for id, w := range s.pending {
		if w.desktopID == desktopID {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()

	for _, id := range ids {
		s.expire(ctx, id, "the desktop was deleted", true)
	}
	list, err := s.store.ListRequests(ctx, Filter{DesktopID: desktopID, Limit: math.MaxInt32})
	if err != nil {
		s.log.Error("list the requests of a deleted desktop", "desktop", desktopID, "err", err)
		return
	}
	for _, r := range list {
		if r.Screenshot {
			if err := os.Remove(s.shotPath(r.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Warn("delete a request's screenshot", "desktop", desktopID, "request", r.ID, "err", err)
			}
		}
	}
}
