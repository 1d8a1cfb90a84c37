package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func TestStreamTokensAreSingleUseAndShortLived(t *testing.T) {
	now := time.Unix(1000, 0)
	g := NewStreamGrants()
	g.now = func() time.Time { return now }
	maker := &desktop.Token{ID: "tok_1", Owner: "alice", Scope: desktop.ScopeOwner}

	secret, exp, err := g.Issue(maker)
	if err != nil || !strings.HasPrefix(secret, streamPrefix) || exp != now.Add(StreamTTL) {
		t.Fatalf("issue: %q %s %v", secret, exp, err)
	}
	if _, ok := g.grants[secret]; ok {
		t.Error("stream secret kept in clear")
	}
	if id, err := g.Redeem(secret); err != nil || id != "tok_1" {
		t.Fatalf("first use: %q %v", id, err)
	}
	if _, err := g.Redeem(secret); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Errorf("second use: %v", err)
	}

	late, _, _ := g.Issue(maker)
	now = now.Add(StreamTTL)
	if _, err := g.Redeem(late); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Errorf("use after %s: %v", StreamTTL, err)
	}

	soon := now.Add(10 * time.Second)
	_, exp, _ = g.Issue(&desktop.Token{ID: "tok_2", ExpiresAt: &soon})
	if exp != soon {
		t.Errorf("a stream token outlives its maker: %s, maker expires %s", exp, soon)
	}
	if _, err := g.Redeem("bstream_guess"); !errors.Is(err, desktop.ErrUnauthorized) {
		t.Errorf("unknown secret: %v", err)
	}
}

func TestStreamGrantsAreBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	g := NewStreamGrants()
	g.now = func() time.Time { return now }
	maker := &desktop.Token{ID: "tok_1"}
	for range maxStreamGrants {
		if _, _, err := g.Issue(maker); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := g.Issue(maker); !errors.Is(err, desktop.ErrUnavailable) {
		t.Fatalf("grant past the cap: %v", err)
	}
	now = now.Add(StreamTTL)
	if _, _, err := g.Issue(maker); err != nil || len(g.grants) != 1 {
		t.Fatalf("expired grants not swept: %d grants, %v", len(g.grants), err)
	}
}
