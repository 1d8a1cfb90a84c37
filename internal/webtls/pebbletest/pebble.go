// Package pebbletest starts a real ACME server (Let's Encrypt's Pebble,
// with pebble-challtestsrv as the DNS server it resolves names with, on
// loopback) for tests of certificate issuance.
package pebbletest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultDir is where scripts/pebble-setup.sh puts pebble,
// pebble-challtestsrv and the certificates of Pebble's own HTTPS.
const DefaultDir = "/var/cache/bureau/tools/pebble-v2.10.3"

// ErrNoPebble reports that no Pebble was found.
var ErrNoPebble = errors.New("no Pebble ($BUREAU_PEBBLE_DIR or " + DefaultDir + "): run scripts/pebble-setup.sh to build it")

// Binaries returns the pebble and pebble-challtestsrv binaries to run and
// the directory of the certificates for Pebble's own HTTPS
// (localhost/cert.pem, localhost/key.pem and the pebble.minica.pem that
// signed them): from $BUREAU_PEBBLE_DIR, else DefaultDir.
func Binaries() (pebble, challtestsrv, certDir string, err error) {
	dir := DefaultDir
	env := os.Getenv("BUREAU_PEBBLE_DIR")
	if env != "" {
		dir = env
	}
	pebble = filepath.Join(dir, "pebble")
	challtestsrv = filepath.Join(dir, "pebble-challtestsrv")
	certDir = filepath.Join(dir, "certs")
	for _, p := range []string{pebble, challtestsrv, filepath.Join(certDir, "localhost", "cert.pem"), filepath.Join(certDir, "localhost", "key.pem"), filepath.Join(certDir, "pebble.minica.pem")} {
		if _, err := os.Stat(p); err != nil {
			if env != "" {
				return "", "", "", fmt.Errorf("BUREAU_PEBBLE_DIR=%s: %w (unset it, or run scripts/pebble-setup.sh to build Pebble)", env, err)
			}
			return "", "", "", fmt.Errorf("%w (%v)", ErrNoPebble, err)
		}
	}
	return pebble, challtestsrv, certDir, nil
}

// Options configures the ACME server Start runs.
type Options struct {
	// HTTPPort is the port Pebble's validation authority connects to for
	// http-01 challenges (the server under test listens there); 0: a free
	// port Start picks, in Pebble.HTTPPort.
	HTTPPort int
	// TLSPort is the port it connects to for tls-alpn-01 challenges; 0: a
	// free port Start picks, in Pebble.TLSPort.
	TLSPort int
	// ValidityPeriod is the lifetime of the certificates Pebble issues,
	// rounded up to whole seconds (Pebble sets NotAfter one second short
	// of NotBefore plus the period); 0: Pebble's default, 90 days.
	ValidityPeriod time.Duration
}

// Pebble is a running ACME server.
type Pebble struct {
	// DirectoryURL is the ACME directory: https://127.0.0.1:P/dir, served
	// with a certificate ClientRoots trusts.
	DirectoryURL string
	// ManagementURL is Pebble's management API (the roots and
	// intermediates it issues with), over the same HTTPS.
	ManagementURL string
	// ChallSrvURL is pebble-challtestsrv's management API (plain HTTP),
	// which sets the DNS answers Pebble gets.
	ChallSrvURL string
	// DNSServer is the DNS server (host:port, TCP and UDP) Pebble
	// resolves names with. It answers A queries with 127.0.0.1 unless
	// AddA says otherwise, and AAAA queries with nothing.
	DNSServer string
	// HTTPPort and TLSPort are the ports Pebble validates http-01 and
	// tls-alpn-01 challenges on.
	HTTPPort, TLSPort int

	rootsPEM []byte
	roots    *x509.CertPool
}

// ClientRoots returns a pool that trusts Pebble's own HTTPS: what an ACME
// client needs to reach DirectoryURL (not the roots of the certificates
// Pebble issues: see IssuerRoots).
func (p *Pebble) ClientRoots() *x509.CertPool { return p.roots.Clone() }

// ClientRootsPEM returns ClientRoots' certificate in PEM.
func (p *Pebble) ClientRootsPEM() []byte { return bytes.Clone(p.rootsPEM) }

// HTTPClient returns a client that trusts Pebble's own HTTPS and never
// goes through a proxy: an acme.Client's HTTPClient.
func (p *Pebble) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tlsConfig(p.roots),
		Proxy:               nil,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// IssuerRoots fetches the roots Pebble signs issued certificates with
