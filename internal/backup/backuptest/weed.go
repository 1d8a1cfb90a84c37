// Package backuptest starts a real S3-compatible server (SeaweedFS's
// weed, on loopback) for tests of backups.
package backuptest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"golang.org/x/sys/unix"
)

// Bucket is the bucket Start creates.
const Bucket = "bureau-test"

// DefaultWeed is where scripts/weed-setup.sh puts the weed binary.
const DefaultWeed = "/var/cache/bureau/tools/weed"

// ErrNoWeed reports that no weed binary was found.
var ErrNoWeed = errors.New("no SeaweedFS weed binary ($BUREAU_WEED, " + DefaultWeed + " or weed on PATH): run scripts/weed-setup.sh to build it")

// Weed returns the weed binary to run: $BUREAU_WEED, else DefaultWeed,
// else weed on PATH.
func Weed() (string, error) {
	if p := os.Getenv("BUREAU_WEED"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("BUREAU_WEED=%s: %w (unset it, or run scripts/weed-setup.sh to build weed)", p, err)
		}
		return p, nil
	}
	if _, err := os.Stat(DefaultWeed); err == nil {
		return DefaultWeed, nil
	}
	if p, err := exec.LookPath("weed"); err == nil {
		return p, nil
	}
	return "", ErrNoWeed
}

// StartS3 starts a SeaweedFS S3 server on loopback for the test (data in
// t.TempDir()), with a bucket and an identity of its own, and stops it at
// cleanup. Without a weed binary the test fails: it never skips.
func StartS3(t testing.TB) desktop.S3Location {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begun := time.Now()
	loc, stop, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("start SeaweedFS: %v", err)
	}
	t.Cleanup(stop)
	t.Logf("SeaweedFS S3 at %s (bucket %s) up in %s", loc.Endpoint, loc.Bucket, time.Since(begun).Round(time.Millisecond))
	return loc
}

// Start starts SeaweedFS on loopback, its data and log (weed.log) in a
// subdirectory of dir, waits until its S3 API stores objects in Bucket
// (which it creates), and returns the bucket's location with an access key
// and secret key of its own. stop kills the server and its process group
// and waits for them; it may be called more than once. It tries up to
// three times with fresh ports (another process may take one first).
//
// It runs `weed mini` (master, volume server, filer and S3 gateway in one
// process; WebDAV, the admin UI, Iceberg and Lance are turned off or
// confined to loopback ports it picked): in single-master mode its master
// allocates volumes as soon as its own volume server reports, where `weed
// server` holds allocation for a 5 s heartbeat pulse, so mini stores its
// first object in about 5 s, against 10 s.
func Start(ctx context.Context, dir string) (loc desktop.S3Location, stop func(), err error) {
	bin, err := Weed()
	if err != nil {
		return loc, nil, err
	}
	for try := 1; ; try++ {
		loc, stop, err = start(ctx, bin, dir, try)
		if err == nil || ctx.Err() != nil || try == 3 {
			return loc, stop, err
		}
	}
}

// server is one weed process.
type server struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	release func() // lets the thread that started it end
	sock    string // directory of its unix sockets
	ports   []int
	once    sync.Once
}

func start(ctx context.Context, bin, dir string, try int) (desktop.S3Location, func(), error) {
	run := filepath.Join(dir, fmt.Sprintf("weed-%d", try))
	if err := os.MkdirAll(filepath.Join(run, "data"), 0o700); err != nil {
		return desktop.S3Location{}, nil, err
	}
	loc := desktop.S3Location{Bucket: Bucket, Region: "us-east-1", AccessKey: "bureau" + randHex(6), SecretKey: randHex(20), Insecure: true}
	cfg, _ := json.Marshal(map[string]any{"identities": []any{map[string]any{
		"name":        "bureau",
		"credentials": []any{map[string]string{"accessKey": loc.AccessKey, "secretKey": loc.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}})
	if err := os.WriteFile(filepath.Join(run, "s3.json"), cfg, 0o600); err != nil {
		return loc, nil, err
	}
	ports, err := freePorts(11)
	if err != nil {
		return loc, nil, err
	}
	loc.Endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[6]))
	sock, err := os.MkdirTemp("", "weed-sock-") // short: unix socket paths are limited
	if err != nil {
		return loc, nil, err
	}
	logf, err := os.Create(filepath.Join(run, "weed.log"))
	if err != nil {
		os.RemoveAll(sock)
		return loc, nil, err
	}
	defer logf.Close()
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	cmd := exec.Command(bin, "-logtostderr", "-config_dir="+run, "mini",
		"-dir="+filepath.Join(run, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+p(0), "-master.port.grpc="+p(1), "-master.telemetry=false",
		"-master.volumeSizeLimitMB=256", "-volume.max=100",
		"-volume.port="+p(2), "-volume.port.grpc="+p(3),
		"-filer.port="+p(4), "-filer.port.grpc="+p(5), "-filer.localSocket="+filepath.Join(sock, "filer.sock"),
		"-s3.port="+p(6), "-s3.port.grpc="+p(7), "-s3.localSocket="+filepath.Join(sock, "s3.sock"),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config="+filepath.Join(run, "s3.json"),
		"-webdav=false", "-webdav.port="+p(8),
		"-admin.ui=false", "-admin.port="+p(9), "-admin.port.grpc="+p(10), "-admin.port.legacy=0",
		"-admin.dataDir="+filepath.Join(run, "admin"))
	cmd.Dir = run
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	release, err := startPinned(cmd)
	if err != nil {
		os.RemoveAll(sock)
		return loc, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{}), release: release, sock: sock, ports: ports}
	go waitExit(cmd.Process.Pid, s.exited)
	if err := ready(ctx, loc, s.exited); err != nil {
		s.stop()
		return loc, nil, fmt.Errorf("SeaweedFS (weed mini, log %s): %w%s", logf.Name(), err, logTail(logf.Name()))
	}
	return loc, s.stop, nil
}

// stop kills the server's whole process group and reaps it, then removes
// the unix sockets it leaves in the temporary directory. The leader is
// reaped only after the group is killed, so the group id cannot have been
// reused by then. Test data is thrown away: no graceful shutdown.
func (s *server) stop() {
	s.once.Do(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.cmd.Wait()
		s.release()
		os.RemoveAll(s.sock)
		for _, p := range s.ports {
			matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "seaweedfs-*-"+strconv.Itoa(p)+".sock"))
			for _, m := range matches {
				os.Remove(m)
			}
		}
	})
}

// startPinned starts cmd from a thread of its own that lives until release
// is called. Linux sends Pdeathsig when the thread that forked the child
// ends, not the process: started from any thread of Go's pool, the server
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

// freePorts picks n distinct free loopback TCP ports below Linux's
// ephemeral range (32768 and up), where outgoing connections cannot take
// them between the pick and weed's bind.
func freePorts(n int) ([]int, error) {
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free loopback ports in 15000-32000")
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(15000+mrand.IntN(17000))))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// logTail returns the end of the server's log for an error message.
func logTail(name string) string {
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
	return "\n--- end of weed.log ---\n" + string(b)
}
