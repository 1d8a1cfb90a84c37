package testproc

import (
	"net"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// init keeps the main goroutine on the process's first thread, which Go
// never ends (a goroutine that ends while locked to it wedges it instead):
// so TestOutlivesThread's goroutine runs on a thread that does end.
func init() { runtime.LockOSThread() }

// TestOutlivesThread starts a process from a goroutine that holds its
// thread and ends with it, as the backup package's idle-priority readers
// do: Linux's parent-death signal follows the thread that forked, so the
// process must not be forked by a thread of the caller's.
func TestOutlivesThread(t *testing.T) {
	dir := t.TempDir()
	ch := make(chan *Process, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		p, err := Start(filepath.Join(dir, "sleep.log"), dir, nil, "sleep", "30")
		if err != nil {
			t.Error(err)
		}
		ch <- p
	}()
	p := <-ch
	if p == nil {
		t.FailNow()
	}
	time.Sleep(300 * time.Millisecond) // a SIGKILL, if sent, has landed
	select {
	case <-p.Exited:
		t.Fatal("the process died with the thread its caller ran on")
	default:
	}
	if err := syscall.Kill(p.Cmd.Process.Pid, 0); err != nil {
		t.Fatalf("the process is gone: %v", err)
	}
	p.Stop()
	p.Stop() // twice is fine
	select {
	case <-p.Exited:
	default:
		t.Fatal("Stop returned before the process ended")
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < 15000 || p >= 32768 || seen[p] {
			t.Fatalf("ports %v", ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", Loopback(p))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		l.Close()
	}
}
