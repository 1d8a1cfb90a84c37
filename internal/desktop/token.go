package desktop

import "time"

// Token scopes.
const (
	ScopeAdmin = "admin" // sees and acts on every owner's desktops
	ScopeOwner = "owner" // sees and acts on its owner's desktops only
	// ScopeDesktop reaches one desktop only (DesktopID): the token to hand
	// the agent that drives it.
	ScopeDesktop = "desktop"
)

// Token is an API token's record. The secret itself is never stored, only
// its SHA-256.
type Token struct {
	ID         string
	Owner      string
	Name       string
	Hash       string
	Scope      string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	DesktopID  string
	// ComputerOnly limits a desktop token to the screen, mouse and
	// keyboard (screenshot and computer actions).
	ComputerOnly bool
	// ParentID is the token that minted this one through the API ("" when
	// made on the host); revoking the parent revokes it too.
	ParentID string
	// Session marks a sign-in (docs/sign-in.md): minted only by the single
	// sign-on callback, its secret is the browser's bureau_session cookie.
	// Tokens it mints are not its children.
	Session bool
	// Role is a team token's role in its team (owner = the team):
	// "admin", "member" or "viewer"; "" for tokens that are not a team's
	// (docs/teams.md). Member is the person it acts for (their owner
	// name), and for a team sign-in MemberScope is the scope of that
	// person's own sign-in, to switch back to.
	Role        string
	Member      string
	MemberScope string
}

// Usable reports whether the token may authenticate a request at now.
func (t *Token) Usable(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}
