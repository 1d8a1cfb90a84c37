package auth

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
)

func newService(t *testing.T) (*Service, *store.Store) {
	st := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	return New(st), st
}

func TestTokensAreHashedAndChecked(t *testing.T) {
	s, st := newService(t)
	ctx := context.Background()
	secret, tok, err := s.Create(ctx, CreateRequest{Owner: "alice", Name: "ci", Scope: desktop.ScopeOwner})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "bureau_") || tok.Hash == secret || tok.Hash != Hash(secret) {
		t.Fatalf("secret %q stored as %q", secret, tok.Hash)
	}
	listed, _ := st.ListTokens(ctx, "alice")
	if len(listed) != 1 || strings.Contains(listed[0].Hash, secret) {
		t.Fatal("secret stored in clear")
	}
	got, err := s.Authenticate(ctx, secret)
	if err != nil || got.Owner != "alice" {
		t.Fatalf("authenticate: %+v %v", got, err)
	}
	for _, bad := range []string{"", "bureau_wrong", secret + "x"} {
		if _, err := s.Authenticate(ctx, bad); !errors.Is(err, desktop.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v", bad, err)
		}
	}
	if _, err := s.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Fatalf("revoked token accepted: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	secret, _, err := s.Create(ctx, CreateRequest{Owner: "bob", Scope: desktop.ScopeOwner, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Fatalf("expired token accepted: %v", err)
	}
}

func TestBootstrap(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	first, err := s.Bootstrap(ctx, "")
	if err != nil || first == "" {
		t.Fatalf("first bootstrap: %q %v", first, err)
	}
	if again, _ := s.Bootstrap(ctx, ""); again != "" {
		t.Fatal("bootstrap issued a second admin token")
	}
	tok, err := s.Authenticate(ctx, first)
	if err != nil || tok.Scope != desktop.ScopeAdmin {
		t.Fatalf("bootstrap token: %+v %v", tok, err)
	}
	fixed := "my-fixed-admin-token-0123456789"
	if sec, err := s.Bootstrap(ctx, fixed); err != nil || sec != fixed {
		t.Fatalf("env bootstrap: %q %v", sec, err)
	}
	if _, err := s.Authenticate(ctx, fixed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, CreateRequest{Owner: "x", Scope: "root"}); err == nil {
		t.Fatal("bad scope accepted")
	}
}

// TestRevokingAMakerRevokesWhatItMinted goes through the service: the
// child of a revoked token no longer authenticates.
func TestRevokingAMakerRevokesWhatItMinted(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	_, parent, _ := s.Create(ctx, CreateRequest{Owner: "alice", Scope: desktop.ScopeOwner})
	childSecret, child, err := s.Create(ctx, CreateRequest{Parent: parent, Owner: "alice", Scope: desktop.ScopeOwner})
	if err != nil {
		t.Fatal(err)
	}
	_, grandchild, err := s.Create(ctx, CreateRequest{Parent: child, Owner: "alice", Scope: desktop.ScopeDesktop, DesktopID: "d1"})
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := s.Revoke(ctx, parent.ID); err != nil || len(ids) != 3 {
		t.Fatalf("revoke: %v, %v; want 3 revoked", ids, err)
	}
	if _, err := s.Authenticate(ctx, childSecret); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Errorf("child of a revoked token authenticates: %v", err)
	}
	if _, err := s.Usable(ctx, grandchild.ID); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Errorf("grandchild of a revoked token usable: %v", err)
	}
}
