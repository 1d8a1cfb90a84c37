package store

import (
	"context"
	"errors"
	"strings"
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
			// What the tokens made: a console token and a public port by
			// the grandchild, a share link by the child, a public port by
			// the sibling.
			if err := s.CreateConsoleToken(ctx, &desktop.ConsoleToken{ID: "con1", DesktopID: "d1", Owner: "alice", Hash: "hc1",
				CreatedAt: now, ExpiresAt: now.Add(time.Hour), MadeBy: "grandchild"}); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateShare(ctx, &desktop.Share{ID: "sh1", DesktopID: "d1", Owner: "alice", Port: 80, Hash: "hs1",
				CreatedAt: now, ExpiresAt: now.Add(time.Hour), MadeBy: "child"}); err != nil {
				t.Fatal(err)
			}
			s.SetPortPublic(ctx, "d1", 8080, true, "alice/grandchild", "grandchild", nil, now)
			s.SetPortPublic(ctx, "d1", 9090, true, "alice/sibling", "sibling", nil, now)
			ids, err := s.RevokeToken(ctx, "child", now)
			if err != nil || strings.Join(ids, " ") != "child grandchild" {
				t.Fatalf("revoke child: %v, %v; want child and grandchild", ids, err)
			}
			if ct, err := s.ConsoleTokenByHash(ctx, "hc1"); err != nil || ct.RevokedAt == nil || ct.MadeBy != "grandchild" {
				t.Errorf("console token made by a revoked token: %+v, %v; want revoked", ct, err)
			}
			if sh, err := s.ShareByID(ctx, "sh1"); err != nil || sh.RevokedAt == nil || sh.MadeBy != "child" {
				t.Errorf("share made by a revoked token: %+v, %v; want revoked", sh, err)
			}
			if ports, err := s.PublicPorts(ctx, "d1"); err != nil || len(ports) != 1 || ports[0] != 9090 {
				t.Errorf("public ports after revoking the child: %v, %v; want the sibling's 9090 only", ports, err)
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
			if ids, err := s.RevokeToken(ctx, "root", now); err != nil || len(ids) != 2 {
				t.Errorf("revoke root: %v, %v; want root and sibling", ids, err)
			}
			if ports, _ := s.PublicPorts(ctx, "d1"); len(ports) != 0 {
				t.Errorf("public ports after revoking the root: %v", ports)
			}
			if _, err := s.TokenByID(ctx, "nope"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("unknown id: %v", err)
			}
		})
	}
}
