package desktop

import "time"

// Share is a share link to one port of a desktop: whoever holds its secret
// may open the port's live URL until it expires or is revoked (only GET
// and HEAD when ReadOnly).
type Share struct {
	ID        string
	DesktopID string
	Owner     string
	Port      int
	Hash      string
	ReadOnly  bool
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
	// MadeBy is the API token that made it: revoking that token revokes
	// the link, which never outlives it.
	MadeBy string
}

// Usable says whether the link still opens its URL at now.
func (s *Share) Usable(now time.Time) bool { return s.RevokedAt == nil && now.Before(s.ExpiresAt) }
