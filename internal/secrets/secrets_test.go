package secrets_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/secrets"
	"github.com/bureau/bureau/internal/store"
	"github.com/bureau/bureau/internal/store/storetest"
)

func newService(t *testing.T) (*secrets.Service, *store.Store, []byte) {
	t.Helper()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "b.db"))
	key, err := secrets.LoadOrCreateKey(filepath.Join(t.TempDir(), "secrets.key"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	return s, st, key
}

func TestSecretsRoundTripAndScopes(t *testing.T) {
	s, st, _ := newService(t)
	ctx := context.Background()
	if _, err := s.Put(ctx, "alice", "", "API_KEY", "owner-value"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "alice", "d1", "API_KEY", "desktop-value"); err != nil {
		t.Fatal(err)
	}
	s.Put(ctx, "alice", "", "OTHER", "o")
	got, err := s.Resolve(ctx, "alice", "d1", []string{"API_KEY", "OTHER"})
	if err != nil || got["API_KEY"] != "desktop-value" || got["OTHER"] != "o" {
		t.Fatalf("d1 resolves %v %v", got, err)
	}
	if got, _ := s.Resolve(ctx, "alice", "d2", []string{"API_KEY"}); got["API_KEY"] != "owner-value" {
		t.Fatalf("d2 resolves %v", got)
	}
	var ve *desktop.ValidationError
	if _, err := s.Resolve(ctx, "bob", "", []string{"API_KEY"}); !errors.As(err, &ve) || !strings.Contains(ve.Message, "API_KEY") {
		t.Fatalf("bob resolves alice's secret: %v", err)
	}
	// Replacing keeps one row and the creation time.
	first, _ := s.List(ctx, "alice", "")
	s.Put(ctx, "alice", "", "API_KEY", "owner-value-2")
	again, _ := s.List(ctx, "alice", "")
	if len(again) != 2 || !again[0].CreatedAt.Equal(first[0].CreatedAt) {
		t.Fatalf("after replace: %+v", again)
	}
	if got, _ := s.Resolve(ctx, "alice", "", []string{"API_KEY"}); got["API_KEY"] != "owner-value-2" {
		t.Fatalf("replaced value: %v", got)
	}
	list, _ := s.List(ctx, "alice", "d1")
	if len(list) != 3 {
		t.Fatalf("d1 lists %d secrets, want its own and its owner's", len(list))
	}
	// No value, sealed or not, shows in what is listed.
	for _, sec := range list {
		text := fmt.Sprintf("%v %+v", sec, sec)
		if strings.Contains(text, "value") || strings.Contains(text, "-value") {
			t.Fatalf("listed: %s", text)
		}
	}
	// Stored sealed.
	_, sealed, _ := st.SealedSecret(ctx, "alice", "d1", "API_KEY")
	if strings.Contains(string(sealed), "desktop-value") {
		t.Fatal("the value is stored in the clear")
	}
	if err := s.Delete(ctx, "alice", "d1", "API_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "alice", "d1", "API_KEY"); !errors.Is(err, desktop.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if got, _ := s.Resolve(ctx, "alice", "d1", []string{"API_KEY"}); got["API_KEY"] != "owner-value-2" {
		t.Fatalf("after deleting the desktop's: %v", got)
	}
	s.Put(ctx, "alice", "d1", "GONE", "x")
	s.ForgetDesktop(ctx, "d1")
	if list, _ := s.List(ctx, "alice", "d1"); len(list) != 2 {
		t.Fatalf("after forgetting d1: %+v", list)
	}
}

func TestSealedValueIsBoundToItsPlace(t *testing.T) {
	s, st, key := newService(t)
	ctx := context.Background()
	s.Put(ctx, "alice", "", "K", "alices")
	nonce, sealed, _ := st.SealedSecret(ctx, "alice", "", "K")
	// The same sealed bytes under bob's name do not open.
	st.PutSecret(ctx, "bob", "", "K", nonce, sealed, timeNow())
	if _, err := s.Resolve(ctx, "bob", "", []string{"K"}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("moved row opened: %v", err)
	}
	// Another key opens nothing.
	other := append([]byte(nil), key...)
	other[0] ^= 1
	s2, _ := secrets.New(st, other)
	if _, err := s2.Resolve(ctx, "alice", "", []string{"K"}); err == nil {
		t.Fatal("opened with another key")
	}
}

func TestSecretInputChecks(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	for _, c := range []struct{ name, value string }{
		{"lower", "v"}, {"1ST", "v"}, {"A-B", "v"}, {strings.Repeat("A", 65), "v"},
		{"OK", ""}, {"OK", "a\x00b"}, {"OK", strings.Repeat("x", secrets.MaxValue+1)},
	} {
		var ve *desktop.ValidationError
		if _, err := s.Put(ctx, "alice", "", c.name, c.value); !errors.As(err, &ve) {
			t.Errorf("Put(%q, %d bytes) = %v, want a validation error", c.name, len(c.value), err)
		}
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secrets.key")
	k1, err := secrets.LoadOrCreateKey(p)
	if err != nil || len(k1) != secrets.KeySize {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
	k2, _ := secrets.LoadOrCreateKey(p)
	if string(k1) != string(k2) {
		t.Fatal("a second start made another key")
	}
	os.Chmod(p, 0o644)
	if _, err := secrets.LoadOrCreateKey(p); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("world-readable key: %v", err)
	}
	os.WriteFile(p, []byte("short"), 0o600)
	if _, err := secrets.LoadOrCreateKey(p); err == nil {
		t.Fatal("a short key was taken")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func timeNow() time.Time { return time.Now() }

// TestDesktopsReachOwnerSecretsOnlyWhereAllowed: a desktop on its own (its
// token, its services at boot) gets its own secrets, and its owner's only
// where the owner allowed them; the owner's calls get both.
func TestDesktopsReachOwnerSecretsOnlyWhereAllowed(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	s.Put(ctx, "alice", "", "GITHUB_TOKEN", "gh-1")
	s.Put(ctx, "alice", "", "PAY_KEY", "pay-1")
	s.Put(ctx, "alice", "d1", "OWN", "own-1")
	if v, err := s.Resolve(ctx, "alice", "d1", []string{"GITHUB_TOKEN", "OWN"}); err != nil || v["GITHUB_TOKEN"] != "gh-1" {
		t.Fatalf("as the owner: %v, %v", v, err)
	}
	if v, err := s.ResolveForDesktop(ctx, "alice", "d1", []string{"OWN"}); err != nil || v["OWN"] != "own-1" {
		t.Errorf("its own secret, on its own: %v, %v", v, err)
	}
	if _, err := s.ResolveForDesktop(ctx, "alice", "d1", []string{"GITHUB_TOKEN"}); !errors.Is(err, desktop.ErrForbidden) {
		t.Errorf("an owner secret not allowed on d1: %v, want forbidden", err)
	}
	if err := s.Allow(ctx, "alice", "GITHUB_TOKEN", []string{"d1"}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.ResolveForDesktop(ctx, "alice", "d1", []string{"GITHUB_TOKEN"}); err != nil || v["GITHUB_TOKEN"] != "gh-1" {
		t.Errorf("allowed on d1: %v, %v", v, err)
	}
	if _, err := s.ResolveForDesktop(ctx, "alice", "d2", []string{"GITHUB_TOKEN"}); !errors.Is(err, desktop.ErrForbidden) {
		t.Errorf("allowed on d1, asked by d2: %v", err)
	}
	if err := s.Allow(ctx, "alice", "NOPE", []string{"d1"}); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("allowing a secret that does not exist: %v", err)
	}
	// A service the owner gives PAY_KEY (and its own OWN) allows PAY_KEY there.
	if err := s.AllowNamed(ctx, "alice", "d2", []string{"PAY_KEY", "OWN", "MISSING"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveForDesktop(ctx, "alice", "d2", []string{"PAY_KEY"}); err != nil {
		t.Errorf("PAY_KEY after the owner named it for d2: %v", err)
	}
	list, err := s.ListFor(ctx, "alice", "d1")
	if err != nil || len(list) != 2 || list[0].Name != "GITHUB_TOKEN" || list[1].Name != "OWN" {
		t.Errorf("what d1 reaches on its own: %+v, %v", list, err)
	}
	// "*" allows it everywhere; deleting the secret forgets where.
	s.Allow(ctx, "alice", "GITHUB_TOKEN", []string{desktop.AllDesktops})
	if _, err := s.ResolveForDesktop(ctx, "alice", "d9", []string{"GITHUB_TOKEN"}); err != nil {
		t.Errorf("allowed on every desktop: %v", err)
	}
	s.Delete(ctx, "alice", "", "GITHUB_TOKEN")
	s.Put(ctx, "alice", "", "GITHUB_TOKEN", "gh-2")
	if _, err := s.ResolveForDesktop(ctx, "alice", "d1", []string{"GITHUB_TOKEN"}); !errors.Is(err, desktop.ErrForbidden) {
		t.Errorf("a secret deleted and set again keeps its old desktops: %v", err)
	}
}
