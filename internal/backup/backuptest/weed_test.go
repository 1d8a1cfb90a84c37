package backuptest

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
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

// init keeps the main goroutine on the process's first thread, which Go
// never ends (a goroutine that ends while locked to it wedges it instead):
// so TestOutlivesThread's goroutine runs on a thread that does end.
func init() { runtime.LockOSThread() }

// TestOutlivesThread starts a server from a goroutine that holds its
// thread and ends with it, as the backup package's idle-priority readers
// do: Linux's parent-death signal follows the thread that forked, so the
// server must not be forked by a thread of the caller's.
func TestOutlivesThread(t *testing.T) {
	type started struct {
		loc  desktop.S3Location
		stop func()
		err  error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		loc, stop, err := Start(context.Background(), t.TempDir())
		ch <- started{loc, stop, err}
	}()
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.stop()
	time.Sleep(500 * time.Millisecond) // a SIGKILL, if sent, has landed
	c, err := net.DialTimeout("tcp", s.loc.Endpoint, time.Second)
	if err != nil {
		t.Fatalf("the server died with the thread its caller ran on: %v", err)
	}
	c.Close()
}
