package api

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLimiterBurstThenRefill(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimiter()
	l.now = func() time.Time { return now }
	c := rateClass{"test", 3, 1} // 3 at once, then 1 per second
	for i := range 3 {
		if ok, _ := l.take("tok", c); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := l.take("tok", c)
	if ok || wait != time.Second {
		t.Fatalf("4th request: ok=%v wait=%s, want refused for 1s", ok, wait)
	}
	if ok, _ := l.take("other", c); !ok {
		t.Error("another owner shares the budget")
	}
	now = now.Add(1500 * time.Millisecond)
	if ok, _ := l.take("tok", c); !ok {
		t.Error("no refill after 1.5 s")
	}
	if ok, _ := l.take("tok", c); ok {
		t.Error("refilled more than the elapsed time allows")
	}
}

func TestHeavyRoutesAreRateLimited(t *testing.T) {
	e := newEnv(t)
	var last int
	var body map[string]any
	for i := range 12 {
		last, body = e.do(t, e.admin, "POST", "/api/v1/desktops", `{"name":"d`+string(rune('a'+i))+`"}`)
	}
	if last != 429 || errCode(body) != "rate_limited" {
		t.Errorf("12th create in a row: %d %v", last, body)
	}
	if code, body := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"mine"}`); code == 429 {
		t.Errorf("another owner is limited too: %d %v", code, body)
	}
}

// TestLimiterMemoryIsBounded sends a flood of distinct keys: the limiter
// never holds more than its cap, an exhausted key that keeps being used is
// not forgotten (so it cannot reset its budget by waiting for a flood), and
// once every bucket has refilled a sweep forgets them all.
func TestLimiterMemoryIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimiter()
	l.now = func() time.Time { return now }
	l.maxKeys = 100
	c := rateClass{"test", 2, 0.01} // 2 at once, then one per 100 s
	l.take("hot", c)
	l.take("hot", c)
	for i := range 10 * l.maxKeys {
		if ok, _ := l.take(fmt.Sprint("k", i), c); !ok {
			t.Fatalf("new key %d refused", i)
		}
		if len(l.buckets) > l.maxKeys || l.lru.Len() != len(l.buckets) {
			t.Fatalf("after %d keys: %d buckets, %d in the LRU list, cap %d", i+1, len(l.buckets), l.lru.Len(), l.maxKeys)
		}
		if i%10 == 0 {
			if ok, _ := l.take("hot", c); ok {
				t.Fatalf("the exhausted key was evicted after %d other keys and got a fresh budget", i+1)
			}
		}
	}
	if _, ok := l.buckets["test/k0"]; ok {
		t.Error("the least recently used key was not the one evicted")
	}
	// 100 s on, every flood key has refilled; busy spends its budget, and
	// the next sweep keeps only the buckets that are not full: hot and busy.
	now = now.Add(100 * time.Second)
	l.take("busy", c)
	l.take("busy", c)
	now = now.Add(rateSweepEvery)
	if ok, _ := l.take("busy", c); ok {
		t.Error("the sweep dropped a bucket that was not full")
	}
	if _, hot := l.buckets["test/hot"]; len(l.buckets) != 2 || !hot {
		t.Errorf("after the flood refilled: %d buckets, want hot and busy only", len(l.buckets))
	}
}

// TestRateLimitIsPerOwner: a second token of the same owner shares the
// budget, so minting tokens does not multiply it; another owner has its own.
func TestRateLimitIsPerOwner(t *testing.T) {
	e := newEnv(t)
	_, second, _ := e.mint(t, e.alice, `{"name":"second"}`)
	for i := range 10 {
		tok := e.alice
		if i%2 == 1 {
			tok = second
		}
		if code, body := e.do(t, tok, "POST", "/api/v1/desktops", `{"name":"d`+string(rune('a'+i))+`"}`); code == 429 {
			t.Fatalf("request %d of the burst: %d %v", i+1, code, body)
		}
	}
	code, body := e.do(t, second, "POST", "/api/v1/desktops", `{"name":"late"}`)
	msg, _ := body["error"].(map[string]any)["message"].(string)
	if code != 429 || !strings.Contains(msg, "for this owner") {
		t.Errorf("11th heavy request of alice, through her second token: %d %v", code, body)
	}
	if code, _ := e.do(t, e.bob, "POST", "/api/v1/desktops", `{"name":"bobs"}`); code == 429 {
		t.Error("another owner shares alice's budget")
	}
}
