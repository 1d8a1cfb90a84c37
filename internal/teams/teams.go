// Package teams keeps teams (docs/teams.md): owners with members, each an
// admin, member or viewer of the team. A team's desktops, secrets and
// webhooks belong to the team as to any owner; people act for it with
// team tokens, whose role the API holds them to.
package teams

import (
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Role is a member's role in a team.
type Role string

// Roles, from least to most.
const (
	RoleViewer Role = "viewer"
	RoleMember Role = "member"
	RoleAdmin  Role = "admin"
)

// rank orders roles: viewer < member < admin (0: not a role).
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleMember:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r reaches as far as o.
func (r Role) AtLeast(o Role) bool { return r.Valid() && r.rank() >= o.rank() }

// Min is the lesser of two roles.
func Min(a, b Role) Role {
	if a.rank() <= b.rank() {
		return a
	}
	return b
}

// ParseRole checks a role given by a caller (field names the input).
func ParseRole(field, s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", &desktop.ValidationError{Field: field, Message: `must be "admin", "member" or "viewer"`}
	}
	return r, nil
}

// Team is a team with its members.
type Team struct {
	Name      string
	CreatedAt time.Time
	CreatedBy string
	Members   []Member
}

// Member is one member of a team: their owner name and role.
type Member struct {
	Member  string
	Role    Role
	AddedAt time.Time
	AddedBy string
}

// RoleOf is member's role in t ("" when not a member).
func (t *Team) RoleOf(member string) Role {
	for _, m := range t.Members {
		if m.Member == member {
			return m.Role
		}
	}
	return ""
}

// admins counts t's admins.
func (t *Team) admins() int {
	n := 0
	for _, m := range t.Members {
		if m.Role == RoleAdmin {
			n++
		}
	}
	return n
}

// ValidateName checks a team's name: it becomes an owner, so it follows
// owner names (1–64 characters of plain text, no spaces or '/').
func ValidateName(name string) error {
	return validateOwner("name", name)
}

// ValidateMember checks a member's name (an owner name).
func ValidateMember(name string) error {
	return validateOwner("member", name)
}

func validateOwner(field, s string) error {
	if err := desktop.ValidateText(field, s, 64, false); err != nil {
		return err
	}
	if s == "" || strings.ContainsAny(s, " \t\n/") {
		return &desktop.ValidationError{Field: field, Message: "must be 1-64 characters without spaces or '/'"}
	}
	return nil
}

// LastAdminError refuses to remove or lower a team's last admin.
type LastAdminError struct{ Team, Member string }

func (e *LastAdminError) Error() string {
	return fmt.Sprintf("%s is the last admin of team %s: make another member admin first", e.Member, e.Team)
}

// BusyError refuses to delete a team that still owns desktops.
type BusyError struct {
	Team     string
	Desktops []string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("team %s still owns desktops %s: delete them first", e.Team, strings.Join(e.Desktops, ", "))
}

// Unwrap makes a BusyError a desktop.ErrBusy (409 busy).
func (e *BusyError) Unwrap() error { return desktop.ErrBusy }
