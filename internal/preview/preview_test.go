package preview_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/preview"
	"github.com/bureau/bureau/internal/store/storetest"
)

func newService(t *testing.T, key string) *preview.Service {
	t.Helper()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	return preview.New(st, []byte(key))
}

func TestShareLinks(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "k")
	d := &desktop.Desktop{ID: "d1", Owner: "alice"}
	for _, bad := range []struct {
		port int
		ttl  time.Duration
	}{{0, 0}, {70000, 0}, {80, time.Second}, {80, 31 * 24 * time.Hour}} {
		var ve *desktop.ValidationError
		if _, _, err := s.Share(ctx, d, bad.port, bad.ttl, false, preview.Maker{Actor: "alice"}); !errors.As(err, &ve) {
			t.Fatalf("port %d ttl %v: %v", bad.port, bad.ttl, err)
		}
	}
	secret, l, err := s.Share(ctx, d, 3000, 0, true, preview.Maker{Actor: "alice"})
	if err != nil || !strings.HasPrefix(secret, "bsh_") || l.Hash == secret || time.Until(l.ExpiresAt) < 23*time.Hour {
		t.Fatalf("share: %q %+v %v", secret, l, err)
	}
	if got, err := s.Redeem(ctx, secret, "d1", 3000); err != nil || got.ID != l.ID || !got.ReadOnly {
		t.Fatalf("redeem: %+v %v", got, err)
	}
	for _, c := range []struct {
		secret, desktop string
		port            int
	}{{secret, "d2", 3000}, {secret, "d1", 3001}, {secret + "x", "d1", 3000}, {"", "d1", 3000}} {
		if _, err := s.Redeem(ctx, c.secret, c.desktop, c.port); !errors.Is(err, preview.ErrDenied) {
			t.Fatalf("redeem %+v: %v", c, err)
		}
	}
	if _, err := s.ShareUsable(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, "d1", l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redeem(ctx, secret, "d1", 3000); !errors.Is(err, preview.ErrDenied) {
		t.Fatalf("revoked link redeemed: %v", err)
	}
	if _, err := s.ShareUsable(ctx, l.ID); !errors.Is(err, preview.ErrDenied) {
		t.Fatalf("revoked link usable: %v", err)
	}
}

func TestCookiesAreSignedAndExpire(t *testing.T) {
	s := newService(t, "key one")
	c := preview.Claims{Kind: preview.KindOwner, Desktop: "d1", Port: 3000, Sub: "tok_1", Exp: time.Now().Add(time.Hour).Unix()}
	v := s.Sign(c)
	if got, err := s.Verify(v); err != nil || got != c {
		t.Fatalf("verify: %+v %v", got, err)
	}
	body, sig, _ := strings.Cut(v, ".")
	forged := s.Sign(preview.Claims{Kind: preview.KindOwner, Desktop: "d2", Port: 3000, Sub: "tok_1", Exp: c.Exp})
	fbody, _, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{
		"other body":   fbody + "." + sig,
		"no signature": body,
		"bad base64":   body + ".!!",
		"other key":    newService(t, "key two").Sign(c),
		"expired":      s.Sign(preview.Claims{Kind: preview.KindOwner, Desktop: "d1", Port: 3000, Exp: time.Now().Add(-time.Second).Unix()}),
	} {
		if _, err := s.Verify(bad); !errors.Is(err, preview.ErrDenied) {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestLoginCodesAreSingleUse(t *testing.T) {
	s := newService(t, "k")
	c := preview.Claims{Kind: preview.KindOwner, Desktop: "d1", Port: 3000, Sub: "tok_1", Exp: time.Now().Add(time.Hour).Unix()}
	code := s.LoginCode(c)
	if _, err := s.RedeemCode(code, "d1", 3001); !errors.Is(err, preview.ErrDenied) {
		t.Fatalf("other port: %v", err)
	}
	// A wrong try spends the code too: it cannot be probed.
	if _, err := s.RedeemCode(code, "d1", 3000); !errors.Is(err, preview.ErrDenied) {
		t.Fatalf("after a wrong try: %v", err)
	}
	code = s.LoginCode(c)
	if got, err := s.RedeemCode(code, "d1", 3000); err != nil || got != c {
		t.Fatalf("redeem: %+v %v", got, err)
	}
	if _, err := s.RedeemCode(code, "d1", 3000); !errors.Is(err, preview.ErrDenied) {
		t.Fatalf("used twice: %v", err)
	}
}
