package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

type createTokenRequest struct {
	Owner      string `json:"owner"`
	Name       string `json:"name"`
	Scope      string `json:"scope"`
	TTLSeconds int64  `json:"ttl_seconds"`
	// DesktopID and ComputerOnly make a "desktop" token for one desktop.
	DesktopID    string `json:"desktop_id"`
	ComputerOnly bool   `json:"computer_only"`
}

// createToken lets an admin issue tokens for any owner, and an owner issue
// more owner tokens for itself.
func (s *server) createToken(c *gin.Context) (reply, error) {
	var req createTokenRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if req.Owner == "" {
		req.Owner = caller(c).Owner
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
		d, err := s.Desktops.Get(c.Request.Context(), req.DesktopID)
		if err == nil && (d.DeletedAt != nil || !isAdmin(c) && d.Owner != caller(c).Owner) {
			err = desktop.ErrNotFound
		}
		if err != nil {
			return reply{}, &desktop.ValidationError{Field: "desktop_id", Message: fmt.Sprintf("no desktop %q", req.DesktopID)}
		}
		req.Owner = d.Owner
	} else if !isAdmin(c) && (req.Owner != caller(c).Owner || req.Scope != desktop.ScopeOwner) {
		return reply{}, fmt.Errorf("owner tokens may only create owner tokens for themselves: %w", desktop.ErrForbidden)
	}
	secret, tok, err := s.Tokens.Create(c.Request.Context(), auth.CreateRequest{Owner: req.Owner, Name: req.Name, Scope: req.Scope,
		TTL: time.Duration(req.TTLSeconds) * time.Second, DesktopID: req.DesktopID, ComputerOnly: req.ComputerOnly, Parent: caller(c)})
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, gin.H{"token": secret, "info": tok}}, nil
}

func (s *server) listTokens(c *gin.Context) (reply, error) {
	toks, err := s.Tokens.List(c.Request.Context(), ownerFilter(c))
	if err != nil {
		return reply{}, err
	}
	if toks == nil {
		toks = []*desktop.Token{}
	}
	return reply{http.StatusOK, gin.H{"tokens": toks}}, nil
}

func (s *server) revokeToken(c *gin.Context) (reply, error) {
	id := c.Param("id")
	if !isAdmin(c) {
		toks, err := s.Tokens.List(c.Request.Context(), caller(c).Owner)
		if err != nil {
			return reply{}, err
		}
		mine := false
		for _, t := range toks {
			mine = mine || t.ID == id
		}
		if !mine {
			return reply{}, fmt.Errorf("token %s: %w", id, desktop.ErrNotFound)
		}
	}
	n, err := s.Tokens.Revoke(c.Request.Context(), id)
	if err != nil {
		return reply{}, err
	}
	s.Log.Info("token revoked", "token", id, "revoked", n, "by", actor(c))
	return reply{http.StatusNoContent, nil}, nil
}
