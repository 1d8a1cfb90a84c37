package desktop

import "time"

// Share is a share link to one port of a desktop: whoever holds its secret
// may open the port's live URL until it expires or is revoked (only GET
// and HEAD when ReadOnly).
type Share struct {
	ID        string     `json:"id"`
	DesktopID string     `json:"desktop_id"`
	Owner     string     `json:"owner"`
	Port      int        `json:"port"`
	Hash      string     `json:"-"`
	ReadOnly  bool       `json:"read_only"`
	CreatedBy string     `json:"created_by,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// MadeBy is the API token that made it: revoking that token revokes
	// the link, which never outlives it.
	MadeBy string `json:"-"`
}

// Usable says whether the link still opens its URL at now.
func (s *Share) Usable(now time.Time) bool { return s.RevokedAt == nil && now.Before(s.ExpiresAt) }
