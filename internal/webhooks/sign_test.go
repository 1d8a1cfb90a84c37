package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks reference test vector (its libraries' tests).
func TestSignSpecVector(t *testing.T) {
	sig, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil || sig != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %q %v", sig, err)
	}
}

func TestSignIndependently(t *testing.T) {
	secret, err := NewSecret()
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatal(secret, err)
	}
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if len(key) != 32 {
		t.Fatalf("key of %d bytes", len(key))
	}
	body := []byte(`{"type":"desktop.started"}`)
	ts := time.Unix(1700000000, 0)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("msg_1.1700000000." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	other, _ := NewSecret()
	h, err := Headers([]string{secret, other}, "msg_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	sigs := strings.Split(h["webhook-signature"], " ")
	if len(sigs) != 2 || sigs[0] != want || h["webhook-id"] != "msg_1" || h["webhook-timestamp"] != "1700000000" {
		t.Fatalf("headers %v, want first signature %s", h, want)
	}
}

func TestSealer(t *testing.T) {
	s, err := newSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := s.seal("wh_1", "whsec_x")
	if got, err := s.open("wh_1", sealed); got != "whsec_x" || err != nil {
		t.Fatal(got, err)
	}
	if _, err := s.open("wh_2", sealed); err == nil {
		t.Fatal("a secret opened for another endpoint")
	}
}
