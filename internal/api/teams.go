package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
	"github.com/gin-gonic/gin"
)

// Teams keeps teams and their members (internal/teams, docs/teams.md).
type Teams interface {
	Create(ctx context.Context, name, by string) (*teams.Team, error)
	// List returns the teams member is in ("" = all).
	List(ctx context.Context, member string) ([]*teams.Team, error)
	Get(ctx context.Context, name string) (*teams.Team, error)
	// SetMember and RemoveMember return the role the member had.
	SetMember(ctx context.Context, team, member string, role teams.Role, by string) (teams.Role, error)
	RemoveMember(ctx context.Context, team, member string) (teams.Role, error)
	Delete(ctx context.Context, name string) error
	// RoleOf is desktop.ErrNotFound when member is not in team.
	RoleOf(ctx context.Context, team, member string) (teams.Role, error)
}

// teamHandlers manage teams and their members.
type teamHandlers struct {
	*core
	// consoles end the live consoles of team tokens revoked.
	consoles Consoles
}

var errNoTeams = fmt.Errorf("this bureau keeps no teams: %w", desktop.ErrUnavailable)

func (s *teamHandlers) teamRoutes(v1 *gin.RouterGroup) {
	v1.POST("/teams", s.handle(s.createTeam))
	v1.GET("/teams", s.handle(s.listTeams))
	v1.GET("/teams/:team", s.handle(s.getTeam))
	v1.DELETE("/teams/:team", s.handle(s.deleteTeam))
	v1.PUT("/teams/:team/members/:member", s.handle(s.putMember))
	v1.DELETE("/teams/:team/members/:member", s.handle(s.deleteMember))
}

// person is whom a person's own token or sign-in acts for ("" for a team
// or desktop token).
func person(t *desktop.Token) string {
	if t.Role != "" || t.Scope == desktop.ScopeDesktop {
		return ""
	}
	return t.Owner
}

// roleIn is the caller's role in team: a team token's own for its team, a
// person's membership, admin for a bureau admin who is not in it. Unknown
// teams and teams the caller is not in are not found.
func (s *core) roleIn(c *gin.Context, team string) (teams.Role, error) {
	if s.teams == nil {
		return "", errNoTeams
	}
	me := caller(c)
	if me.Role != "" {
		if me.Owner != team {
			return "", fmt.Errorf("team %s: %w", team, desktop.ErrNotFound)
		}
		return teams.Role(me.Role), nil
	}
	r, err := s.teams.RoleOf(c.Request.Context(), team, me.Owner)
	if errors.Is(err, desktop.ErrNotFound) && isAdmin(c) {
		if _, err := s.teams.Get(c.Request.Context(), team); err != nil {
			return "", err
		}
		return teams.RoleAdmin, nil
	}
	return r, err
}

type createTeamRequest struct {
	Name string `json:"name"`
}

func (s *teamHandlers) createTeam(c *gin.Context) (reply, error) {
	if s.teams == nil {
		return reply{}, errNoTeams
	}
	me := caller(c)
	if person(me) == "" {
		return reply{}, fmt.Errorf("a team is made with a person's own token or sign-in, not a team's or a desktop's: %w", desktop.ErrForbidden)
	}
	var req createTeamRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	t, err := s.teams.Create(c.Request.Context(), req.Name, me.Owner)
	if err != nil {
		return reply{}, err
	}
	created(c, "team", t.Name)
	s.log.Info("team created", "team", t.Name, "by", actor(c))
	return reply{http.StatusCreated, apiv1.FromTeam(t, teams.RoleAdmin)}, nil
}

func (s *teamHandlers) listTeams(c *gin.Context) (reply, error) {
	if s.teams == nil {
		return reply{}, errNoTeams
	}
	me := caller(c)
	var list []*teams.Team
	var err error
	switch {
	case me.Role != "":
		var t *teams.Team
		if t, err = s.teams.Get(c.Request.Context(), me.Owner); err == nil {
			list = []*teams.Team{t}
		}
	case isAdmin(c):
		list, err = s.teams.List(c.Request.Context(), "")
	case person(me) != "":
		list, err = s.teams.List(c.Request.Context(), me.Owner)
	}
	if err != nil && !errors.Is(err, desktop.ErrNotFound) {
		return reply{}, err
	}
	out := []apiv1.TeamSummary{}
	for _, t := range list {
		role := t.RoleOf(me.Owner)
		if me.Role != "" {
			role = teams.Role(me.Role)
		}
		out = append(out, apiv1.SummaryOfTeam(t, role))
	}
	return reply{http.StatusOK, gin.H{"teams": out}}, nil
}

