package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/steps"
)

// Store keeps requests and policies (internal/store implements it).
type Store interface {
	AddRequest(ctx context.Context, r *Request) error
	// GetRequest returns ErrNotFound for an unknown id.
	GetRequest(ctx context.Context, id string) (*Request, error)
	ListRequests(ctx context.Context, f Filter) ([]*Request, error)
	// DecideRequest stores r's outcome if the stored request is still
	// pending; otherwise it returns the stored request and
	// ErrAlreadyDecided.
	DecideRequest(ctx context.Context, r *Request) (*Request, error)
	// ApprovalPolicy is a desktop's policy (nil: none set).
	ApprovalPolicy(ctx context.Context, desktopID string) ([]byte, error)
	SetApprovalPolicy(ctx context.Context, desktopID string, policy []byte) error
	DeleteApprovalPolicy(ctx context.Context, desktopID string) error
}

// Config is what a Service needs.
type Config struct {
	Store Store
	// Dir keeps the screenshots requests come with (bureau's own
	// directory, not a desktop's).
	Dir string
	Log *slog.Logger
	// Note records an event in a desktop's history and live feed (may be
	// nil).
	Note func(ctx context.Context, desktopID, typ, actor, msg string)
	// Step records an entry of the desktop's step log (may be nil).
	Step func(ctx context.Context, st *steps.Step)
	// RecordingAt says where t falls in the recording of the desktop's
	// screen being made (ok false: none is).
	RecordingAt func(desktopID string, t time.Time) (recordingID string, offsetMS int64, ok bool)
	// Changed is told when a desktop's control or pending requests change
	// (to publish its record; may be nil).
	Changed func(desktopID string)
}

// Status is what a desktop's record shows of the loop.
type Status struct {
	Control Control
	// Help and Approvals count pending requests.
	Help, Approvals int
}

// InputEvent is one input message from a console session: a key press or
// release, a pointer event (Buttons pressed), or clipboard text.
type InputEvent struct {
	Key       bool
	KeyDown   bool
	Pointer   bool
	Buttons   uint8
	Clipboard bool
}

// Timings a Service works with (tests shorten them).
const (
	// DefaultIdle is how long a person holds control without input when
	// Take is given no idle timeout.
	DefaultIdle = 10 * time.Minute
	// episodeQuiet ends a person's stretch of input (one human step);
	// episodeLongest cuts a long one into several.
	episodeQuiet   = 3 * time.Second
	episodeLongest = 60 * time.Second
	// noteWithin bounds the events, steps and store writes timers make.
	noteWithin = 10 * time.Second
)

// Service puts people in the loop of desktops. Each feature is its own
// type, embedded here so callers see one service: Controls (who holds a
// desktop's input, control.go, and a person's input as steps, human.go),
// Requests (help and approval requests: ask, wait, answer, decide,
// expire; requests.go, decide.go) and Gates (approval policies and the
// gate that holds the calls they name; gate.go, policy_parse.go). Service
// itself starts them and answers what spans them: a desktop's Status, and
// Forget.
type Service struct {
	*Controls
	*Requests
	*Gates
}

// env is what the features of a Service share: its log, the context their
// timers end with, and the hooks that tell the rest of bureau.
type env struct {
	log *slog.Logger
	// base bounds what timers do: they outlive the calls that start them.
	base context.Context

	onNote    func(ctx context.Context, desktopID, typ, actor, msg string)
	onStep    func(ctx context.Context, st *steps.Step)
	onChanged func(desktopID string)
}

// New starts a Service over cfg.Store: gated requests left pending by a
// bureau that stopped end expired (their callers are gone); the other
// pending ones wait again until they expire. Its timers end with ctx.
func New(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &env{log: log, base: ctx, onNote: cfg.Note, onStep: cfg.Step, onChanged: cfg.Changed}
	reqs := &Requests{env: e, store: cfg.Store, dir: cfg.Dir, pending: map[string]*waiting{}, counts: map[string]*[2]int{}}
	s := &Service{
		Controls: &Controls{env: e, recordingAt: cfg.RecordingAt, quiet: episodeQuiet, longest: episodeLongest,
			control: map[string]*holding{}, sessions: map[session]*typing{}},
		Requests: reqs,
		Gates:    &Gates{env: e, store: cfg.Store, requests: reqs, gateUnit: time.Second, policies: map[string]Policy{}},
	}
	left, err := cfg.Store.ListRequests(ctx, Filter{Status: StatusPending, Limit: math.MaxInt32})
	if err != nil {
		return nil, fmt.Errorf("pending requests: %w", err)
	}
	for _, r := range left {
		if r.Gated {
			if _, err := reqs.end(ctx, r, outcome{status: StatusExpired, reason: "bureau restarted while it waited"}); err != nil {
				log.Error("expire a gated request bureau stopped waiting on", "desktop", r.DesktopID, "request", r.ID, "err", err)
			}
			continue
		}
		reqs.track(r)
	}
	return s, nil
}

// Status is what desktopID's record shows: who holds its input and how
// many requests wait.
func (s *Service) Status(desktopID string) Status {
	st := Status{Control: s.Control(desktopID)}
	st.Help, st.Approvals = s.Requests.pendingCount(desktopID)
	return st
}

// Forget drops what is kept of a deleted desktop: who holds its input,
// its pending requests (they expire, and gated calls waiting on them are
// denied), its policy and its requests' screenshots. Nothing of it goes
// to the desktop's history or step log: the desktop is gone.
func (s *Service) Forget(ctx context.Context, desktopID string) {
	s.Controls.forget(desktopID)
	s.Gates.forget(ctx, desktopID)
	s.Requests.forget(ctx, desktopID)
}

// note records an event when the service is told how.
func (e *env) note(ctx context.Context, desktopID, typ, actor, msg string) {
	if e.onNote != nil {
		e.onNote(ctx, desktopID, typ, actor, msg)
	}
}

func (e *env) changed(desktopID string) {
	if e.onChanged != nil {
		e.onChanged(desktopID)
	}
}

func (e *env) step(ctx context.Context, st *steps.Step) {
	if e.onStep != nil {
		e.onStep(ctx, st)
	}
}

// background is a context for what a timer does: not cancelled with the
// call that started the timer, bounded in time.
func (e *env) background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(e.base), noteWithin)
}

// stopped says the service's context ended: its timers do nothing more.
func (e *env) stopped() bool { return e.base.Err() != nil }

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// newID names a request.
func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "req_" + hex.EncodeToString(b[:])
}

// clip shortens s to n characters for a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// quote is s clipped and quoted for an event's message.
func quote(s string) string { return strconv.Quote(clip(s, 200)) }

// nameOf is how a message names p.
func nameOf(p Person) string {
	if p.Name != "" {
		return p.Name
	}
	return p.By()
}

// notFound wraps ErrNotFound for request id.
func notFound(id string) error { return fmt.Errorf("request %s: %w", id, ErrNotFound) }