// (chained through intermediates it sends with them) from its management
// API: /roots/0, and /roots/1 and on when it has alternate chains. They
// are made afresh each time Pebble starts. It returns them as a pool and
// in PEM.
func (p *Pebble) IssuerRoots(ctx context.Context) (*x509.CertPool, []byte, error) {
	c := p.HTTPClient()
	defer c.CloseIdleConnections()
	pool := x509.NewCertPool()
	var all []byte
	for i := 0; i < 100; i++ {
		u := p.ManagementURL + "/roots/" + strconv.Itoa(i)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, nil, err
		}
		res, err := c.Do(req)
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", u, err)
		}
		if res.StatusCode == http.StatusNotFound && i > 0 {
			break
		}
		if res.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %s", u, res.Status)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, fmt.Errorf("GET %s: no certificate in %q", u, b)
		}
		all = append(all, b...)
	}
	return pool, all, nil
}

// AddA makes the DNS server answer A queries for host with ip (on top of
// any addresses added before) instead of 127.0.0.1.
func (p *Pebble) AddA(ctx context.Context, host, ip string) error {
	return challSrvPost(ctx, p.ChallSrvURL, "/add-a", map[string]any{"host": host, "addresses": []string{ip}})
}

// challSrvPost posts a JSON request to pebble-challtestsrv's management
// API.
func challSrvPost(ctx context.Context, base, path string, body any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	res, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("pebble-challtestsrv %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 1000))
		return fmt.Errorf("pebble-challtestsrv %s: %s %s", path, res.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// StartT starts Pebble on loopback for the test (files in t.TempDir())
// and stops it at cleanup. Without Pebble the test fails: it never skips.
func StartT(t testing.TB, o Options) *Pebble {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begun := time.Now()
	p, stop, err := Start(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatalf("start Pebble: %v", err)
	}
	t.Cleanup(stop)
	t.Logf("Pebble at %s up in %s", p.DirectoryURL, time.Since(begun).Round(time.Millisecond))
	return p
}

// Start starts pebble-challtestsrv (its DNS server only) and Pebble on
// loopback, their configuration and logs (challtestsrv.log, pebble.log)
// in a subdirectory of dir, and waits until the DNS server answers as
// told and Pebble serves its directory and first root. stop kills both
// process groups and waits for them; it may be called more than once. It
// tries up to three times with fresh ports (another process may take one
// first).
//
// Pebble runs with PEBBLE_VA_NOSLEEP=1 (it validates challenges at once,
// not after up to 5 s), PEBBLE_WFE_NONCEREJECT=0 (no random badNonce
// errors, which clients retry anyway) and PEBBLE_AUTHZREUSE=0 (every
// order is validated afresh), and an ECDSA issuing hierarchy.
func Start(ctx context.Context, dir string, o Options) (p *Pebble, stop func(), err error) {
	pebble, challtestsrv, certDir, err := Binaries()
	if err != nil {
		return nil, nil, err
	}
	if err := checkCert(filepath.Join(certDir, "localhost", "cert.pem")); err != nil {
		return nil, nil, err
	}
	for try := 1; ; try++ {
		p, stop, err = start(ctx, pebble, challtestsrv, certDir, dir, o, try)
		if err == nil || ctx.Err() != nil || try == 3 {
			return p, stop, err
		}
	}
}

// checkCert fails once the certificate of Pebble's own HTTPS, which
// comes with Pebble's source, has expired.
func checkCert(name string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return fmt.Errorf("no certificate in %s", name)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if time.Now().After(c.NotAfter) {
		return fmt.Errorf("%s (Pebble's own HTTPS certificate, from its source) expired on %s: move scripts/pebble-setup.sh to a newer Pebble", name, c.NotAfter.Format(time.DateOnly))
	}
	return nil
}

// process is one server process.
type process struct {
	cmd     *exec.Cmd
	log     string
	exited  chan struct{}
	release func() // lets the thread that started it end
	once    sync.Once
}

func start(ctx context.Context, pebble, challtestsrv, certDir, dir string, o Options, try int) (*Pebble, func(), error) {
	rootsPEM, err := os.ReadFile(filepath.Join(certDir, "pebble.minica.pem"))
	if err != nil {
		return nil, nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootsPEM) {
		return nil, nil, fmt.Errorf("no certificate in %s", filepath.Join(certDir, "pebble.minica.pem"))
	}
	run := filepath.Join(dir, fmt.Sprintf("pebble-%d", try))
	if err := os.MkdirAll(run, 0o700); err != nil {
		return nil, nil, err
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, nil, err
	}
	p := &Pebble{
		DirectoryURL:  "https://" + loopback(ports[0]) + "/dir",
		ManagementURL: "https://" + loopback(ports[1]),
		ChallSrvURL:   "http://" + loopback(ports[2]),
		DNSServer:     loopback(ports[3]),
		HTTPPort:      o.HTTPPort,
		TLSPort:       o.TLSPort,
		rootsPEM:      rootsPEM,
		roots:         roots,
	}
	if p.HTTPPort == 0 {
		p.HTTPPort = ports[4]
	}
	if p.TLSPort == 0 {
		p.TLSPort = ports[5]
	}
	cfg := map[string]any{
		"listenAddress":           loopback(ports[0]),
		"managementListenAddress": loopback(ports[1]),
		"certificate":             filepath.Join(certDir, "localhost", "cert.pem"),
		"privateKey":              filepath.Join(certDir, "localhost", "key.pem"),
		"httpPort":                p.HTTPPort,
		"tlsPort":                 p.TLSPort,
		"ocspResponderURL":        "",
		"keyAlgorithm":            "ecdsa",
	}
	if o.ValidityPeriod > 0 {
		// The one profile, so orders that name none (Pebble picks one at
		// random then) get it too.
		secs := (o.ValidityPeriod + time.Second - 1) / time.Second
		cfg["profiles"] = map[string]any{"default": map[string]any{
			"description":    "bureau pebbletest",
			"validityPeriod": int64(secs),
		}}
	}
	b, _ := json.MarshalIndent(map[string]any{"pebble": cfg}, "", "\t")
	config := filepath.Join(run, "pebble.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return nil, nil, err
	}

	dns, err := startProcess(filepath.Join(run, "challtestsrv.log"), run, nil, challtestsrv,
		"-management="+loopback(ports[2]), "-dnsserver="+p.DNSServer,
		"-defaultIPv4=127.0.0.1", "-defaultIPv6=",
		"-http01=", "-https01=", "-tlsalpn01=", "-doh=")
	if err != nil {
		return nil, nil, err
	}
	if err := dnsReady(ctx, p, dns.exited); err != nil {
		dns.stop()
		return nil, nil, fmt.Errorf("pebble-challtestsrv (log %s): %w%s", dns.log, err, logTail(dns.log))
	}
	ca, err := startProcess(filepath.Join(run, "pebble.log"), run,
		[]string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"},
		pebble, "-config="+config, "-dnsserver="+p.DNSServer)
	if err != nil {
		dns.stop()
		return nil, nil, err
	}
	stop := func() {
		ca.stop()
		dns.stop()
	}
	if err := pebbleReady(ctx, p, ca.exited); err != nil {
		stop()
		return nil, nil, fmt.Errorf("Pebble (log %s): %w%s", ca.log, err, logTail(ca.log))
	}
	return p, stop, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// startProcess starts bin in a process group of its own, in dir, with
// env on top of the test's environment and its output in logName.
func startProcess(logName, dir string, env []string, bin string, args ...string) (*process, error) {
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
	s := &process{cmd: cmd, log: logName, exited: make(chan struct{}), release: release}
	go waitExit(cmd.Process.Pid, s.exited)
	return s, nil
}

// stop kills the process's whole group and reaps it. The leader is
// reaped only after the group is killed, so the group id cannot have been
// reused by then. Test data is thrown away: no graceful shutdown.
func (s *process) stop() {
	s.once.Do(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.cmd.Wait()
		s.release()
	})
}

// startPinned starts cmd from a thread of its own that lives until release
// is called. Linux sends Pdeathsig when the thread that forked the child
// ends, not the process: started from any thread of Go's pool, the server
// would be killed as soon as a goroutine locked that thread and ended with
// it (see backuptest, where a test found its S3 server gone half-way
// through).
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
// them between the pick and the servers' binds.
func freePorts(n int) ([]int, error) {
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free loopback ports in 15000-32000")
		}
		l, err := net.Listen("tcp", loopback(15000+mrand.IntN(17000)))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTail returns the end of a server's log for an error message.
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
	return "\n--- end of " + filepath.Base(name) + " ---\n" + string(b)
}
