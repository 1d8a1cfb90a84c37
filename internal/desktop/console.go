package desktop

import "time"

// ConsoleToken grants a browser one desktop's display for a short time. Only
// the SHA-256 of its secret is stored.
type ConsoleToken struct {
	ID        string
	DesktopID string
	Owner     string
	Hash      string
	ViewOnly  bool
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	// RevokedAt and RevokeReason are set when the token was revoked (by a
	// caller, or because the desktop stopped or was deleted).
	RevokedAt    *time.Time
	RevokeReason string
	// MadeBy is the API token that made it: revoking that token revokes
	// this one, and it never outlives it.
	MadeBy string
	// ScreenOnly: made by a computer-only token, it shows the screen and
	// nothing else (view-only, no terminal, no clipboard).
	ScreenOnly bool
	// Name, optional, is who the link is for ("Dana"): shown to the
	// others watching and in the history when they take over or decide.
	Name string
}

// Usable reports whether the token may open the console at now.
func (t *ConsoleToken) Usable(now time.Time) bool {
	return t.RevokedAt == nil && now.Before(t.ExpiresAt)
}
