package audit

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Outcomes a Filter may ask for.
const (
	OutcomeOK    = "ok"    // status below 400
	OutcomeError = "error" // status 400 or more
)

// Filter chooses entries. Empty fields choose everything.
type Filter struct {
	// Visible limits the entries to those this owner may see: where it is
	// the Owner or the SubjectOwner ("" = all, for admins).
	Visible string
	// Owner is asked for the same way: entries where it acted or was acted
	// on.
	Owner string
	// Actor is the acting token's id.
	Actor string
	// Desktop matches DesktopID or ObjectID.
	Desktop string
	// Action is a prefix of the action ("desktop." or "desktop.stop").
	Action  string
	Outcome string
	// Since and Until bound At: Since ≤ At < Until (zero: unbounded).
	Since, Until time.Time
	// Limit is the page's size; After the cursor of the page before
	// (entries older than it).
	Limit int
	After *Cursor
}

// Cursor is where a page ended: its last entry's time and id (pages run
// newest first).
type Cursor struct {
	AtMS int64
	ID   string
}

// CursorOf is the cursor after e.
func CursorOf(e *Entry) *Cursor { return &Cursor{AtMS: e.At.UnixMilli(), ID: e.ID} }

// String is the cursor as clients hold it: opaque text.
func (c *Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.AtMS, 10) + "." + c.ID))
}

// ParseCursor reads a cursor a page handed out.
func ParseCursor(s string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not a cursor this API handed out")
	}
	at, id, ok := strings.Cut(string(b), ".")
	ms, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !strings.HasPrefix(id, "au_") {
		return nil, fmt.Errorf("not a cursor this API handed out")
	}
	return &Cursor{AtMS: ms, ID: id}, nil
}

// Page is one page of entries, newest first; NextCursor ("" on the last
// page) asks for the next.
type Page struct {
	Entries    []*Entry `json:"entries"`
	NextCursor string   `json:"next_cursor"`
}
