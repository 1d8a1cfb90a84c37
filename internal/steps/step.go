// Package steps keeps each desktop's step log: every computer-use action,
// exec and file change made in it, with who made it, what was asked, what
// came of it and small pictures of the screen before and after. Steps are
// listed, followed as they happen, exported in Anthropic's and OpenAI's
// message formats, and name the checkpoint to revert to ("before step 42").
package steps

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kinds of step.
const (
	KindComputer   = "computer"
	KindExec       = "exec"
	KindFileWrite  = "file_write"
	KindFileDelete = "file_delete"
	KindClipboard  = "clipboard"
	// People in the loop (internal/loop): a person's input in the
	// console, a help request and its answer, an approval and its
	// decision.
	KindHuman    = "human"
	KindHelp     = "help"
	KindApproval = "approval"
)

// Step is one thing done in a desktop.
type Step struct {
	DesktopID string `json:"desktop_id"`
	// Seq numbers a desktop's steps from 1.
	Seq        int64     `json:"seq"`
	At         time.Time `json:"at"`
	DurationMS int64     `json:"duration_ms"`
	// Actor is the owner and token ("alice/tok_…").
	Actor string `json:"actor"`
	Kind  string `json:"kind"`
	// Input is what was asked (the action, the command, the path); Result
	// what came of it (JSON, without images or file contents).
	Input  json.RawMessage `json:"input"`
	Result json.RawMessage `json:"result"`
	// Status is the HTTP status the call answered; Error its message.
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	Before bool   `json:"thumbnail_before"`
	After  bool   `json:"thumbnail_after"`
	// Checkpoint is the snapshot taken just before the step (asked for
	// with checkpoint=true or memory, or by the desktop's checkpoint
	// policy).
	Checkpoint string `json:"checkpoint,omitempty"`
	// CheckpointError says why the automatic checkpoint this step was due
	// was not taken (the call went ahead without it).
	CheckpointError string `json:"checkpoint_error,omitempty"`
}

// Thumbs packs which thumbnails exist (stored as one number).
func (s *Step) Thumbs() int {
	n := 0
	if s.Before {
		n |= 1
	}
	if s.After {
		n |= 2
	}
	return n
}

// SetThumbs unpacks Thumbs.
func (s *Step) SetThumbs(n int) { s.Before, s.After = n&1 != 0, n&2 != 0 }

// OK says the call succeeded.
func (s *Step) OK() bool { return s.Status < 300 && s.Error == "" }

// Page selects steps: numbered above After and (when Before > 0) below
// Before, at most Limit of them — the oldest ones, or with Newest the
// newest ones — always listed oldest first.
type Page struct {
	After, Before int64
	Limit         int
	Newest        bool
}

// Which names a thumbnail: before or after the step.
type Which string

const (
	Before Which = "before"
	After  Which = "after"
)

// ParseWhich checks a thumbnail's name.
func ParseWhich(s string) (Which, error) {
	switch Which(s) {
	case Before, After:
		return Which(s), nil
	}
	return "", fmt.Errorf("thumbnail %q: want before or after", s)
}
