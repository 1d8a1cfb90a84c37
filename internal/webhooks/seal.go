package webhooks

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/bureau/bureau/internal/secrets"
)

// sealer keeps endpoints' secrets at rest: AES-256-GCM under bureau's
// secrets key (kept outside the database, as internal/secrets does),
// bound to the endpoint's id.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	aead, err := secrets.AEAD(key)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func aad(webhookID string) []byte { return []byte("webhook\x00" + webhookID) }

// seal returns base64(nonce || ciphertext).
func (s *sealer) seal(webhookID, secret string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal webhook secret: %w", err)
	}
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(secret), aad(webhookID))), nil
}

func (s *sealer) open(webhookID, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", errors.New("open webhook secret: not a sealed secret")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], aad(webhookID))
	if err != nil {
		return "", fmt.Errorf("open webhook secret of %s (was the secrets key changed?): %w", webhookID, err)
	}
	return string(plain), nil
}
