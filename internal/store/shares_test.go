package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestSharesAndPublicPortsOnBothDatabases(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			at := time.Now().UTC().Truncate(time.Millisecond)
			l := &desktop.Share{ID: "sh-1", DesktopID: "d1", Owner: "alice", Port: 3000, Hash: "h1", ReadOnly: true,
				CreatedBy: "alice/tok", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			if err := s.CreateShare(ctx, l); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateShare(ctx, &desktop.Share{ID: "sh-2", DesktopID: "d1", Owner: "alice", Port: 3000, Hash: "h1",
				CreatedAt: at, ExpiresAt: at}); err == nil {
				t.Fatal("a second link with the same hash was stored")
			}
			got, err := s.ShareByHash(ctx, "h1")
			if err != nil || got.ID != "sh-1" || !got.ReadOnly || got.Port != 3000 || !got.ExpiresAt.Equal(at.Add(time.Hour)) || got.RevokedAt != nil {
				t.Fatalf("by hash: %+v %v", got, err)
			}
			if _, err := s.ShareByHash(ctx, "nope"); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("unknown hash: %v", err)
			}
			if err := s.RevokeShare(ctx, "d2", "sh-1", at); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("revoked through another desktop: %v", err)
			}
			if err := s.RevokeShare(ctx, "d1", "sh-1", at); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.ShareByID(ctx, "sh-1"); got.RevokedAt == nil || got.Usable(at) {
				t.Fatalf("after revoke: %+v", got)
			}
			if err := s.RevokeShare(ctx, "d1", "sh-1", at); !errors.Is(err, desktop.ErrNotFound) {
				t.Fatalf("revoked twice: %v", err)
			}
			for _, p := range []int{8080, 3000, 8080} {
				if err := s.SetPortPublic(ctx, "d1", p, true, "alice", "", nil, at); err != nil {
					t.Fatal(err)
				}
			}
			if ports, _ := s.PublicPorts(ctx, "d1"); len(ports) != 2 || ports[0] != 3000 || ports[1] != 8080 {
				t.Fatalf("public: %v", ports)
			}
			s.SetPortPublic(ctx, "d1", 3000, false, "alice", "", nil, at)
			if ports, _ := s.PublicPorts(ctx, "d1"); len(ports) != 1 || ports[0] != 8080 {
				t.Fatalf("after private: %v", ports)
			}
			if err := s.ForgetDesktopURLs(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			list, _ := s.ListShares(ctx, "d1")
			ports, _ := s.PublicPorts(ctx, "d1")
			if len(list) != 0 || len(ports) != 0 {
				t.Fatalf("after forget: %d links, ports %v", len(list), ports)
			}
		})
	}
}

// TestPublicPortEndsWithItsMaker: a port made public by a token that
// expires is public until then only.
func TestPublicPortEndsWithItsMaker(t *testing.T) {
	for db, s := range openStores(t) {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now()
			past, later := now.Add(-time.Second), now.Add(time.Hour)
			s.SetPortPublic(ctx, "d1", 3000, true, "alice/t1", "t1", &past, now)
			s.SetPortPublic(ctx, "d1", 3001, true, "alice/t2", "t2", &later, now)
			if ports, err := s.PublicPorts(ctx, "d1"); err != nil || len(ports) != 1 || ports[0] != 3001 {
				t.Errorf("public ports: %v, %v; want 3001 only (3000's maker expired)", ports, err)
			}
			// Made public again by a token without expiry: public for good.
			s.SetPortPublic(ctx, "d1", 3000, true, "alice/t3", "t3", nil, now)
			if ports, _ := s.PublicPorts(ctx, "d1"); len(ports) != 2 {
				t.Errorf("public ports after making 3000 public again: %v", ports)
			}
		})
	}
}
