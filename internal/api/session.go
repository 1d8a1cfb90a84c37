package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/signin"
	"github.com/gin-gonic/gin"
)

// SignIn is single sign-on (internal/signin, docs/sign-in.md). Nil: no
// sign-in cookie is taken at all; when not Enabled, /auth/config says so
// and the other /auth routes answer 404.
type SignIn interface {
	Enabled() bool
	// Provider names the provider on the sign-in page.
	Provider() string
	// Begin returns the provider's authorization URL and the sealed state
	// cookie's value; Finish checks the callback and mints the session.
	Begin(ctx context.Context, redirectURI, returnTo string) (authURL, cookie string, err error)
	Finish(ctx context.Context, query url.Values, stateCookie string) (*signin.Result, error)
	// CSRFToken is a session's CSRF token; CheckCSRF compares one in
	// constant time.
	CSRFToken(sessionSecret string) string
	CheckCSRF(sessionSecret, got string) bool
}

// ctxSessionSecret is the secret of a sign-in that authenticated the
// request (for its CSRF token and signing out).
const ctxSessionSecret = "bureau.session_secret"

// csrfRefused is a state-changing call authenticated by the session
// cookie without the CSRF token, or from another site: 403 "csrf".
type csrfRefused struct{ msg string }

func (e *csrfRefused) Error() string { return e.msg }

const csrfMessage = "a signed-in call that changes something needs the X-CSRF-Token header (GET /api/v1/session gives it)"

// sessionCookie is the bureau_session cookie's secret on an /api/ call
// ("" when there is none, or no sign-in is wired).
func (s *core) sessionCookie(c *gin.Context) string {
	if s.signin == nil || !strings.HasPrefix(c.Request.URL.Path, "/api/") {
		return ""
	}
	v, err := c.Cookie(signin.SessionCookie)
	if err != nil {
		return ""
	}
	return v
}

// cookieSession authenticates a sign-in's cookie: it must hold a session
// token (an API token pasted into the cookie is refused), and a call that
// changes something must carry the session's CSRF token and not come from
// another site.
func (s *core) cookieSession(c *gin.Context, secret string) (*desktop.Token, error) {
	tok, err := s.tokens.Authenticate(c.Request.Context(), secret)
	if err != nil {
		return nil, err
	}
	if !tok.Session {
		return nil, fmt.Errorf("the %s cookie holds no sign-in (API tokens go in Authorization: Bearer): %w", signin.SessionCookie, desktop.ErrUnauthorized)
	}
	if changes(c.Request.Method) {
		switch site := c.GetHeader("Sec-Fetch-Site"); site {
		case "", "same-origin", "none":
		default:
			return nil, &csrfRefused{fmt.Sprintf("a signed-in call that changes something must come from bureau's own pages, not another site (Sec-Fetch-Site: %s)", site)}
		}
		if !s.signin.CheckCSRF(secret, c.GetHeader("X-CSRF-Token")) {
			return nil, &csrfRefused{csrfMessage}
		}
	}
	c.Set(ctxSessionSecret, secret)
	return tok, nil
}

// sessionInfo is GET /api/v1/session: who is calling.
type sessionInfo struct {
	Owner     string     `json:"owner"`
	Name      string     `json:"name"`
	Admin     bool       `json:"admin"`
	Via       string     `json:"via"` // "sign-in" or "token"
	TokenID   string     `json:"token_id"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CSRFToken string     `json:"csrf_token,omitempty"`
	// Role and Member: a team token's role and whom it acts for ("" for
	// others); Teams the teams the person is in (docs/teams.md).
	Role   string        `json:"role"`
	Member string        `json:"member"`
	Teams  []sessionTeam `json:"teams"`
}

// sessionTeam is a team the calling person is in, with their role.
type sessionTeam struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// session says who is calling, and gives a sign-in its CSRF token.
func (s *core) session(c *gin.Context) (reply, error) {
	info, err := s.sessionOf(c, caller(c), c.GetString(ctxSessionSecret))
	if err != nil {
		return reply{}, err
	}
	c.Header("Cache-Control", "no-store")
	return reply{http.StatusOK, info}, nil
}

// sessionOf is who t is (secret: a sign-in's, for its CSRF token).
func (s *core) sessionOf(c *gin.Context, t *desktop.Token, secret string) (sessionInfo, error) {
	info := sessionInfo{Owner: t.Owner, Name: t.Name, Admin: t.Scope == desktop.ScopeAdmin, Via: "token", TokenID: t.ID, ExpiresAt: t.ExpiresAt,
		Role: t.Role, Member: t.Member, Teams: []sessionTeam{}}
	if t.Session {
		info.Via = "sign-in"
		if secret != "" && s.signin != nil {
			info.CSRFToken = s.signin.CSRFToken(secret)
		}
	}
	who := person(t)
	if t.Role != "" {
		who = t.Member
	}
	if s.teams != nil && who != "" {
		list, err := s.teams.List(c.Request.Context(), who)
		if err != nil {
			return info, err
		}
		for _, tm := range list {
			info.Teams = append(info.Teams, sessionTeam{Name: tm.Name, Role: string(tm.RoleOf(who))})
		}
	}
	return info, nil
}
