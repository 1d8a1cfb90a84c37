// Package audit keeps bureau's audit log: who made each state-changing API
// call and console session, from where, to what, and how it ended. The API
// hands entries to a Log without waiting (Record); a writer goroutine
// inserts them in batches, and old rows are pruned after the retention
// period. Nothing in an entry comes from a request's body, query string or
// headers: only the route pattern and its path parameters.
package audit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"
)

// Entry is one audited call or console session.
type Entry struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Owner is the acting token's owner ("" for a call that failed to
	// authenticate); SubjectOwner the owner of the desktop or object acted
	// on, when known. Each may see the entry.
	Owner        string `json:"owner"`
	SubjectOwner string `json:"subject_owner"`
	// TokenID and TokenName are the acting API or console token's; Person
	// is the person signed in (today a console link's name).
	TokenID   string `json:"token_id"`
	TokenName string `json:"token_name"`
	Person    string `json:"person"`
	ClientIP  string `json:"client_ip"`
	// Method and Route ("POST /api/v1/desktops/:id/stop") say what was
	// called; Action names it ("desktop.stop").
	Method string `json:"method"`
	Route  string `json:"route"`
	Action string `json:"action"`
	// ObjectType and ObjectID are what the call named last in its path
	// ("snapshot", "s1"); DesktopID the desktop it was about, if any.
	ObjectType string `json:"object_type"`
	ObjectID   string `json:"object_id"`
	DesktopID  string `json:"desktop_id"`
	// Status is the HTTP status; ErrorCode the API error's code when the
	// call failed.
	Status     int    `json:"status"`
	ErrorCode  string `json:"error_code"`
	DurationMS int64  `json:"duration_ms"`
	// Detail says more where a route needs it (a console session's mode
	// and how it ended; a call made through MCP). Never a secret.
	Detail string `json:"detail"`
}

// Failed says whether the call failed (status 400 or more).
func (e *Entry) Failed() bool { return e.Status >= 400 }

// NewID makes a time-ordered entry id: "au_", the time in milliseconds
// (hex, fixed width), then a counter, so that entries recorded in the same
// millisecond keep the order they were recorded in, then random bits (ids
// stay unique across servers).
func NewID(at time.Time) string {
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("au_%012x%06x%s", at.UnixMilli(), idSeq.Add(1)&0xffffff, hex.EncodeToString(b))
}

var idSeq atomic.Uint32
