package api

import (
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
		t.Error("another token shares the budget")
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
		t.Errorf("another token is limited too: %d %v", code, body)
	}
}
