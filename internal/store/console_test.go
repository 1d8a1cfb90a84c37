package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestConsoleTokens(t *testing.T) {
	for name, s := range openStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.UnixMilli(time.Now().UnixMilli()).UTC()
			mk := func(id, desktopID string, ttl time.Duration) {
				if err := s.CreateConsoleToken(ctx, &desktop.ConsoleToken{ID: id, DesktopID: desktopID, Owner: "alice",
					Hash: "h-" + id, ViewOnly: id == "a", CreatedAt: now, ExpiresAt: now.Add(ttl)}); err != nil {
					t.Fatal(err)
				}
			}
			mk("a", "d1", time.Minute)
			mk("b", "d1", time.Minute)
			mk("old", "d1", -time.Minute)
			mk("c", "d2", time.Minute)
			got, err := s.ConsoleTokenByHash(ctx, "h-a")
			if err != nil || got.ID != "a" || !got.ViewOnly || !got.ExpiresAt.Equal(now.Add(time.Minute)) {
				t.Fatalf("by hash: %+v %v", got, err)
			}
			if _, err := s.ConsoleTokenByHash(ctx, "h-zz"); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("unknown hash: %v", err)
			}
			if ts, _ := s.ActiveConsoleTokens(ctx, "d1", now); len(ts) != 2 {
				t.Errorf("active: %d, want 2 (expired left out)", len(ts))
			}
			if err := s.RevokeConsoleToken(ctx, "d2", "a", "x", now); !errors.Is(err, desktop.ErrNotFound) {
				t.Errorf("revoke through the wrong desktop: %v", err)
			}
			if err := s.RevokeConsoleToken(ctx, "d1", "a", "by alice", now); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.ConsoleTokenByHash(ctx, "h-a"); got.RevokedAt == nil || got.RevokeReason != "by alice" {
				t.Errorf("revoked: %+v", got)
			}
			if n, err := s.RevokeConsoleTokens(ctx, "d1", "desktop stopped", now); n != 1 || err != nil {
				t.Errorf("revoke desktop: %d %v", n, err)
			}
			if ts, _ := s.ActiveConsoleTokens(ctx, "d2", now); len(ts) != 1 {
				t.Errorf("another desktop's token revoked")
			}
			if n, err := s.PruneConsoleTokens(ctx, now.Add(time.Second)); n != 3 || err != nil {
				t.Errorf("prune: %d %v, want the expired and the two revoked", n, err)
			}
		})
	}
}

func TestConsoleTokenName(t *testing.T) {
	for name, s := range openStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.UnixMilli(time.Now().UnixMilli()).UTC()
			for id, who := range map[string]string{"named": "Dana", "anon": ""} {
				if err := s.CreateConsoleToken(ctx, &desktop.ConsoleToken{ID: id, DesktopID: "d1", Owner: "alice",
					Hash: "h-" + id, Name: who, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
					t.Fatal(err)
				}
				if got, err := s.ConsoleTokenByHash(ctx, "h-"+id); err != nil || got.Name != who {
					t.Fatalf("%s: name %q %v, want %q", id, got.Name, err, who)
				}
			}
		})
	}
}
