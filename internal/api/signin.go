package api

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/signin"
	"github.com/gin-gonic/gin"
)

// signinHandlers are single sign-on's browser routes (docs/sign-in.md):
// outside /api, as the browser navigates to them.
type signinHandlers struct {
	*core
	// consoles end the live consoles of a session signed out.
	consoles Consoles
}

// callbackPath is the redirect URI's path.
const callbackPath = "/auth/callback"

// authRoutes registers /auth/*: the sign-in page's configuration, the
// redirect to the provider and back, and signing out.
func (s *signinHandlers) authRoutes(r *gin.Engine) {
	r.GET("/auth/config", s.config)
	r.GET("/auth/login", s.login)
	r.GET(callbackPath, s.callback)
	r.POST("/auth/logout", s.audited, s.handle(s.logout))
	r.POST("/auth/team", s.audited, s.handle(s.switchTeam))
}

func (s *signinHandlers) enabled() bool { return s.signin != nil && s.signin.Enabled() }

const notConfigured = "single sign-on is not configured on this bureau (BUREAU_OIDC_ISSUER): sign in with an API token"

// config tells the sign-in page whether to offer single sign-on.
func (s *signinHandlers) config(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	if !s.enabled() {
		c.JSON(http.StatusOK, gin.H{"oidc": false})
		return
	}
	c.JSON(http.StatusOK, gin.H{"oidc": true, "provider": s.signin.Provider()})
}

// login sends the browser to the provider, with the state cookie.
func (s *signinHandlers) login(c *gin.Context) {
	if !s.enabled() {
		s.page(c, http.StatusNotFound, notConfigured)
		return
	}
	to, cookie, err := s.signin.Begin(c.Request.Context(), s.origin.base(c)+callbackPath, c.Query("return_to"))
	if err != nil {
		s.refused(c, err)
		return
	}
	http.SetCookie(c.Writer, signin.NewStateCookie(cookie, s.secure(c)))
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, to)
}

// callback finishes the sign-in: the session cookie, and back to where
// the person was going.
func (s *signinHandlers) callback(c *gin.Context) {
	if !s.enabled() {
		s.page(c, http.StatusNotFound, notConfigured)
		return
	}
	state, _ := c.Cookie(signin.StateCookie)
	// A state is used once, whatever comes of it.
	http.SetCookie(c.Writer, signin.Cleared(signin.NewStateCookie("", s.secure(c))))
	res, err := s.signin.Finish(c.Request.Context(), c.Request.URL.Query(), state)
	if err != nil {
		s.refused(c, err)
		return
	}
	maxAge := 12 * time.Hour
	if res.Token.ExpiresAt != nil {
		maxAge = res.Token.ExpiresAt.Sub(res.Token.CreatedAt)
	}
	http.SetCookie(c.Writer, signin.NewSessionCookie(res.Secret, maxAge, s.secure(c)))
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, res.ReturnTo)
}

// signedIn is the caller's sign-in, from its session cookie (checked, with
// its CSRF token, as cookieSession does), made the caller for the audit
// log. No cookie is 401, even where single sign-on is not configured.
func (s *signinHandlers) signedIn(c *gin.Context) (*desktop.Token, error) {
	secret, err := c.Cookie(signin.SessionCookie)
	if err != nil || secret == "" {
		return nil, fmt.Errorf("not signed in (no %s cookie): %w", signin.SessionCookie, desktop.ErrUnauthorized)
	}
	if s.signin == nil {
		return nil, fmt.Errorf("%s: %w", notConfigured, desktop.ErrNotFound)
	}
	tok, err := s.cookieSession(c, secret)
	if err != nil {
		return nil, err
	}
	c.Set(ctxToken, tok)
	c.Set(ctxOwner, tok.Owner)
	return tok, nil
}

// logout revokes the caller's session (cookie and CSRF token) and clears
// the cookie.
func (s *signinHandlers) logout(c *gin.Context) (reply, error) {
	if !s.enabled() {
		return reply{}, fmt.Errorf("%s: %w", notConfigured, desktop.ErrNotFound)
	}
	tok, err := s.signedIn(c)
	if err != nil {
		return reply{}, err
	}
	ids, err := s.tokens.Revoke(c.Request.Context(), tok.ID)
	if err != nil {
		return reply{}, err
	}
	s.consoles.EndMadeBy(ids)
	http.SetCookie(c.Writer, signin.Cleared(signin.NewSessionCookie("", 0, s.secure(c))))
	s.log.Info("signed out", "owner", tok.Owner, "token", tok.ID)
	return reply{http.StatusNoContent, nil}, nil
}

// secure says whether cookies are marked Secure: bureau is reached by
// HTTPS (its public URL's scheme, else the request's).
func (s *signinHandlers) secure(c *gin.Context) bool { return s.origin.scheme(c) == "https" }

// refused shows why a sign-in did not happen.
func (s *signinHandlers) refused(c *gin.Context, err error) {
	var r *signin.Refusal
	switch {
	case errors.As(err, &r):
		s.log.Info("sign-in refused", "status", r.Status, "why", r.Message, "err", r.Err)
		s.page(c, r.Status, r.Message)
	case errors.Is(err, signin.ErrNotReady):
		s.page(c, http.StatusServiceUnavailable, "the sign-in provider is not reachable yet: try again in a minute")
	default:
		s.log.Error("sign-in failed", "err", err)
		s.page(c, http.StatusInternalServerError, "the sign-in failed on bureau's side; see the server log")
	}
}

// page is a plain page saying why, with a link to sign in again.
func (s *signinHandlers) page(c *gin.Context, status int, msg string) {
	c.Header("Cache-Control", "no-store")
	c.Header("X-Frame-Options", "DENY")
	c.Header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	body := `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bureau: sign-in</title></head>` +
		`<body style="font-family:sans-serif;max-width:40em;margin:4em auto"><h1>Not signed in</h1><p>` + html.EscapeString(msg) +
		`</p><p><a href="/auth/login">Sign in again</a> · <a href="/">bureau</a></p></body></html>`
	c.Data(status, "text/html; charset=utf-8", []byte(body))
	c.Abort()
}
