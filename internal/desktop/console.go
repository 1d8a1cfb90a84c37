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
}

// Usable reports whether the token may open the console at now.
func (t *ConsoleToken) Usable(now time.Time) bool {
	return t.RevokedAt == nil && now.Before(t.ExpiresAt)
}
