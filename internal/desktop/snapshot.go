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
	ID          string
	DesktopID   string
	Name        string
	Description string
	Scope       string
	Memory      bool
	Parent      string
	SizeBytes   int64
	CreatedAt   time.Time
	RevertedAt  *time.Time
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
