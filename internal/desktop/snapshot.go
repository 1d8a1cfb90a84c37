package desktop

import (
	"regexp"
	"time"
)

// Snapshot scopes: which disks a snapshot covers.
const (
	ScopeAll  = "all"  // OS and data disks (and RAM when Memory is set)
	ScopeData = "data" // only the data disk: the user's /home
	ScopeOS   = "os"   // only the OS disk
)

// Snapshot is a named point a desktop can be reverted to.
type Snapshot struct {
	ID          string     `json:"id"`
	DesktopID   string     `json:"desktop_id"`
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Scope       string     `json:"scope"`
	Memory      bool       `json:"memory"`
	Parent      string     `json:"parent,omitempty"`
	SizeBytes   int64      `json:"size_bytes"`
	CreatedAt   time.Time  `json:"created_at"`
	RevertedAt  *time.Time `json:"reverted_at,omitempty"`
}

var snapshotName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidateSnapshot checks a snapshot request's name, scope and memory flag.
func ValidateSnapshot(name, scope string, memory bool) error {
	if !snapshotName.MatchString(name) {
		return &ValidationError{Field: "name", Message: "1-63 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	switch scope {
	case ScopeAll:
	case ScopeData, ScopeOS:
		if memory {
			return &ValidationError{Field: "memory", Message: "a memory snapshot covers every disk: use scope \"all\""}
		}
	default:
		return &ValidationError{Field: "scope", Message: `must be "all", "data" or "os"`}
	}
	return nil
}
