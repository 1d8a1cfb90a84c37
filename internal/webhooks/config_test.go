package webhooks

import (
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("", "", "", 0)
	if err != nil || len(c.Schedule) != 7 || c.Schedule[1] != 5*time.Minute || c.DisableAfter != 24*time.Hour || c.Keep != 7*24*time.Hour {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ParseConfig("1s, 2s,4s", "30s", "127.0.0.0/8, ::1", 2)
	if err != nil || len(c.Schedule) != 3 || c.Schedule[2] != 4*time.Second || c.DisableAfter != 30*time.Second ||
		len(c.Allow) != 2 || c.Allow[1].String() != "::1/128" || c.Keep != 48*time.Hour {
		t.Fatalf("set: %+v %v", c, err)
	}
	for _, bad := range [][3]string{{"1s,x", "", ""}, {"0s", "", ""}, {"", "soon", ""}, {"", "", "localhost"}} {
		if _, err := ParseConfig(bad[0], bad[1], bad[2], 0); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseConfig("", "", "", -1); err == nil {
		t.Error("negative keep accepted")
	}
	now := time.Unix(0, 0)
	c, _ = ParseConfig("", "", "", 0)
	for i, want := range []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour} {
		if next, ok := c.next(now, i+1); !ok || next.Sub(now) != want {
			t.Errorf("after attempt %d: %v %v", i+1, next.Sub(now), ok)
		}
	}
	if _, ok := c.next(now, 8); ok {
		t.Error("a ninth attempt")
	}
}
