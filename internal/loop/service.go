package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
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

// Service puts people in the loop of desktops: control of their input
// (control.go), a person's input as steps (human.go), help and approval
// requests (requests.go) and the approval gates of their policies
// (gate.go, policy_parse.go).
type Service struct {
	cfg Config
	log *slog.Logger
	// base bounds what timers do: they outlive the calls that start them.
	base context.Context

	quiet, longest time.Duration
	// gateUnit counts a policy's timeout_s (a second; tests shorten it).
	gateUnit time.Duration

	mu       sync.Mutex
	control  map[string]*holding // by desktop id; absent: the agent holds it
	sessions map[session]*typing // console sessions' input, by desktop and session
	pending  map[string]*waiting // pending requests by id
	counts   map[string]*[2]int  // pending help and approval requests by desktop id
	policies map[string]Policy   // compiled policies by desktop id (the zero Policy: none set)
	polGen   uint64              // bumped by every policy change: reads older than it are not cached
}

// New starts a Service over cfg.Store: gated requests left pending by a
// bureau that stopped end expired (their callers are gone); the other
// pending ones wait again until they expire. Its timers end with ctx.
func New(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: log, base: ctx, quiet: episodeQuiet, longest: episodeLongest, gateUnit: time.Second,
		control: map[string]*holding{}, sessions: map[session]*typing{}, pending: map[string]*waiting{},
		counts: map[string]*[2]int{}, policies: map[string]Policy{}}
	left, err := cfg.Store.ListRequests(ctx, Filter{Status: StatusPending, Limit: math.MaxInt32})
	if err != nil {
		return nil, fmt.Errorf("pending requests: %w", err)
	}
	for _, r := range left {
		if r.Gated {
			if _, err := s.end(ctx, r, outcome{status: StatusExpired, reason: "bureau restarted while it waited"}); err != nil {
				log.Error("expire a gated request bureau stopped waiting on", "desktop", r.DesktopID, "request", r.ID, "err", err)
			}
			continue
		}
		s.track(r)
	}
	return s, nil
}

// Status is what desktopID's record shows: who holds its input and how
// many requests wait.
func (s *Service) Status(desktopID string) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Control: s.controlLocked(desktopID)}
	if c := s.counts[desktopID]; c != nil {
		st.Help, st.Approvals = c[0], c[1]
	}
	return st
}

// note records an event when the service is told how.
func (s *Service) note(ctx context.Context, desktopID, typ, actor, msg string) {
	if s.cfg.Note != nil {
		s.cfg.Note(ctx, desktopID, typ, actor, msg)
	}
}

func (s *Service) changed(desktopID string) {
	if s.cfg.Changed != nil {
		s.cfg.Changed(desktopID)
	}
}

func (s *Service) step(ctx context.Context, st *steps.Step) {
	if s.cfg.Step != nil {
		s.cfg.Step(ctx, st)
	}
}

// background is a context for what a timer does: not cancelled with the
// call that started the timer, bounded in time.
func (s *Service) background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(s.base), noteWithin)
}

// stopped says the service's context ended: its timers do nothing more.
func (s *Service) stopped() bool { return s.base.Err() != nil }

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
