package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/teams"
	"github.com/gin-gonic/gin"
)

// Tokens issues and checks API tokens.
type Tokens interface {
	Authenticate(ctx context.Context, secret string) (*desktop.Token, error)
	Create(ctx context.Context, req auth.CreateRequest) (string, *desktop.Token, error)
	List(ctx context.Context, owner string) ([]*desktop.Token, error)
	// ListTeamTokensOf lists the team tokens acting for a person.
	ListTeamTokensOf(ctx context.Context, member string) ([]*desktop.Token, error)
	// Revoke revokes a token and the tokens it minted, and says how many.
	Revoke(ctx context.Context, id string) ([]string, error)
	// Usable returns a token by id if it may still authenticate.
	Usable(ctx context.Context, id string) (*desktop.Token, error)
}

// tokenHandlers mint, list and revoke API tokens.
type tokenHandlers struct {
	*core
	// consoles end the live consoles of revoked tokens.
	consoles Consoles
}

type createTokenRequest struct {
	Owner      string `json:"owner"`
	Name       string `json:"name"`
	Scope      string `json:"scope"`
	TTLSeconds int64  `json:"ttl_seconds"`
	// DesktopID and ComputerOnly make a "desktop" token for one desktop.
	DesktopID    string `json:"desktop_id"`
	ComputerOnly bool   `json:"computer_only"`
	// Role makes a team token (owner = a team): docs/teams.md.
	Role string `json:"role"`
}

// maxTokenTTL is ten years in seconds.
const maxTokenTTL = 10 * 365 * 24 * 3600

// createToken mints a token for the caller's owner (any owner for an
// admin) that reaches no further and lives no longer than the caller's own
// (auth checks that, and records the caller as the new token's parent so
// revoking the caller revokes it too).
func (s *tokenHandlers) createToken(c *gin.Context) (reply, error) {
	var req createTokenRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if req.TTLSeconds < 0 || req.TTLSeconds > maxTokenTTL {
		// Bounded so seconds never overflow a time.Duration.
		return reply{}, &desktop.ValidationError{Field: "ttl_seconds", Message: fmt.Sprintf("must be 0 (no expiry) to %d seconds", maxTokenTTL)}
	}
	me := caller(c)
	if me.Scope == desktop.ScopeDesktop && req.DesktopID != me.DesktopID {
		// Refused before looking the desktop up, so whether another desktop
		// exists does not leak to it.
		return reply{}, fmt.Errorf("a desktop token may only make tokens for its own desktop %s: %w", me.DesktopID, desktop.ErrForbidden)
	}
	if req.Scope == "" {
		req.Scope = desktop.ScopeOwner
		if req.DesktopID != "" {
			req.Scope = desktop.ScopeDesktop
		}
	}
	if req.Scope == desktop.ScopeDesktop {
		// A desktop token belongs to the desktop's owner; its owner (or an
		// admin) hands it to the agent driving that desktop.
		d, err := s.lifecycle.Get(c.Request.Context(), req.DesktopID)
		if err == nil && (d.DeletedAt != nil || !isAdmin(c) && d.Owner != me.Owner && !s.inTeam(c, d.Owner)) {
			err = desktop.ErrNotFound
		}
		if err != nil {
			return reply{}, &desktop.ValidationError{Field: "desktop_id", Message: fmt.Sprintf("no desktop %q", req.DesktopID)}
		}
		if req.Owner != "" && req.Owner != d.Owner {
			return reply{}, &desktop.ValidationError{Field: "owner", Message: fmt.Sprintf("a desktop token belongs to its desktop's owner %q", d.Owner)}
		}
		req.Owner = d.Owner
	}
	if req.Owner == "" {
		req.Owner = me.Owner
	}
	role, member, err := s.teamGrant(c, req.Owner, req.Role, req.Scope)
	if err != nil {
		return reply{}, err
	}
	secret, tok, err := s.tokens.Create(c.Request.Context(), auth.CreateRequest{Owner: req.Owner, Name: req.Name, Scope: req.Scope,
		TTL: time.Duration(req.TTLSeconds) * time.Second, DesktopID: req.DesktopID, ComputerOnly: req.ComputerOnly, Parent: me,
		Role: role, Member: member})
	if err != nil {
		return reply{}, err
	}
	created(c, "token", tok.ID)
	return reply{http.StatusCreated, gin.H{"token": secret, "info": tok}}, nil
}

func (s *tokenHandlers) listTokens(c *gin.Context) (reply, error) {
	toks, err := s.visibleTokens(c, ownerFilter(c))
	if err != nil {
		return reply{}, err
	}
	if toks == nil {
		toks = []*desktop.Token{}
	}
	return reply{http.StatusOK, gin.H{"tokens": toks}}, nil
}

func (s *tokenHandlers) revokeToken(c *gin.Context) (reply, error) {
	id := c.Param("id")
	if !isAdmin(c) {
		toks, err := s.visibleTokens(c, caller(c).Owner)
		if err != nil {
			return reply{}, err
		}
		mine := false
		for _, t := range toks {
			// A team token below admin revokes its own person's only.
			mine = mine || t.ID == id && (caller(c).Role == "" || caller(c).Role == string(teams.RoleAdmin) || t.Member == caller(c).Member)
		}
		if !mine {
			return reply{}, fmt.Errorf("token %s: %w", id, desktop.ErrNotFound)
		}
	}
	ids, err := s.tokens.Revoke(c.Request.Context(), id)
	if err != nil {
		return reply{}, err
	}
	// What they made went with them in the store; live consoles end now.
	s.consoles.EndMadeBy(ids)
	s.log.Info("token revoked", "token", id, "revoked", len(ids), "by", actor(c))
	return reply{http.StatusNoContent, nil}, nil
}

// visibleTokens are owner's tokens and, for a person's own token (not a
// team's, not an admin's listing of all), the team tokens that act for
// them: they made them, so they see and revoke them.
func (s *tokenHandlers) visibleTokens(c *gin.Context, owner string) ([]*desktop.Token, error) {
	toks, err := s.tokens.List(c.Request.Context(), owner)
	if err != nil || owner == "" || caller(c).Role != "" {
		return toks, err
	}
	theirs, err := s.tokens.ListTeamTokensOf(c.Request.Context(), owner)
	return append(toks, theirs...), err
}
