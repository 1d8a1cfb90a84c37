// Package secrets keeps owners' and desktops' secrets: sealed with
// AES-256-GCM under a key kept outside the database, listed by name only,
// and opened only to hand them to a desktop that names them.
package secrets

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Store keeps sealed secrets.
type Store interface {
	PutSecret(ctx context.Context, owner, desktopID, name string, nonce, sealed []byte, at time.Time) (*desktop.Secret, error)
	SealedSecret(ctx context.Context, owner, desktopID, name string) (nonce, sealed []byte, err error)
	ListSecrets(ctx context.Context, owner, desktopID string, withOwner bool) ([]*desktop.Secret, error)
	DeleteSecret(ctx context.Context, owner, desktopID, name string) error
	DeleteDesktopSecrets(ctx context.Context, desktopID string) error
	SetSecretGrants(ctx context.Context, owner, name string, desktops []string, add bool, at time.Time) error
	SecretGranted(ctx context.Context, owner, name, desktopID string) (bool, error)
}

// Limits.
const MaxValue = 64 << 10

var name = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)

// Service seals, lists and resolves secrets.
type Service struct {
	st   Store
	aead cipher.AEAD
}

// New builds the service over st with a KeySize key.
func New(st Store, key []byte) (*Service, error) {
	aead, err := AEAD(key)
	if err != nil {
		return nil, err
	}
	return &Service{st: st, aead: aead}, nil
}

func invalid(field, msg string) error { return &desktop.ValidationError{Field: field, Message: msg} }

// ValidName checks a secret's name: an environment variable's.
func ValidName(n string) error {
	if !name.MatchString(n) {
		return invalid("name", fmt.Sprintf("%q: 1-64 of A-Z, 0-9 and _, not starting with a digit (it becomes an environment variable)", n))
	}
	return nil
}

// additional binds a sealed value to its owner, desktop and name: a row
// moved elsewhere does not open.
func additional(owner, desktopID, n string) []byte {
	return []byte(owner + "\x00" + desktopID + "\x00" + n)
}

// Put creates or replaces a secret (desktopID "": the owner's, for all of
// their desktops).
func (s *Service) Put(ctx context.Context, owner, desktopID, n, value string) (*desktop.Secret, error) {
	if err := ValidName(n); err != nil {
		return nil, err
	}
	switch {
	case value == "":
		return nil, invalid("value", "is empty")
	case len(value) > MaxValue:
		return nil, invalid("value", fmt.Sprintf("at most %d bytes", MaxValue))
	case strings.ContainsRune(value, 0):
		return nil, invalid("value", "contains a NUL byte (it could not be an environment variable)")
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := s.aead.Seal(nil, nonce, []byte(value), additional(owner, desktopID, n))
	return s.st.PutSecret(ctx, owner, desktopID, n, nonce, sealed, time.Now())
}

// List lists an owner's secrets (desktopID ""), or those a desktop may
// name: its own and its owner's. Never values.
func (s *Service) List(ctx context.Context, owner, desktopID string) ([]*desktop.Secret, error) {
	return s.st.ListSecrets(ctx, owner, desktopID, true)
}

// Delete deletes a secret.
func (s *Service) Delete(ctx context.Context, owner, desktopID, n string) error {
	if err := ValidName(n); err != nil {
		return fmt.Errorf("secret %q: %w", n, desktop.ErrNotFound)
	}
	return s.st.DeleteSecret(ctx, owner, desktopID, n)
}

// ForgetDesktop deletes a deleted desktop's own secrets.
func (s *Service) ForgetDesktop(ctx context.Context, desktopID string) error {
	return s.st.DeleteDesktopSecrets(ctx, desktopID)
}

// Allow sets the desktops an owner secret reaches on its own
// (desktop.AllDesktops: every one); the caller checked they are the
// owner's.
func (s *Service) Allow(ctx context.Context, owner, n string, desktops []string) error {
	if _, _, err := s.st.SealedSecret(ctx, owner, "", n); err != nil {
		return err
	}
	return s.st.SetSecretGrants(ctx, owner, n, desktops, false, time.Now())
}

// AllowNamed allows on desktopID the owner secrets among names that the
// desktop has no own secret for: its owner handed them to it (a service
// that names them gets them again at every boot).
func (s *Service) AllowNamed(ctx context.Context, owner, desktopID string, names []string) error {
	var grant []string
	for _, n := range names {
		if _, _, err := s.st.SealedSecret(ctx, owner, desktopID, n); err == nil {
			continue
		}
		if _, _, err := s.st.SealedSecret(ctx, owner, "", n); err == nil {
			grant = append(grant, n)
		}
	}
	for _, n := range grant {
		if err := s.st.SetSecretGrants(ctx, owner, n, []string{desktopID}, true, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// ListFor lists the secrets a desktop reaches on its own: its own and the
// owner secrets allowed on it. Never values.
func (s *Service) ListFor(ctx context.Context, owner, desktopID string) ([]*desktop.Secret, error) {
	all, err := s.st.ListSecrets(ctx, owner, desktopID, true)
	if err != nil {
		return nil, err
	}
	out := []*desktop.Secret{}
	for _, sec := range all {
		if sec.Scope == desktop.SecretDesktop || slices.Contains(sec.Desktops, desktopID) || slices.Contains(sec.Desktops, desktop.AllDesktops) {
			out = append(out, sec)
		}
	}
	return out, nil
}

// Resolve opens the secrets a desktop names as its owner asks: the
// desktop's own first, else the owner's. A name with neither is a
// ValidationError naming it.
func (s *Service) Resolve(ctx context.Context, owner, desktopID string, names []string) (map[string]string, error) {
	return s.resolve(ctx, owner, desktopID, names, false)
}

// ResolveForDesktop opens the secrets a desktop names on its own (its
// desktop token, its services at boot): its own, and owner secrets only
// where the owner allowed them on it.
func (s *Service) ResolveForDesktop(ctx context.Context, owner, desktopID string, names []string) (map[string]string, error) {
	return s.resolve(ctx, owner, desktopID, names, true)
}

func (s *Service) resolve(ctx context.Context, owner, desktopID string, names []string, asDesktop bool) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		if err := ValidName(n); err != nil {
			return nil, invalid("secrets", err.(*desktop.ValidationError).Message)
		}
		v, err := s.open(ctx, owner, desktopID, n)
		if errors.Is(err, desktop.ErrNotFound) && desktopID != "" {
			if asDesktop {
				ok, gerr := s.st.SecretGranted(ctx, owner, n, desktopID)
				if gerr != nil {
					return nil, gerr
				}
				if !ok {
					return nil, fmt.Errorf("secret %s is its owner's and not allowed on desktop %s: its owner allows it with "+
						`PUT /api/v1/secrets/%s {"desktops": [...]}: %w`, n, desktopID, n, desktop.ErrForbidden)
				}
			}
			v, err = s.open(ctx, owner, "", n)
		}
		if errors.Is(err, desktop.ErrNotFound) {
			return nil, invalid("secrets", fmt.Sprintf("no secret %s: set it with PUT /api/v1/secrets/%s (or bureau secret set %s)", n, n, n))
		}
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

func (s *Service) open(ctx context.Context, owner, desktopID, n string) (string, error) {
	nonce, sealed, err := s.st.SealedSecret(ctx, owner, desktopID, n)
	if err != nil {
		return "", err
	}
	plain, err := s.aead.Open(nil, nonce, sealed, additional(owner, desktopID, n))
	if err != nil {
		return "", fmt.Errorf("secret %s does not open with this bureau's key (was secrets.key replaced?)", n)
	}
	return string(plain), nil
}
