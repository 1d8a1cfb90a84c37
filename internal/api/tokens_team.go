package api

import (
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
	"github.com/gin-gonic/gin"
)

// inTeam reports whether the caller is a person's own token or sign-in
// whose owner is a member of team (any role).
func (s *core) inTeam(c *gin.Context, team string) bool {
	me := caller(c)
	if s.teams == nil || me.Role != "" || me.Scope != desktop.ScopeOwner {
		return false
	}
	_, err := s.teams.RoleOf(c.Request.Context(), team, me.Owner)
	return err == nil
}

// teamGrant decides the role and member of a token the caller mints for
// owner (docs/teams.md): none for tokens of the caller's own owner that
// is not a team; for a team, the role asked for (by default the caller's
// in the team), which must not exceed the caller's — a team token's own
// role, a person's membership, any for a bureau admin — nor "member" for
// a desktop token. A person who is not in the team is told it is not
// found (a team's existence does not leak); asking too much is forbidden.
func (s *tokenHandlers) teamGrant(c *gin.Context, owner, asked, scope string) (role, member string, err error) {
	me := caller(c)
	var mine teams.Role
	switch {
	case me.Role != "":
		if owner != me.Owner {
			return "", "", nil // auth refuses: another owner
		}
		mine, member = teams.Role(me.Role), me.Member
	case isAdmin(c):
		var t *teams.Team
		if s.teams != nil && owner != me.Owner {
			t, err = s.teams.Get(c.Request.Context(), owner)
		}
		if t == nil || err != nil {
			if err != nil && !errors.Is(err, desktop.ErrNotFound) {
				return "", "", err
			}
			if asked != "" {
				return "", "", &desktop.ValidationError{Field: "role", Message: fmt.Sprintf("%q is not a team: only a team's tokens have a role", owner)}
			}
			return "", "", nil
		}
		mine, member = teams.RoleAdmin, me.Owner
		if r := t.RoleOf(me.Owner); r != "" {
			mine = r
		}
	case owner == me.Owner || me.Scope != desktop.ScopeOwner:
		if asked != "" {
			return "", "", &desktop.ValidationError{Field: "role", Message: "only a team's tokens have a role: name the team as owner"}
		}
		return "", "", nil
	default: // a person's own token or sign-in, for another owner
		if s.teams == nil {
			return "", "", fmt.Errorf("team %s: %w", owner, desktop.ErrNotFound)
		}
		if mine, err = s.teams.RoleOf(c.Request.Context(), owner, me.Owner); err != nil {
			return "", "", err
		}
		member = me.Owner
	}
	if scope == desktop.ScopeAdmin {
		if asked != "" {
			return "", "", &desktop.ValidationError{Field: "role", Message: "an admin token has no team role"}
		}
		return "", "", nil // auth refuses an admin token to all but admins
	}
	limit := mine
	if scope == desktop.ScopeDesktop {
		limit = teams.Min(mine, teams.RoleMember)
	}
	if asked == "" {
		return string(limit), member, nil
	}
	r, err := teams.ParseRole("role", asked)
	if err != nil {
		return "", "", err
	}
	if !limit.AtLeast(r) {
		return "", "", fmt.Errorf("a token of team %s may be %s at most here, not %s: %w", owner, limit, r, desktop.ErrForbidden)
	}
	return string(r), member, nil
}
