// Package testproc runs the real servers tests start on loopback
// (SeaweedFS, Pebble): each in a process group of its own, killed with
// the test binary, on ports picked below Linux's ephemeral range.
package testproc

import (
	"bytes"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Process is a server process a test started.
type Process struct {
	Cmd *exec.Cmd
	// Log is the file its output goes to.
	Log string
	// Exited is closed when it ends (it is reaped only by Stop).
	Exited  chan struct{}
	release func() // lets the thread that started it end
	once    sync.Once
}

// Start starts bin in a process group of its own, in dir, with env on top
// of the test's environment and its output in logName. The process gets
// SIGKILL when the test binary dies.
func Start(logName, dir string, env []string, bin string, args ...string) (*Process, error) {
	logf, err := os.Create(logName)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	release, err := startPinned(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Cmd: cmd, Log: logName, Exited: make(chan struct{}), release: release}
	go waitExit(cmd.Process.Pid, p.Exited)
	return p, nil
}

// Stop kills the process's whole group and reaps it; it may be called
// more than once. The leader is reaped only after the group is killed, so
// the group id cannot have been reused by then. Test data is thrown away:
// no graceful shutdown.
func (p *Process) Stop() {
	p.once.Do(func() {
		syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.Exited
		p.Cmd.Wait()
		p.release()
	})
}

// Tail returns the end of the process's log for an error message.
func (p *Process) Tail() string { return LogTail(p.Log) }

// startPinned starts cmd from a thread of its own that lives until release
// is called. Linux sends Pdeathsig when the thread that forked the child
// ends, not the process: started from any thread of Go's pool, a server
// was killed as soon as a goroutine locked that thread and ended with it
// (the backup package's idle-priority readers do exactly that), and a
// test found its S3 server gone half-way through.
func startPinned(cmd *exec.Cmd) (release func(), err error) {
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		started <- cmd.Start()
		<-done
	}()
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	if err := <-started; err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// waitExit closes exited when the process ends, without reaping it.
func waitExit(pid int, exited chan<- struct{}) {
	defer close(exited)
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// FreePorts picks n distinct free loopback TCP ports below Linux's
// ephemeral range (32768 and up), where outgoing connections cannot take
// them between the pick and the server's bind.
func FreePorts(n int) ([]int, error) {
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free loopback ports in 15000-32000")
		}
		l, err := net.Listen("tcp", Loopback(15000+mrand.IntN(17000)))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Loopback is 127.0.0.1:port.
func Loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// LogTail returns the end of a log file for an error message ("" if it
// is empty or unreadable).
func LogTail(name string) string {
	b, err := os.ReadFile(name)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return "\n--- end of " + filepath.Base(name) + " ---\n" + string(b)
}
