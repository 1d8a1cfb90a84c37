package signin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// CSRFToken is the CSRF token of the session whose secret this is: an
// HMAC of the secret under a key derived from bureau's secrets key. Only
// someone holding the cookie (which scripts cannot read) can compute it;
// GET /api/v1/session hands it to the console.
func (s *Service) CSRFToken(sessionSecret string) string {
	m := hmac.New(sha256.New, s.csrf)
	m.Write([]byte("csrf\x00" + sessionSecret))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF says, in constant time, whether got is the CSRF token of the
// session whose secret this is.
func (s *Service) CheckCSRF(sessionSecret, got string) bool {
	want := s.CSRFToken(sessionSecret)
	return got != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}
