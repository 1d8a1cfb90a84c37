package auth

import (
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
)

// checkRole checks a team token's role and member: only owner and desktop
// tokens have one, a desktop token is a member at most, and a team token
// names whom it acts for.
func checkRole(req CreateRequest) error {
	if req.Role == "" {
		if req.Member != "" || req.MemberScope != "" {
			return &desktop.ValidationError{Field: "member", Message: "only a team token (with a role) acts for a member"}
		}
		return nil
	}
	r, err := teams.ParseRole("role", req.Role)
	if err != nil {
		return err
	}
	if req.Scope == desktop.ScopeAdmin {
		return &desktop.ValidationError{Field: "role", Message: "an admin token has no team role"}
	}
	if req.Scope == desktop.ScopeDesktop && !teams.RoleMember.AtLeast(r) {
		return &desktop.ValidationError{Field: "role", Message: `a desktop token of a team is "member" at most`}
	}
	if err := teams.ValidateMember(req.Member); err != nil {
		return err
	}
	if req.Member == req.Owner {
		return &desktop.ValidationError{Field: "member", Message: "a team token acts for a member, not for the team"}
	}
	return nil
}

// withinRole keeps a team token's tokens to its team, role and member: a
// maker with a role hands on no more than that role, for the same person.
func withinRole(req CreateRequest) error {
	p := req.Parent
	if p.Role == "" {
		return nil
	}
	if req.Role == "" || !teams.Role(p.Role).AtLeast(teams.Role(req.Role)) {
		return fmt.Errorf("a %s of team %s may only make tokens of role %s or less: %w", p.Role, p.Owner, p.Role, desktop.ErrForbidden)
	}
	if req.Member != p.Member || req.Owner != p.Owner {
		return fmt.Errorf("a team token may only make tokens for its own team %s and member %s: %w", p.Owner, p.Member, desktop.ErrForbidden)
	}
	return nil
}
