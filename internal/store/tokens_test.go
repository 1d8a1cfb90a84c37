package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestRevokeTokenRevokesWhatItMinted builds root → child → grandchild plus
// a sibling tree and checks that revoking the child takes the grandchild
// with it and leaves root and the sibling alone.
func TestRevokeTokenRevokesWhatItMinted(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC()
			for _, tok := range []struct{ id, parent string }{{"root", ""}, {"child", "root"}, {"grandchild", "child"}, {"sibling", "root"}} {
				if err := s.CreateToken(ctx, &desktop.Token{ID: tok.id, Owner: "alice", Hash: "h-" + tok.id, Scope: desktop.ScopeOwner,
					CreatedAt: now, ParentID: tok.parent}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.TokenByID(ctx, "grandchild")
			if err != nil || got.ParentID != "child" {
				t.Fatalf("grandchild = %+v, %v", got, err)
			}
			n, err := s.RevokeToken(ctx, "child", now)
			if err != nil || n != 2 {
				t.Fatalf("revoke child: %d, %v; want 2 revoked", n, err)
			}
			for id, revoked := range map[string]bool{"root": false, "child": true, "grandchild": true, "sibling": false} {
				tok, err := s.TokenByID(ctx, id)
				if err != nil || (tok.RevokedAt != nil) != revoked {
					t.Errorf("%s: %+v, %v; want revoked=%v", id, tok, err, revoked)
				}
			}
			if _, err := s.RevokeToken(ctx, "child", now); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("revoking a revoked tree: %v", err)
			}
			if n, err := s.RevokeToken(ctx, "root", now); err != nil || n != 2 {
				t.Errorf("revoke root: %d, %v; want root and sibling", n, err)
			}
			if _, err := s.TokenByID(ctx, "nope"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("unknown id: %v", err)
			}
		})
	}
}
