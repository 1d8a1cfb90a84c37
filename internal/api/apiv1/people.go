package apiv1

import (
	"encoding/json"
	"time"

	"github.com/bureau/bureau/internal/loop"
)

// Control says who holds a desktop's mouse and keyboard: the agent, or a
// person who took over.
type Control struct {
	// Holder is "agent" or "person".
	Holder string `json:"holder"`
	// Person is the holder's name ("" for the agent).
	Person string `json:"person,omitempty"`
	// By is who holds it: an API caller ("alice/tok_…") or a console
	// session ("console/con_…").
	By string `json:"by,omitempty"`
	// Since is when the holder took it (left out for the agent by default).
	Since *time.Time `json:"since,omitempty"`
	// Until is when control goes back to the agent by itself: IdleTimeoutS
	// after the person's last input.
	Until        *time.Time `json:"until,omitempty"`
	IdleTimeoutS int        `json:"idle_timeout_s,omitempty"`
}

// Viewer is someone watching a desktop in the console.
type Viewer struct {
	// Session is the console token's id.
	Session  string    `json:"session"`
	Name     string    `json:"name"`
	ViewOnly bool      `json:"view_only"`
	Since    time.Time `json:"since"`
	// HoldsInput: this session (or the caller that made its link) holds
	// the desktop's input.
	HoldsInput bool `json:"holds_input"`
}

// ControlView is a desktop's control with who is watching it.
type ControlView struct {
	Control
	Viewers []Viewer `json:"viewers"`
}

// Action is what an approval request would let happen.
type Action struct {
	Kind    string          `json:"kind"`
	Summary string          `json:"summary"`
	Rule    string          `json:"rule,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Request is a help request or an approval request.
type Request struct {
	ID         string     `json:"id"`
	DesktopID  string     `json:"desktop_id"`
	Owner      string     `json:"owner"`
	Kind       string     `json:"kind"`
	Status     string     `json:"status"`
	Question   string     `json:"question"`
	Choices    []string   `json:"choices,omitempty"`
	Action     *Action    `json:"action,omitempty"`
	Screenshot bool       `json:"screenshot"`
	AskedBy    string     `json:"asked_by"`
	AskedAt    time.Time  `json:"asked_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	Gated      bool       `json:"gated"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Answer     string     `json:"answer,omitempty"`
	Choice     bool       `json:"choice,omitempty"`
	Reason     string     `json:"reason,omitempty"`
}

// FromControl is c as the API shows it.
func FromControl(c loop.Control) *Control {
	out := &Control{Holder: c.Holder, Person: c.Person, By: c.By, Until: c.Until, IdleTimeoutS: c.IdleTimeoutS}
	if out.Holder == "" {
		out.Holder = loop.HolderAgent
	}
	if !c.Since.IsZero() {
		since := c.Since
		out.Since = &since
	}
	return out
}

// FromRequest is r as the API shows it (nil for nil).
func FromRequest(r *loop.Request) *Request {
	if r == nil {
		return nil
	}
	out := &Request{ID: r.ID, DesktopID: r.DesktopID, Owner: r.Owner, Kind: r.Kind, Status: r.Status,
		Question: r.Question, Choices: r.Choices, Screenshot: r.Screenshot, AskedBy: r.AskedBy,
		AskedAt: r.AskedAt, ExpiresAt: r.ExpiresAt, Gated: r.Gated, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt,
		Answer: r.Answer, Choice: r.Choice, Reason: r.Reason}
	if a := r.Action; a != nil {
		out.Action = &Action{Kind: a.Kind, Summary: a.Summary, Rule: a.Rule, Detail: a.Detail}
	}
	return out
}

// SetPeople fills what bureau follows of the people in a desktop's loop
// beside its record: who holds its input, whether it needs help and how
// many approvals wait.
func (d *Desktop) SetPeople(c *Control, needsHelp bool, pendingApprovals int) {
	d.Control, d.NeedsHelp, d.PendingApprovals = c, needsHelp, pendingApprovals
}
