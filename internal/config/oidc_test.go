package config

import (
	"strings"
	"testing"
)

func TestOIDCCheck(t *testing.T) {
	ok := OIDC{Issuer: "https://accounts.example.com", ClientID: "bureau", OwnerClaim: "email", GroupsClaim: "groups", SessionHours: "12"}
	if h, err := ok.Check(); err != nil || h != 12 {
		t.Fatalf("good settings: %d, %v", h, err)
	}
	if h, err := (OIDC{SessionHours: "nonsense"}).Check(); err != nil || h != 0 {
		t.Fatalf("off: %d, %v", h, err)
	}
	for _, c := range []struct {
		change func(*OIDC)
		want   string
	}{
		{func(o *OIDC) { o.Issuer = "accounts.example.com" }, "BUREAU_OIDC_ISSUER"},
		{func(o *OIDC) { o.ClientID = "" }, "BUREAU_OIDC_CLIENT_ID"},
		{func(o *OIDC) { o.OwnerClaim = " " }, "BUREAU_OIDC_OWNER_CLAIM"},
		{func(o *OIDC) { o.SessionHours = "0" }, "BUREAU_OIDC_SESSION_HOURS"},
		{func(o *OIDC) { o.SessionHours = "721" }, "BUREAU_OIDC_SESSION_HOURS"},
		{func(o *OIDC) { o.SessionHours = "12h" }, "BUREAU_OIDC_SESSION_HOURS"},
	} {
		o := ok
		c.change(&o)
		if _, err := o.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want it to name %s", o, err, c.want)
		}
	}
	if got := (OIDC{Scopes: "openid, email  profile,,groups"}).ScopeList(); strings.Join(got, "|") != "openid|email|profile|groups" {
		t.Errorf("scopes: %q", got)
	}
	if got := Groups(" Domain Admins,,ops "); strings.Join(got, "|") != "Domain Admins|ops" {
		t.Errorf("groups: %q", got)
	}
}
