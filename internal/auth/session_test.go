package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestSessionMintsNoChildren checks that a sign-in's tokens reach no
// further than it but are not its children: they outlive its expiry and
// its revocation. And that only a host-side call makes a sign-in.
func TestSessionMintsNoChildren(t *testing.T) {
	s, st := newService(t)
	ctx := context.Background()
	_, sess, err := s.Create(ctx, CreateRequest{Owner: "alice@example.com", Name: "signed in: Alice", Scope: desktop.ScopeOwner, TTL: time.Hour, Session: true})
	if err != nil || !sess.Session {
		t.Fatalf("session: %+v, %v", sess, err)
	}
	got, err := st.TokenByID(ctx, sess.ID)
	if err != nil || !got.Session {
		t.Fatalf("stored session: %+v, %v", got, err)
	}
	secret, agent, err := s.Create(ctx, CreateRequest{Parent: sess, Owner: "alice@example.com", Scope: desktop.ScopeOwner})
	if err != nil || agent.ParentID != "" || agent.ExpiresAt != nil || agent.Session {
		t.Fatalf("minted by a session: %+v, %v", agent, err)
	}
	for name, req := range map[string]CreateRequest{
		"another owner": {Parent: sess, Owner: "bob", Scope: desktop.ScopeOwner},
		"admin":         {Parent: sess, Owner: "alice@example.com", Scope: desktop.ScopeAdmin},
		"a session":     {Parent: sess, Owner: "alice@example.com", Scope: desktop.ScopeOwner, Session: true},
	} {
		if _, _, err := s.Create(ctx, req); !errors.Is(err, desktop.ErrForbidden) {
			t.Errorf("%s: %v, want forbidden", name, err)
		}
	}
	ids, err := s.Revoke(ctx, sess.ID)
	if err != nil || len(ids) != 1 {
		t.Fatalf("revoke: %v, %v", ids, err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Errorf("the agent's token died with the session: %v", err)
	}
}
