// Package loop puts people in the loop of a desktop an agent drives: who
// holds its mouse and keyboard (the agent, or a person who took over),
// questions the agent asks a person (help requests) and actions that wait
// for a person's approval (approval gates, by a per-desktop policy).
package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Who holds a desktop's input.
const (
	HolderAgent  = "agent"
	HolderPerson = "person"
)

// Control says who holds a desktop's mouse and keyboard.
type Control struct {
	// Holder is HolderAgent (the default) or HolderPerson.
	Holder string `json:"holder"`
	// Person is the holder's name as shown ("" for the agent).
	Person string `json:"person,omitempty"`
	// By is who holds it: an actor ("alice/tok_…") or a console session
	// ("console/<console token id>").
	By string `json:"by,omitempty"`
	// Since is when the holder took it (zero for the agent by default).
	Since time.Time `json:"since"`
	// Until is when control goes back to the agent by itself: the idle
	// timeout after the person's last input (nil for the agent).
	Until *time.Time `json:"until,omitempty"`
	// IdleTimeoutS is that timeout in seconds (0 for the agent).
	IdleTimeoutS int `json:"idle_timeout_s,omitempty"`
}

// Person is someone acting on a desktop: through the API (Actor is the
// owner and token, "alice/tok_…", Console empty) or through a console
// link (Console is the console token's id, Actor the token that made it).
type Person struct {
	Name    string
	Actor   string
	Console string
}

// By is how a Control or a decision names p.
func (p Person) By() string {
	if p.Console != "" {
		return "console/" + p.Console
	}
	return p.Actor
}

// Request kinds.
const (
	KindHelp     = "help"
	KindApproval = "approval"
)

// Request statuses. Pending is the only one that changes.
const (
	StatusPending  = "pending"
	StatusAnswered = "answered" // help: a person answered
	StatusApproved = "approved" // approval: a person approved
	StatusDenied   = "denied"   // approval: a person denied, or it timed out
	StatusExpired  = "expired"  // help: nobody answered in time; approval: see Reason
)

// Action kinds an approval is for.
const (
	ActionExec       = "exec"
	ActionFileDelete = "file_delete"
	ActionKey        = "key"
	ActionClick      = "click"
	ActionURL        = "url"
	ActionExplicit   = "explicit" // the agent asked before a step of its own
)

// Action is what an approval request would let happen.
type Action struct {
	Kind string `json:"kind"`
	// Summary says it in one line ("exec: rm -rf /home/agent/build").
	Summary string `json:"summary"`
	// Rule is the policy rule that matched ("exec[0]: rm -rf"; "" for
	// explicit requests).
	Rule string `json:"rule,omitempty"`
	// Detail is the call's input as the caller gave it (may be nil).
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Request is a help request or an approval request.
type Request struct {
	ID        string `json:"id"`
	DesktopID string `json:"desktop_id"`
	Owner     string `json:"owner"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	// Question is what a help request asks (for an approval, what is to
	// be approved, in words).
	Question string   `json:"question"`
	Choices  []string `json:"choices,omitempty"`
	// Action is what an approval request is for (nil for help).
	Action *Action `json:"action,omitempty"`
	// Screenshot says a picture of the screen came with the request.
	Screenshot bool      `json:"screenshot"`
	AskedBy    string    `json:"asked_by"`
	AskedAt    time.Time `json:"asked_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// Gated says the request holds a call that waits for it (an approval
	// gate); such requests end with the call (a restart expires them).
	Gated     bool       `json:"gated"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// Answer is a help request's answer: the text, or the choice made.
	Answer string `json:"answer,omitempty"`
	// Choice says Answer is one of Choices.
	Choice bool `json:"choice,omitempty"`
	// Reason says why an approval was approved or denied (a person's
	// words, or "no decision within 5m0s").
	Reason string `json:"reason,omitempty"`
}

// Decided says a request is no longer pending.
func (r *Request) Decided() bool { return r.Status != StatusPending }

// Filter selects requests. Empty fields select all.
type Filter struct {
	Owner     string
	DesktopID string
	Kind      string
	Status    string
	// Limit bounds the list (0: 200); newest first.
	Limit int
}

// Errors.
var (
	// ErrNotFound: no such request on that desktop.
	ErrNotFound = errors.New("no such request")
	// ErrWrongKind: answering an approval or deciding a help request.
	ErrWrongKind = errors.New("wrong kind of request")
	// ErrAlreadyDecided: the store's request is no longer pending.
	ErrAlreadyDecided = errors.New("request already decided")
	// ErrOwnRequest: the caller that asked may not answer or decide.
	ErrOwnRequest = errors.New("a request is answered by a person, not by whoever asked it")
)

// DecidedError: the request was already answered, decided or expired.
type DecidedError struct{ Request *Request }

func (e *DecidedError) Error() string {
	if e.Request.Status == StatusExpired || e.Request.Status == StatusDenied && e.Request.DecidedBy == "" {
		return fmt.Sprintf("request %s expired at %s", e.Request.ID, e.Request.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("request %s is already %s (by %s)", e.Request.ID, e.Request.Status, e.Request.DecidedBy)
}

// Expired says the request ran out of time rather than being decided.
func (e *DecidedError) Expired() bool { return e.Request.DecidedBy == "" }

// DeniedError: a gated action was denied (by a person or by its timeout)
// and was not performed.
type DeniedError struct{ Request *Request }

func (e *DeniedError) Error() string {
	by := e.Request.DecidedBy
	if by == "" {
		by = "its timeout"
	}
	return fmt.Sprintf("%s was denied by %s: %s (approval %s)", e.Request.Action.Summary, by, e.Request.Reason, e.Request.ID)
}

// InControlError: a person holds the desktop's input, so the agent's
// input was refused.
type InControlError struct{ Control Control }

func (e *InControlError) Error() string {
	return fmt.Sprintf("%s has taken over this desktop's mouse and keyboard (since %s): input from the agent waits until control is handed back",
		e.Control.Person, e.Control.Since.UTC().Format(time.RFC3339))
}
