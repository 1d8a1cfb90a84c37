package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// OIDC are the single sign-on settings (docs/sign-in.md), as read.
type OIDC struct {
	Issuer           string // BUREAU_OIDC_ISSUER: "" turns single sign-on off
	ClientID         string // BUREAU_OIDC_CLIENT_ID
	ClientSecretFile string // BUREAU_OIDC_CLIENT_SECRET_FILE: "" for a public client
	OwnerClaim       string // BUREAU_OIDC_OWNER_CLAIM, default email
	GroupsClaim      string // BUREAU_OIDC_GROUPS_CLAIM, default groups
	AdminGroups      string // BUREAU_OIDC_ADMIN_GROUPS, comma-separated
	AllowedGroups    string // BUREAU_OIDC_ALLOWED_GROUPS, comma-separated ("": anyone)
	Scopes           string // BUREAU_OIDC_SCOPES, space- or comma-separated
	SessionHours     string // BUREAU_OIDC_SESSION_HOURS, 1-720, default 12
}

// On says whether single sign-on is configured.
func (o OIDC) On() bool { return o.Issuer != "" }

// Check says what is wrong with the settings, naming the setting, and
// returns how many hours a sign-in lasts. Off, nothing is checked.
func (o OIDC) Check() (sessionHours int, err error) {
	if !o.On() {
		return 0, nil
	}
	u, err := url.Parse(o.Issuer)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return 0, fmt.Errorf("BUREAU_OIDC_ISSUER=%q: want the provider's issuer URL, e.g. https://accounts.example.com", o.Issuer)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return 0, fmt.Errorf("BUREAU_OIDC_ISSUER=%q: an issuer URL has no query, fragment or user", o.Issuer)
	case strings.TrimSpace(o.ClientID) == "":
		return 0, fmt.Errorf("BUREAU_OIDC_CLIENT_ID is required with BUREAU_OIDC_ISSUER: the client bureau is registered as at the provider")
	case strings.TrimSpace(o.OwnerClaim) == "":
		return 0, fmt.Errorf("BUREAU_OIDC_OWNER_CLAIM is empty: name the claim that becomes the owner (default email)")
	case strings.TrimSpace(o.GroupsClaim) == "":
		return 0, fmt.Errorf("BUREAU_OIDC_GROUPS_CLAIM is empty: name the claim that lists groups (default groups)")
	}
	h, err := strconv.Atoi(strings.TrimSpace(o.SessionHours))
	if err != nil || h < 1 || h > 720 {
		return 0, fmt.Errorf("BUREAU_OIDC_SESSION_HOURS=%q: want a whole number of hours from 1 to 720", o.SessionHours)
	}
	return h, nil
}

// Groups splits a comma-separated list of groups (a group's name may
// hold spaces), dropping empty items.
func Groups(s string) []string {
	var out []string
	for _, g := range strings.Split(s, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// ScopeList splits the scopes asked for (space- or comma-separated).
func (o OIDC) ScopeList() []string { return strings.Fields(strings.ReplaceAll(o.Scopes, ",", " ")) }
