package console

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
)

func newService(t *testing.T) (*Service, *store.Store, *time.Time) {
	t.Helper()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	s := New(st, slog.New(slog.DiscardHandler))
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	return s, st, &now
}

func TestTokensAreHashedAndScopedToOneDesktop(t *testing.T) {
	s, st, _ := newService(t)
	ctx := context.Background()
	secret, tok, err := s.Create(ctx, CreateRequest{DesktopID: "d1", Owner: "alice", CreatedBy: "alice/tok_1"})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.ConsoleTokenByHash(ctx, auth.Hash(secret))
	if err != nil || stored.ID != tok.ID || stored.Hash == secret || strings.Contains(stored.Hash, secret) {
		t.Fatalf("stored %+v err %v", stored, err)
	}
	if got := tok.ExpiresAt.Sub(tok.CreatedAt); got != DefaultTTL {
		t.Errorf("default TTL %v", got)
	}
	if _, err := s.Authenticate(ctx, "d1", secret); err != nil {
		t.Errorf("own desktop: %v", err)
	}
	for name, try := range map[string][2]string{
		"other desktop": {"d2", secret},
		"unknown":       {"d1", "bureau_nope"},
		"missing":       {"d1", ""},
	} {
		if _, err := s.Authenticate(ctx, try[0], try[1]); !errors.Is(err, desktop.ErrUnauthorized) {
			t.Errorf("%s: %v, want unauthorized", name, err)
		}
	}
}

func TestTTLBoundsAndExpiry(t *testing.T) {
	s, _, now := newService(t)
	ctx := context.Background()
	for _, ttl := range []time.Duration{time.Second, MaxTTL + time.Second} {
		var ve *desktop.ValidationError
		if _, _, err := s.Create(ctx, CreateRequest{DesktopID: "d1", TTL: ttl}); !errors.As(err, &ve) {
			t.Errorf("ttl %v: %v, want a validation error", ttl, err)
		}
	}
	secret, _, err := s.Create(ctx, CreateRequest{DesktopID: "d1", TTL: MaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	*now = now.Add(MaxTTL - time.Second)
	if _, err := s.Authenticate(ctx, "d1", secret); err != nil {
		t.Errorf("before expiry: %v", err)
	}
	*now = now.Add(time.Second)
	if _, err := s.Authenticate(ctx, "d1", secret); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("at expiry: %v", err)
	}
	if ts, _ := s.List(ctx, "d1"); len(ts) != 0 {
		t.Errorf("expired token still listed: %d", len(ts))
	}
}

func TestRevocationEndsLiveSessions(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	secretA, a, _ := s.Create(ctx, CreateRequest{DesktopID: "d1"})
	_, b, _ := s.Create(ctx, CreateRequest{DesktopID: "d1", ViewOnly: true})
	_, other, _ := s.Create(ctx, CreateRequest{DesktopID: "d2"})
	a.ExpiresAt, b.ExpiresAt, other.ExpiresAt = time.Now().Add(time.Hour), time.Now().Add(time.Hour), time.Now().Add(time.Hour)
	ctxA, doneA := s.Attach(ctx, a)
	defer doneA()
	ctxB, doneB := s.Attach(ctx, b)
	defer doneB()
	ctxO, doneO := s.Attach(ctx, other)
	defer doneO()
	if n := live(s, "d1"); n != 2 {
		t.Fatalf("live = %d", n)
	}

	if err := s.Revoke(ctx, "d1", a.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	assertClosed(t, ctxA, CodeRevoked)
	if ctxB.Err() != nil {
		t.Error("revoking one token ended another's session")
	}
	if _, err := s.Authenticate(ctx, "d1", secretA); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked token: %v", err)
	}
	if err := s.Revoke(ctx, "d2", b.ID, "alice"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("revoke through another desktop: %v", err)
	}

	s.DesktopChanged(ctx, &desktop.Desktop{ID: "d1", State: desktop.StateStopping})
	assertClosed(t, ctxB, CodeDesktopGone)
	if ts, _ := s.List(ctx, "d1"); len(ts) != 0 {
		t.Errorf("stopping kept %d tokens", len(ts))
	}
	if ctxO.Err() != nil {
		t.Error("another desktop's session ended")
	}
	doneA()
	doneB()
	if n := live(s, "d1"); n != 0 {
		t.Errorf("live after done = %d", n)
	}
}

func TestHibernationEndsSessionsButKeepsTokens(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	secret, tok, _ := s.Create(ctx, CreateRequest{DesktopID: "d1"})
	tok.ExpiresAt = time.Now().Add(time.Hour)
	sctx, done := s.Attach(ctx, tok)
	defer done()
	s.DesktopChanged(ctx, &desktop.Desktop{ID: "d1", State: desktop.StateHibernating})
	assertClosed(t, sctx, CodeDesktopGone)
	if _, err := s.Authenticate(ctx, "d1", secret); err != nil {
		t.Errorf("token unusable after hibernation: %v", err)
	}
}

func TestSessionEndsWhenTokenExpires(t *testing.T) {
	s, _, _ := newService(t)
	_, tok, _ := s.Create(context.Background(), CreateRequest{DesktopID: "d1"})
	tok.ExpiresAt = time.Now().Add(50 * time.Millisecond)
	sctx, done := s.Attach(context.Background(), tok)
	defer done()
	select {
	case <-sctx.Done():
		assertClosed(t, sctx, CodeExpired)
	case <-time.After(5 * time.Second):
		t.Fatal("session outlived its token")
	}
}

func assertClosed(t *testing.T, ctx context.Context, code int) {
	t.Helper()
	var ce *CloseError
	if !errors.As(context.Cause(ctx), &ce) || ce.Code != code {
		t.Errorf("session cause %v, want close code %d", context.Cause(ctx), code)
	}
}

// live counts the registered sessions of a desktop.
func live(s *Service, desktopID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for ss := range s.sessions {
		if ss.desktopID == desktopID {
			n++
		}
	}
	return n
}
