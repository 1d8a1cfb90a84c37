//go:build e2e

// Package e2e boots real desktops through a real bureau server process,
// real libvirtd and the real desktop image. Boots are slow under software
// emulation, so each test boots one desktop and checks many things on it.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/netpolicy"
)

const adminToken = "e2e-admin-token-0123456789abcdef"

// server is a bureau process under test with its own data directory.
type server struct {
	t       *testing.T
	bin     string
	dataDir string
	dbURL   string
	url     string
	cmd     *exec.Cmd
	logPath string
	hv      *hv.Hypervisor
	// env is added to the server's environment (e.g. failpoints).
	env []string
	// exited is closed when the server process ends.
	exited chan struct{}
	// listen, base and client, when set (before start), are the address
	// it serves on, the URL it is reached by and the client that reaches
	// it (HTTPS tests); otherwise a free loopback port, http://, and
	// http.DefaultClient.
	listen, base string
	client       *http.Client
}

// httpClient is the client that reaches the server.
func (s *server) httpClient() *http.Client {
	if s.client != nil {
		return s.client
	}
	return http.DefaultClient
}

func repoRoot(t *testing.T) string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}

func newServer(t *testing.T) *server {
	t.Helper()
	needE2E(t)
	dataDir, err := os.MkdirTemp("/var/lib", "bureau-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	return newServerIn(t, dataDir)
}

// newServerWith is newServer with the server's settings changed by set
// before it first starts.
func newServerWith(t *testing.T, set func(*server)) *server {
	t.Helper()
	needE2E(t)
	dataDir, err := os.MkdirTemp("/var/lib", "bureau-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	return newServerSet(t, dataDir, set)
}

// needE2E skips a test that cannot run here, and fails one that would
// run on SQLite when PostgreSQL is required.
func needE2E(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("end-to-end tests need root (libvirt, loop devices)")
	}
	if os.Getenv("BUREAU_E2E_BIN") == "" {
		t.Skip("BUREAU_E2E_BIN not set: run through `make e2e`")
	}
	// make e2e-postgres: a PostgreSQL that did not start must not turn
	// this run into a second SQLite run.
	if os.Getenv("BUREAU_REQUIRE_POSTGRES") == "1" && os.Getenv("BUREAU_E2E_DATABASE_URL") == "" {
		t.Fatal("BUREAU_REQUIRE_POSTGRES=1 but BUREAU_E2E_DATABASE_URL is empty: PostgreSQL did not start")
	}
}

// newServerIn starts a server whose data directory is dataDir (emptied
// when the test ends).
func newServerIn(t *testing.T, dataDir string) *server {
	t.Helper()
	return newServerSet(t, dataDir, nil)
}

// newSQLiteServerIn starts a server in dataDir on its own SQLite database
// whatever the run's database: a second install beside a first one that
// may be on PostgreSQL (resetting the one PostgreSQL database would empty
// the first's).
func newSQLiteServerIn(t *testing.T, dataDir string) *server {
	t.Helper()
	return newServerDB(t, dataDir, "", nil)
}

func newServerSet(t *testing.T, dataDir string, set func(*server)) *server {
	t.Helper()
	return newServerDB(t, dataDir, os.Getenv("BUREAU_E2E_DATABASE_URL"), set)
}

// newServerDB starts a server in dataDir on dbURL (SQLite in dataDir when
// empty), set applied before it starts.
func newServerDB(t *testing.T, dataDir, dbURL string, set func(*server)) *server {
	t.Helper()
	bin := os.Getenv("BUREAU_E2E_BIN")
	var err error
	s := &server{t: t, bin: bin, dataDir: dataDir, dbURL: dbURL, logPath: filepath.Join(dataDir, "server.log")}
	if s.dbURL != "" {
		resetPostgres(t, s.dbURL)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			if b, err := os.ReadFile(s.logPath); err == nil {
				keep := filepath.Join(os.TempDir(), "bureau-e2e-"+strings.ReplaceAll(t.Name(), "/", "-")+".log")
				os.WriteFile(keep, b, 0o644)
				// Short, so that a CI page showing the end of the output
				// still shows the test's own failure messages above it.
				t.Logf("server log: all of it in %s; its last warnings and errors:\n%s", keep, tailBytes(warnings(b), 1536))
			}
		}
		s.removeVMs()
		os.RemoveAll(dataDir)
		// This instance's firewall tables go with its desktops.
		for _, family := range []string{"bridge", "inet"} {
			exec.Command("nft", "delete", "table", family, netpolicy.TableName(netpolicy.InstanceTag(dataDir))).Run()
		}
	})
	// The image build reuses the image cached for this recipe.
	out, err := exec.Command(bin, s.args("image", "build", "--recipe", filepath.Join(repoRoot(t), "images/desktop"))...).CombinedOutput()
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	t.Logf("image: %s", strings.TrimSpace(lastLine(string(out))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.hv, err = hv.Open(ctx, "qemu:///system", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(s)
	}
	s.start()
	return s
}

// removeVMs removes the VMs of this instance's desktop folders that are
// still defined: warm spares (never desktops, so no test deletes them) and
// any desktop a failed test left.
func (s *server) removeVMs() {
	if s.hv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	entries, _ := os.ReadDir(filepath.Join(s.dataDir, "desktops"))
	for _, e := range entries {
		name := domainOf(e.Name())
		if _, err := s.hv.State(ctx, name); err == nil {
			s.hv.Destroy(ctx, name)
			s.hv.Undefine(ctx, name)
		}
	}
}

// with returns a copy of s that reports to t (a subtest).
func (s *server) with(t *testing.T) *server {
	c := *s
	c.t = t
	return &c
}

func (s *server) args(a ...string) []string {
	a = append(a, "--data-dir", s.dataDir)
	if s.dbURL != "" {
		a = append(a, "--database", s.dbURL)
	}
	return a
}

func (s *server) start() {
	s.t.Helper()
	addr := s.listen
	if addr == "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd = exec.Command(s.bin, s.args("serve", "--listen", addr)...)
	// Idle tiers and memory pressure are off unless a test turns them on
	// (tiers_test.go): a check must not find its desktop napping.
	s.cmd.Env = append(append(os.Environ(), "BUREAU_ADMIN_TOKEN="+adminToken,
		"BUREAU_NAP_AFTER_SECONDS=0", "BUREAU_SLEEP_AFTER_SECONDS=0", "BUREAU_IDLE_CHECK_SECONDS=3", "BUREAU_MEMORY_LOW_MIB=0"), s.env...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited, cmd := make(chan struct{}), s.cmd
	s.exited = exited
	go func() { cmd.Wait(); close(exited) }()
	s.url = "http://" + addr
	if s.base != "" {
		s.url = s.base
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := s.httpClient().Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatal("bureau serve did not come up")
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// call sends an API request and decodes the JSON reply into out.
func (s *server) call(token, method, path string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		if raw, ok := body.(string); ok {
			rd = strings.NewReader(raw)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if b, ok := out.(*[]byte); ok {
			*b = data
		} else if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// putRaw PUTs a body with a content type and returns the status.
func (s *server) putRaw(token, path, ctype string, body []byte) int {
	s.t.Helper()
	req, _ := http.NewRequest("PUT", s.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ctype)
	resp, err := s.httpClient().Do(req)
	if err != nil {
		s.t.Fatalf("PUT %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

type apiErr struct {
	Error struct {
		Code, Message, Field, State string
		Up                          string `json:"up"`
		WaitingFor                  string `json:"waiting_for"`
	} `json:"error"`
}

// expectError checks status and error code of a refused request.
func (s *server) expectError(token, method, path string, body any, status int, code string) apiErr {
	s.t.Helper()
	var e apiErr
	if got := s.call(token, method, path, body, &e); got != status || e.Error.Code != code {
		s.t.Errorf("%s %s: got %d %+v, want %d %s", method, path, got, e.Error, status, code)
	}
	return e
}

// waitState polls the desktop until it reaches want (or fails).
func (s *server) waitState(token, id string, want desktop.State, timeout time.Duration) *apiv1.Desktop {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var d apiv1.Desktop
	for time.Now().Before(deadline) {
		s.call(token, "GET", "/api/v1/desktops/"+id, nil, &d)
		if d.State == string(want) {
			return &d
		}
		if d.State == string(desktop.StateError) {
			s.t.Fatalf("desktop %s went to error: %s", id, d.LastError)
		}
		time.Sleep(time.Second)
	}
	s.t.Fatalf("desktop %s is %s after %s, want %s", id, d.State, timeout, want)
	return nil
}

// domainOf is the libvirt domain of the desktop with this id.
func domainOf(id string) string { return (&desktop.Desktop{ID: id}).DomainName() }

// guest runs a shell command in the desktop through the guest agent.
func (s *server) guest(d *apiv1.Desktop, script string) (string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.hv.GuestExec(ctx, domainOf(d.ID), desktop.Exec{Argv: []string{"/bin/sh", "-c", script}})
	if err != nil {
		s.t.Fatalf("guest exec %q: %v", script, err)
	}
	return strings.TrimSpace(string(res.Stdout) + string(res.Stderr)), res.ExitCode
}

// waitGuest polls a guest command until it succeeds.
func (s *server) waitGuest(d *apiv1.Desktop, what, script string, timeout time.Duration) time.Duration {
	s.t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := s.hv.GuestExec(ctx, domainOf(d.ID), desktop.Exec{Argv: []string{"/bin/sh", "-c", script}})
		cancel()
		if err == nil && res.ExitCode == 0 {
			return time.Since(start)
		}
		time.Sleep(2 * time.Second)
	}
	s.t.Fatalf("%s: not true after %s (%s)", what, timeout, script)
	return 0
}

func (s *server) waitAgent(d *apiv1.Desktop, timeout time.Duration) time.Duration {
	s.t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := s.hv.GuestPing(ctx, domainOf(d.ID))
		cancel()
		if err == nil {
			return time.Since(start)
		}
		time.Sleep(time.Second)
	}
	s.t.Fatalf("guest agent of %s silent after %s", d.Name, timeout)
	return 0
}

func (s *server) vmState(d *apiv1.Desktop) desktop.VMState {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s.hv.State(ctx, domainOf(d.ID))
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

func resetPostgres(t *testing.T, url string) {
	out, err := exec.Command("psql", url, "-q", "-c", "DROP SCHEMA public CASCADE; CREATE SCHEMA public;").CombinedOutput()
	if err != nil {
		t.Fatalf("reset postgres: %v\n%s", err, out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// warnings keeps a server log's WARN and ERROR lines.
func warnings(log []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(l, []byte(`"level":"WARN"`)) || bytes.Contains(l, []byte(`"level":"ERROR"`)) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}
