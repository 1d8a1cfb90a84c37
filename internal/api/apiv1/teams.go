package apiv1

import (
	"time"

	"github.com/bureau/bureau/internal/teams"
)

// Team is a team with its members (GET /api/v1/teams/{team}); Role is
// the caller's in it.
type Team struct {
	Name      string       `json:"name"`
	CreatedAt time.Time    `json:"created_at"`
	CreatedBy string       `json:"created_by"`
	Role      string       `json:"role"`
	Members   []TeamMember `json:"members"`
}

// TeamMember is a member of a team and their role.
type TeamMember struct {
	Member  string    `json:"member"`
	Role    string    `json:"role"`
	AddedAt time.Time `json:"added_at"`
	AddedBy string    `json:"added_by"`
}

// TeamSummary is a team in a list (GET /api/v1/teams): Members counts
// them.
type TeamSummary struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	Role      string    `json:"role"`
	Members   int       `json:"members"`
}

// FromTeam is t as the caller, of role in it, sees it.
func FromTeam(t *teams.Team, role teams.Role) *Team {
	if t == nil {
		return nil
	}
	out := &Team{Name: t.Name, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy, Role: string(role), Members: []TeamMember{}}
	for _, m := range t.Members {
		out.Members = append(out.Members, FromTeamMember(m))
	}
	return out
}

// FromTeamMember is m on the wire.
func FromTeamMember(m teams.Member) TeamMember {
	return TeamMember{Member: m.Member, Role: string(m.Role), AddedAt: m.AddedAt, AddedBy: m.AddedBy}
}

// SummaryOfTeam is t in a list, for a caller of role in it.
func SummaryOfTeam(t *teams.Team, role teams.Role) TeamSummary {
	return TeamSummary{Name: t.Name, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy, Role: string(role), Members: len(t.Members)}
}
