package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every webhook secret.
const SecretPrefix = "whsec_"

// NewSecret makes a secret: whsec_ and the base64 of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// secretKey is the HMAC key of a secret: the base64 after whsec_.
func secretKey(secret string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, fmt.Errorf("webhook secret: not whsec_<base64>: %w", err)
	}
	return k, nil
}

// Sign is one v1 signature of a message: v1,<base64 of HMAC-SHA256 of
// "<id>.<timestamp>.<body>">.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	k, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	fmt.Fprintf(m, "%s.%d.", id, ts.Unix())
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Headers are a message's webhook-id, webhook-timestamp and
// webhook-signature, signed with each of secrets (space-separated
// signatures, during a rotation).
func Headers(secrets []string, id string, ts time.Time, body []byte) (map[string]string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Sign(s, id, ts, body)
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, sig)
	}
	return map[string]string{
		"webhook-id":        id,
		"webhook-timestamp": strconv.FormatInt(ts.Unix(), 10),
		"webhook-signature": strings.Join(sigs, " "),
	}, nil
}

func randomID(prefix string) string {
	b := make([]byte, 10)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
