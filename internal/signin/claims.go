package signin

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
)

// Refusal is a sign-in refused: Status (400, 401, 403, 503) and a message
// for the person, shown on a plain page.
type Refusal struct {
	Status  int
	Message string
	Err     error // the cause, for the log (may be nil)
}

func (r *Refusal) Error() string { return r.Message }
func (r *Refusal) Unwrap() error { return r.Err }

func refuse(status int, err error, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Message: fmt.Sprintf(format, args...), Err: err}
}

// claims are the person's claims: the ID token's, and for those it lacks
// the userinfo endpoint's.
type claims map[string]any

// merge adds from's claims that c lacks.
func (c claims) merge(from claims) {
	for k, v := range from {
		if _, ok := c[k]; !ok {
			c[k] = v
		}
	}
}

func (c claims) str(name string) string {
	s, _ := c[name].(string)
	return s
}

// person is who signed in, as bureau sees them.
type person struct {
	Owner string
	Name  string // for the token's name: their name, else email, else owner
	Admin bool
}

// person reads the owner, name and groups from the claims and checks
// them against the configuration.
func (s *Service) person(c claims) (*person, error) {
	claim := s.cfg.OwnerClaim
	raw, ok := c[claim]
	if !ok || raw == nil {
		return nil, refuse(http.StatusForbidden, nil, "the provider gave no %q claim, which bureau uses as your owner name (BUREAU_OIDC_OWNER_CLAIM)", claim)
	}
	owner, ok := raw.(string)
	if !ok {
		return nil, refuse(http.StatusForbidden, nil, "the %q claim is not a string, so it cannot be your owner name (BUREAU_OIDC_OWNER_CLAIM)", claim)
	}
	if err := validOwner(owner); err != nil {
		return nil, refuse(http.StatusForbidden, err, "the %q claim is not a valid owner name: %v", claim, err)
	}
	if claim == "email" && falsy(c["email_verified"]) {
		return nil, refuse(http.StatusForbidden, nil, "the provider says the email %q is not verified (email_verified is false): verify it there, then sign in again", owner)
	}
	groups := groupList(c[s.cfg.GroupsClaim])
	p := &person{Owner: owner, Admin: intersects(groups, s.cfg.AdminGroups)}
	if len(s.cfg.AllowedGroups) > 0 && !p.Admin && !intersects(groups, s.cfg.AllowedGroups) {
		return nil, refuse(http.StatusForbidden, nil, "you are in none of the groups allowed to sign in to bureau (%s, from the %q claim; BUREAU_OIDC_ALLOWED_GROUPS)",
			strings.Join(s.cfg.AllowedGroups, ", "), s.cfg.GroupsClaim)
	}
	p.Name = tokenName(c.str("name"), c.str("email"), owner)
	return p, nil
}

// validOwner is what auth.Service.Create asks of an owner.
func validOwner(owner string) error {
	if owner == "" || len(owner) > 64 || strings.ContainsAny(owner, " \t\n/") {
		return &desktop.ValidationError{Field: "owner", Message: "must be 1-64 characters without spaces or '/'"}
	}
	return desktop.ValidateText("owner", owner, 64, false)
}

// tokenName is the session token's name: "signed in: " and the first of
// name, email and owner that makes a valid token name.
func tokenName(candidates ...string) string {
	for _, n := range candidates {
		n = strings.TrimSpace(n)
		for utf8.RuneCountInString(SessionNamePrefix+n) > 128 {
			r := []rune(n)
			n = string(r[:len(r)-1])
		}
		if n != "" && desktop.ValidateText("name", SessionNamePrefix+n, 128, false) == nil {
			return SessionNamePrefix + n
		}
	}
	return SessionNamePrefix + "?"
}

// SessionNamePrefix starts a session token's name; the rest is the person
// (the audit log shows it as such).
const SessionNamePrefix = "signed in: "

// falsy is an email_verified of false ("false" from providers that send
// it as a string).
func falsy(v any) bool {
	switch b := v.(type) {
	case bool:
		return !b
	case string:
		return strings.EqualFold(b, "false")
	}
	return false
}

// groupList reads a groups claim: a list of strings, or one string.
func groupList(v any) []string {
	switch g := v.(type) {
	case string:
		return []string{g}
	case []any:
		var out []string
		for _, e := range g {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func intersects(have, want []string) bool {
	for _, g := range have {
		if slices.Contains(want, g) {
			return true
		}
	}
	return false
}
