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
	}
	if !isAdmin(c) && (req.Owner != caller(c).Owner || req.Scope != desktop.ScopeOwner) {
		return reply{}, fmt.Errorf("owner tokens may only create owner tokens for themselves: %w", desktop.ErrForbidden)
	}
	secret, tok, err := s.Tokens.Create(c, auth.CreateRequest{Owner: req.Owner, Name: req.Name, Scope: req.Scope,
		TTL: time.Duration(req.TTLSeconds) * time.Second})
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, gin.H{"token": secret, "info": tok}}, nil
}

func (s *server) listTokens(c *gin.Context) (reply, error) {
	toks, err := s.Tokens.List(c, ownerFilter(c))
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
		toks, err := s.Tokens.List(c, caller(c).Owner)
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
	if err := s.Tokens.Revoke(c, id); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}
