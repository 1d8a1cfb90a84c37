package backuptest

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestStart starts a server, checks it stores objects (Start waits for
// that), and that stop takes it down.
func TestStart(t *testing.T) {
	ctx := context.Background()
	begun := time.Now()
	loc, stop, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up in %s at %s", time.Since(begun).Round(time.Millisecond), loc.Endpoint)
	if loc.Bucket != Bucket || loc.AccessKey == "" || loc.SecretKey == "" || !loc.Insecure {
		t.Errorf("location: %+v", loc)
	}
	begun = time.Now()
	stop()
	stop() // twice is fine
	t.Logf("stopped in %s", time.Since(begun).Round(time.Millisecond))
	if c, err := net.DialTimeout("tcp", loc.Endpoint, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still answers after stop", loc.Endpoint)
	}
}
