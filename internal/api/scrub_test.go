package api

import (
	"strings"
	"testing"
)

func TestScrubberCatchesValuesSplitAcrossWrites(t *testing.T) {
	values := map[string]string{"STRIPE_KEY": "sk_live_abc123", "TOKEN": "tok", "SHORT": "ab"}
	text := "key=sk_live_abc123; again sk_live_abc123 and tok, ab stays, sk_live_ab is only a prefix"
	want := "key=[secret STRIPE_KEY]; again [secret STRIPE_KEY] and [secret TOKEN], ab stays, sk_live_ab is only a prefix"
	for size := 1; size <= len(text); size++ {
		var b strings.Builder
		w := newScrubber(&b, values).(*scrubber)
		for i := 0; i < len(text); i += size {
			w.Write([]byte(text[i:min(i+size, len(text))]))
		}
		w.Flush()
		if b.String() != want {
			t.Fatalf("writes of %d bytes: got %q, want %q", size, b.String(), want)
		}
	}
}

func TestScrubOutputBase64(t *testing.T) {
	got := scrubOutput("aGVsbG8gc2VjcmV0dmFsdWUgYnll", "base64", map[string]string{"S": "secretvalue"})
	if got != "aGVsbG8gW3NlY3JldCBTXSBieWU=" { // "hello [secret S] bye"
		t.Fatalf("got %q", got)
	}
	if scrubString("nothing here", nil) != "nothing here" {
		t.Fatal("text without secrets changed")
	}
}
