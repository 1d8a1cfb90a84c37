// Package backuptest starts a real S3-compatible server (SeaweedFS's
// weed, on loopback) for tests of backups.
package backuptest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/testproc"
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

// server is one weed process and what it leaves behind.
type server struct {
	proc  *testproc.Process
	sock  string // directory of its unix sockets
	ports []int
	once  sync.Once
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
	ports, err := testproc.FreePorts(11)
	if err != nil {
		return loc, nil, err
	}
	loc.Endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[6]))
	sock, err := os.MkdirTemp("", "weed-sock-") // short: unix socket paths are limited
	if err != nil {
		return loc, nil, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	proc, err := testproc.Start(filepath.Join(run, "weed.log"), run, nil, bin, "-logtostderr", "-config_dir="+run, "mini",
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
	if err != nil {
		os.RemoveAll(sock)
		return loc, nil, err
	}
	s := &server{proc: proc, sock: sock, ports: ports}
	if err := ready(ctx, loc, proc.Exited); err != nil {
		s.stop()
		return loc, nil, fmt.Errorf("SeaweedFS (weed mini, log %s): %w%s", proc.Log, err, proc.Tail())
	}
	return loc, s.stop, nil
}

// stop kills the server (testproc.Process.Stop), then removes the unix
// sockets it leaves in the temporary directory.
func (s *server) stop() {
	s.once.Do(func() {
		s.proc.Stop()
		os.RemoveAll(s.sock)
		for _, p := range s.ports {
			matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "seaweedfs-*-"+strconv.Itoa(p)+".sock"))
			for _, m := range matches {
				os.Remove(m)
			}
		}
	})
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
