package signin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Begin starts a sign-in: the provider's authorization URL to send the
// browser to (code flow, PKCE S256, fresh state and nonce) and the sealed
// state cookie value that carries them to the callback at redirectURI.
// returnTo is where the person lands after (SafeReturnTo'd).
func (s *Service) Begin(ctx context.Context, redirectURI, returnTo string) (authURL, cookie string, err error) {
	_, oc, err := s.ready()
	if err != nil {
		return "", "", err
	}
	p := &pending{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(),
		ReturnTo: SafeReturnTo(returnTo), Redirect: redirectURI, Expires: s.now().Add(stateLifetime)}
	cookie, err = s.seal(p)
	if err != nil {
		return "", "", err
	}
	oc.RedirectURL = redirectURI
	return oc.AuthCodeURL(p.State, oidc.Nonce(p.Nonce), oauth2.S256ChallengeOption(p.Verifier)), cookie, nil
}

// Result is a finished sign-in: the session token and its secret (the
// bureau_session cookie), and where the person goes now.
type Result struct {
	Secret   string
	Token    *desktop.Token
	ReturnTo string
}

// Finish completes a sign-in at the callback: query is the callback's
// query string and stateCookie the bureau_oidc cookie ("" when none). A
// refusal is a *Refusal; ErrNotReady while the provider is unknown.
func (s *Service) Finish(ctx context.Context, query url.Values, stateCookie string) (*Result, error) {
	p, err := s.open(stateCookie)
	if stateCookie == "" {
		err = errors.New("no state cookie")
	}
	if err != nil || subtle.ConstantTimeCompare([]byte(p.State), []byte(query.Get("state"))) != 1 {
		return nil, refuse(http.StatusBadRequest, err, "the sign-in was not started here or has expired (state mismatch): sign in again")
	}
	if e := query.Get("error"); e != "" {
		msg := "the sign-in provider refused the sign-in: " + e
		if d := query.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return nil, refuse(http.StatusUnauthorized, nil, "%s", msg)
	}
	provider, oc, err := s.ready()
	if err != nil {
		return nil, err
	}
	code := query.Get("code")
	if code == "" {
		return nil, refuse(http.StatusBadRequest, nil, "the sign-in provider sent no code back: sign in again")
	}
	oc.RedirectURL = p.Redirect
	ctx = s.client(ctx)
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(p.Verifier))
	if err != nil {
		if re := (*oauth2.RetrieveError)(nil); errors.As(err, &re) {
			return nil, refuse(http.StatusUnauthorized, err, "the sign-in provider refused the code (expired, already used or a wrong verifier): sign in again")
		}
		return nil, refuse(http.StatusServiceUnavailable, err, "the sign-in provider is not reachable: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, refuse(http.StatusUnauthorized, nil, "the sign-in provider sent no ID token")
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: s.cfg.ClientID, Now: s.now}).Verify(ctx, raw)
	if err != nil {
		return nil, refuse(http.StatusUnauthorized, err, "the sign-in provider's ID token is not valid: %v", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.Nonce)) != 1 {
		return nil, refuse(http.StatusUnauthorized, nil, "the ID token's nonce is not the one this sign-in sent (a replayed token?): sign in again")
	}
	c := claims{}
	if err := idt.Claims(&c); err != nil {
		return nil, refuse(http.StatusUnauthorized, err, "the ID token's claims do not read: %v", err)
	}
	s.addUserInfo(ctx, provider, tok, idt.Subject, c)
	who, err := s.person(c)
	if err != nil {
		return nil, err
	}
	scope := desktop.ScopeOwner
	if who.Admin {
		scope = desktop.ScopeAdmin
	}
	secret, t, err := s.mint.Create(ctx, auth.CreateRequest{Owner: who.Owner, Name: who.Name, Scope: scope, TTL: s.cfg.Session, Session: true})
	if err != nil {
		return nil, fmt.Errorf("mint the session of %s: %w", who.Owner, err)
	}
	s.log.Info("signed in", "owner", t.Owner, "token", t.ID, "admin", who.Admin, "subject", idt.Subject)
	return &Result{Secret: secret, Token: t, ReturnTo: p.ReturnTo}, nil
}

// addUserInfo adds the userinfo endpoint's claims the ID token lacks (when
// the provider has one, and it speaks of the same subject).
func (s *Service) addUserInfo(ctx context.Context, provider *oidc.Provider, tok *oauth2.Token, subject string, c claims) {
	if provider.UserInfoEndpoint() == "" {
		return
	}
	ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		s.log.Warn("sign-in: userinfo not read; using the ID token's claims alone", "err", err)
		return
	}
	if ui.Subject != subject {
		s.log.Warn("sign-in: userinfo is about another subject; ignored", "id_token_sub", subject, "userinfo_sub", ui.Subject)
		return
	}
	more := claims{}
	if err := ui.Claims(&more); err != nil {
		s.log.Warn("sign-in: userinfo claims do not read", "err", err)
		return
	}
	c.merge(more)
}

// SafeReturnTo is returnTo if it is a path on bureau (it starts with one
// "/", not "//" or "/\", and holds no control characters browsers would
// drop), else "/".
func SafeReturnTo(returnTo string) string {
	if !strings.HasPrefix(returnTo, "/") || strings.HasPrefix(returnTo, "//") || strings.HasPrefix(returnTo, "/\\") || len(returnTo) > 2048 {
		return "/"
	}
	for _, r := range returnTo {
		if r < 0x20 || r == 0x7f {
			return "/"
		}
	}
	return returnTo
}
