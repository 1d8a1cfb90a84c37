package desktop

import "time"

// ConsoleToken grants a browser one desktop's display for a short time. Only
// the SHA-256 of its secret is stored.
type ConsoleToken struct {
	ID        string    `json:"id"`
	DesktopID string    `json:"desktop_id"`
	Owner     string    `json:"owner"`
	Hash      string    `json:"-"`
	ViewOnly  bool      `json:"view_only"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// RevokedAt and RevokeReason are set when the token was revoked (by a
	// caller, or because the desktop stopped or was deleted).
	RevokedAt    *time.Time `json:"revoked_at,omitempty"`
	RevokeReason string     `json:"revoke_reason,omitempty"`
	// MadeBy is the API token that made it: revoking that token revokes
	// this one, and it never outlives it.
	MadeBy string `json:"-"`
	// ScreenOnly: made by a computer-only token, it shows the screen and
	// nothing else (view-only, no terminal, no clipboard).
	ScreenOnly bool `json:"screen_only"`
}

// Usable reports whether the token may open the console at now.
func (t *ConsoleToken) Usable(now time.Time) bool {
	return t.RevokedAt == nil && now.Before(t.ExpiresAt)
}
