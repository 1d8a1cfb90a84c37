package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/signin"
)

// startSignIn checks the single sign-on settings (BUREAU_OIDC_*,
// docs/sign-in.md) and returns the sign-in service; with an issuer set it
// reads the provider's discovery document in the background, retrying
// while the provider is down. key is bureau's secrets key. Without an
// issuer the service still checks sign-ins' CSRF tokens.
func startSignIn(ctx context.Context, cfg *config.Config, key []byte, tokens *auth.Service, log *slog.Logger) (*signin.Service, error) {
	o := cfg.OIDC
	hours, err := o.Check()
	if err != nil {
		return nil, err
	}
	sc := signin.Config{Issuer: o.Issuer, ClientID: strings.TrimSpace(o.ClientID), OwnerClaim: strings.TrimSpace(o.OwnerClaim),
		GroupsClaim: strings.TrimSpace(o.GroupsClaim), AdminGroups: config.Groups(o.AdminGroups), AllowedGroups: config.Groups(o.AllowedGroups),
		Scopes: o.ScopeList(), Session: time.Duration(hours) * time.Hour}
	if o.On() && o.ClientSecretFile != "" {
		b, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("BUREAU_OIDC_CLIENT_SECRET_FILE: %w", err)
		}
		if sc.ClientSecret = strings.TrimSpace(string(b)); sc.ClientSecret == "" {
			return nil, fmt.Errorf("BUREAU_OIDC_CLIENT_SECRET_FILE %s is empty: it should hold the client secret", o.ClientSecretFile)
		}
	}
	log = log.With("part", "sign-in")
	svc, err := signin.New(sc, key, tokens, log)
	if err != nil {
		return nil, err
	}
	if svc.Enabled() {
		log.Info("single sign-on on", "issuer", o.Issuer, "client_id", sc.ClientID, "session_hours", hours)
		go svc.Discover(ctx)
	}
	return svc, nil
}
