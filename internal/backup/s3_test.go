package backup

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/backup/backuptest"
	"github.com/bureau/bureau/internal/desktop"
)

// TestS3 runs the target contract and the backup round trip against a real
// S3 server (SeaweedFS on loopback), each under a prefix of its own, and
// checks NewS3's errors.
func TestS3(t *testing.T) {
	loc := backuptest.StartS3(t)
	ctx := context.Background()
	under := func(t *testing.T, prefix string) Target {
		l := loc
		l.Prefix = prefix
		tg, err := NewS3(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	t.Run("contract", func(t *testing.T) { targetContract(t, under(t, "contract")) })
	t.Run("round trip", func(t *testing.T) {
		r, err := Open(ctx, under(t, "team/repo/"), testKey(1))
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, r)
		if _, err := Open(ctx, under(t, "team/repo"), testKey(3)); err == nil || !strings.Contains(err.Error(), ErrWrongKey.Error()) {
			t.Errorf("open with another key: %v", err)
		}
		// The prefix keeps repositories apart.
		if keys, err := under(t, "team").List(ctx, "repo/chunks/"); err != nil || len(keys) != 15 {
			t.Errorf("chunks under the prefix: %d, %v", len(keys), err)
		}
		if keys, err := under(t, "contract").List(ctx, "chunks/"); err != nil || len(keys) != 2 {
			t.Errorf("the contract's chunks: %q, %v", keys, err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		l := loc
		l.SecretKey = "not-the-secret"
		_, err := NewS3(ctx, l)
		if err == nil || !strings.Contains(err.Error(), "access denied: check the access key and secret key") {
			t.Errorf("wrong secret key: %v", err)
		}
		t.Logf("wrong secret key: %v", err)
		l = loc
		l.AccessKey = "nobody"
		if _, err := NewS3(ctx, l); err == nil || !strings.Contains(err.Error(), "access denied") {
			t.Errorf("unknown access key: %v", err)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		l := loc
		l.Bucket = "no-such-bucket"
		_, err := NewS3(ctx, l)
		if want := "bucket no-such-bucket does not exist at " + loc.Endpoint; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing bucket: %v; want %q", err, want)
		}
		t.Logf("missing bucket: %v", err)
	})
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		l := desktop.S3Location{Endpoint: addr, Bucket: "bucket", AccessKey: "a", SecretKey: "s", Insecure: true}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		begun := time.Now()
		_, err = NewS3(cctx, l)
		if err == nil || !strings.Contains(err.Error(), "cannot reach "+addr) {
			t.Errorf("unreachable endpoint: %v", err)
		}
		t.Logf("unreachable endpoint reported in %s: %v", time.Since(begun).Round(time.Millisecond), err)
	})
}
