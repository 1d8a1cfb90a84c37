package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/signin"
	"github.com/bureau/bureau/internal/teams"
	"github.com/gin-gonic/gin"
)

type switchTeamRequest struct {
	// Team to act for ("": the person themselves).
	Team string `json:"team"`
}

// switchTeam is POST /auth/team (docs/teams.md): the signed-in person acts
// for one of their teams, at their role in it, or ("") for themselves
// again. The session is replaced by a new one (same expiry) and the old
// one revoked; the reply is GET /api/v1/session's for the new one, with
// its CSRF token.
func (s *signinHandlers) switchTeam(c *gin.Context) (reply, error) {
	tok, err := s.signedIn(c)
	if err != nil {
		return reply{}, err
	}
	var req switchTeamRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	who, scope := tok.Owner, tok.Scope
	name := strings.TrimPrefix(tok.Name, signin.SessionNamePrefix)
	if tok.Role != "" {
		who, scope = tok.Member, tok.MemberScope
		if scope == "" {
			scope = desktop.ScopeOwner
		}
		name = strings.TrimSuffix(name, " ("+tok.Owner+")")
	}
	cr := auth.CreateRequest{Owner: who, Scope: scope, Name: signin.SessionNamePrefix + name, Session: true}
	if req.Team != "" && req.Team != who {
		role, err := s.switchRole(c, req.Team, who, scope)
		if err != nil {
			return reply{}, err
		}
		cr = auth.CreateRequest{Owner: req.Team, Scope: desktop.ScopeOwner, Role: string(role), Member: who, MemberScope: scope,
			Name: sessionName(name, req.Team), Session: true}
	}
	maxAge := 12 * time.Hour
	if tok.ExpiresAt != nil {
		if cr.TTL = time.Until(*tok.ExpiresAt); cr.TTL < time.Second {
			return reply{}, fmt.Errorf("this sign-in has expired: %w", desktop.ErrUnauthorized)
		}
		maxAge = cr.TTL
	}
	newSecret, newTok, err := s.tokens.Create(c.Request.Context(), cr)
	if err != nil {
		return reply{}, err
	}
	ids, err := s.tokens.Revoke(c.Request.Context(), tok.ID)
	if err != nil && !errors.Is(err, desktop.ErrNotFound) {
		return reply{}, err
	}
	s.consoles.EndMadeBy(ids)
	http.SetCookie(c.Writer, signin.NewSessionCookie(newSecret, maxAge, s.secure(c)))
	s.log.Info("signed in for", "person", who, "owner", newTok.Owner, "role", newTok.Role, "token", newTok.ID, "was", tok.ID)
	info, err := s.sessionOf(c, newTok, newSecret)
	if err != nil {
		return reply{}, err
	}
	c.Header("Cache-Control", "no-store")
	return reply{http.StatusOK, info}, nil
}

// switchRole is the person's role in team: a bureau admin who is not in
// it acts as its admin; anyone else not in it is told it is not found.
func (s *signinHandlers) switchRole(c *gin.Context, team, who, scope string) (teams.Role, error) {
	if s.teams == nil {
		return "", fmt.Errorf("team %s: %w", team, desktop.ErrNotFound)
	}
	role, err := s.teams.RoleOf(c.Request.Context(), team, who)
	if errors.Is(err, desktop.ErrNotFound) && scope == desktop.ScopeAdmin {
		if _, err := s.teams.Get(c.Request.Context(), team); err != nil {
			return "", err
		}
		return teams.RoleAdmin, nil
	}
	return role, err
}

// sessionName is a team sign-in's name, "signed in: <person> (<team>)",
// the person's name shortened to fit in a token's 128 characters.
func sessionName(name, team string) string {
	suffix := " (" + team + ")"
	for utf8.RuneCountInString(signin.SessionNamePrefix+name+suffix) > 128 && name != "" {
		_, n := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-n]
	}
	return signin.SessionNamePrefix + name + suffix
}