func (s *teamHandlers) getTeam(c *gin.Context) (reply, error) {
	role, err := s.roleIn(c, c.Param("team"))
	if err != nil {
		return reply{}, err
	}
	t, err := s.teams.Get(c.Request.Context(), c.Param("team"))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, apiv1.FromTeam(t, role)}, nil
}

// teamAdmin checks that the caller manages the team in the path.
func (s *teamHandlers) teamAdmin(c *gin.Context) error {
	team := c.Param("team")
	role, err := s.roleIn(c, team)
	if err != nil {
		return err
	}
	c.Set(ctxSubjectOwner, team) // for the audit log
	if role != teams.RoleAdmin {
		return fmt.Errorf("managing team %s is its admins': %w", team, desktop.ErrForbidden)
	}
	return nil
}

type putMemberRequest struct {
	Role string `json:"role"`
}

func (s *teamHandlers) putMember(c *gin.Context) (reply, error) {
	if err := s.teamAdmin(c); err != nil {
		return reply{}, err
	}
	team, member := c.Param("team"), c.Param("member")
	var req putMemberRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if err := teams.ValidateMember(member); err != nil {
		return reply{}, err
	}
	role, err := teams.ParseRole("role", req.Role)
	if err != nil {
		return reply{}, err
	}
	if member == team {
		return reply{}, &desktop.ValidationError{Field: "member", Message: "a team is not a member of itself"}
	}
	was, err := s.teams.SetMember(c.Request.Context(), team, member, role, caller(c).Owner)
	if err != nil {
		return reply{}, err
	}
	if was != "" && !role.AtLeast(was) {
		// Lowered: their team tokens that reach further go.
		s.revokeTeamTokens(c, team, func(t *desktop.Token) bool {
			return t.Member == member && !role.AtLeast(teams.Role(t.Role))
		})
	}
	t, err := s.teams.Get(c.Request.Context(), team)
	if err != nil {
		return reply{}, err
	}
	for _, m := range t.Members {
		if m.Member == member {
			s.log.Info("team member set", "team", team, "member", member, "role", role, "was", was, "by", actor(c))
			return reply{http.StatusOK, apiv1.FromTeamMember(m)}, nil
		}
	}
	return reply{}, fmt.Errorf("member %s of team %s: %w", member, team, desktop.ErrNotFound)
}

func (s *teamHandlers) deleteMember(c *gin.Context) (reply, error) {
	team, member := c.Param("team"), c.Param("member")
	me := caller(c)
	leaving := member == me.Member || me.Role == "" && member == me.Owner
	if _, err := s.roleIn(c, team); err != nil {
		return reply{}, err
	}
	if !leaving {
		if err := s.teamAdmin(c); err != nil {
			return reply{}, err
		}
	}
	c.Set(ctxSubjectOwner, team)
	if _, err := s.teams.RemoveMember(c.Request.Context(), team, member); err != nil {
		return reply{}, err
	}
	s.revokeTeamTokens(c, team, func(t *desktop.Token) bool { return t.Member == member })
	s.log.Info("team member removed", "team", team, "member", member, "by", actor(c))
	return reply{http.StatusNoContent, nil}, nil
}

func (s *teamHandlers) deleteTeam(c *gin.Context) (reply, error) {
	if err := s.teamAdmin(c); err != nil {
		return reply{}, err
	}
	team := c.Param("team")
	if err := s.teams.Delete(c.Request.Context(), team); err != nil {
		return reply{}, err
	}
	s.revokeTeamTokens(c, team, func(*desktop.Token) bool { return true })
	s.log.Info("team deleted", "team", team, "by", actor(c))
	return reply{http.StatusNoContent, nil}, nil
}

// revokeTeamTokens revokes the team's tokens that match (with what they
// minted and made) and ends their live consoles. Failures are logged: the
// membership has changed already.
func (s *teamHandlers) revokeTeamTokens(c *gin.Context, team string, match func(*desktop.Token) bool) {
	ctx := context.WithoutCancel(c.Request.Context())
	toks, err := s.tokens.List(ctx, team)
	if err != nil {
		s.log.Error("team tokens not revoked", "team", team, "err", err)
		return
	}
	var ended []string
	for _, t := range toks {
		if t.RevokedAt != nil || !match(t) {
			continue
		}
		ids, err := s.tokens.Revoke(ctx, t.ID)
		if err != nil && !errors.Is(err, desktop.ErrNotFound) { // not found: gone with its parent
			s.log.Error("team token not revoked", "team", team, "token", t.ID, "err", err)
			continue
		}
		ended = append(ended, ids...)
	}
	if len(ended) > 0 {
		s.consoles.EndMadeBy(ended)
		s.log.Info("team tokens revoked", "team", team, "revoked", len(ended), "by", actor(c))
	}
}
