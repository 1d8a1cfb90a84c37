package auth

import (
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// withinParent checks that a token minted by req.Parent reaches no further
// and lives no longer than its maker: otherwise any token could launder
// itself into a wider or everlasting one, and revoking or letting it expire
// would not take away what it handed out.
//
//   - admin: any owner, any scope.
//   - owner: its own owner only; owner or desktop scope, never admin.
//   - desktop: a desktop token for its own desktop only, and a
//     computer-only token mints nothing (it is meant as the narrowest
//     handle there is: screen, mouse and keyboard).
//   - expiry: a maker that expires can only mint tokens that expire no
//     later. This is refused rather than clamped, so a client never holds a
//     token that dies sooner than it asked for without knowing. A sign-in
//     (a session) is the person, not a token handed out: what it mints may
//     outlive it.
func withinParent(req CreateRequest, now time.Time) error {
	p := req.Parent
	switch p.Scope {
	case desktop.ScopeAdmin:
	case desktop.ScopeOwner:
		// A person's own token (no role) mints team tokens for the teams
		// its owner is in (the API checked the membership).
		team := p.Role == "" && req.Role != "" && req.Member == p.Owner
		if req.Owner != p.Owner && !team {
			return fmt.Errorf("an owner token may only make tokens for its own owner %q: %w", p.Owner, desktop.ErrForbidden)
		}
		if req.Scope == desktop.ScopeAdmin {
			return fmt.Errorf("only an admin token may make admin tokens: %w", desktop.ErrForbidden)
		}
	case desktop.ScopeDesktop:
		if p.ComputerOnly {
			return fmt.Errorf("a computer-only token cannot make tokens: %w", desktop.ErrForbidden)
		}
		if req.Scope != desktop.ScopeDesktop || req.DesktopID != p.DesktopID || req.Owner != p.Owner {
			return fmt.Errorf("a desktop token may only make tokens for its own desktop %s: %w", p.DesktopID, desktop.ErrForbidden)
		}
	default:
		return fmt.Errorf("a %q token cannot make tokens: %w", p.Scope, desktop.ErrForbidden)
	}
	if err := withinRole(req); err != nil {
		return err
	}
	if p.ExpiresAt == nil || p.Session {
		return nil
	}
	left := p.ExpiresAt.Sub(now)
	if req.TTL == 0 {
		return &desktop.ValidationError{Field: "ttl_seconds", Message: fmt.Sprintf(
			"this token expires at %s, so a token it makes must expire too: give at most %d seconds", p.ExpiresAt.Format(time.RFC3339), int64(left.Seconds()))}
	}
	if now.Add(req.TTL).After(*p.ExpiresAt) {
		return &desktop.ValidationError{Field: "ttl_seconds", Message: fmt.Sprintf(
			"must not outlive this token, which expires at %s: at most %d seconds", p.ExpiresAt.Format(time.RFC3339), int64(left.Seconds()))}
	}
	return nil
}
