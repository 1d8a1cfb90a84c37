package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// pipeDialer runs a real agent server in-process for every dial, over a
// pipe, as a virtio-serial port would carry it.
type pipeDialer struct {
	srv   atomic.Pointer[server.Server]
	dials atomic.Int32
	down  atomic.Bool
	mu    sync.Mutex
	ends  []*gated
}

// gated is the agent's end of a connection; once frozen it reads and
// drops everything and answers nothing, without closing (as a guest
// reverted or rebooted behind QEMU's socket).
type gated struct {
	net.Conn
	mine atomic.Bool
}

func (g *gated) Read(p []byte) (int, error) {
	for {
		n, err := g.Conn.Read(p)
		if err != nil || !g.mine.Load() {
			return n, err
		}
	}
}

func (g *gated) Write(p []byte) (int, error) {
	if g.mine.Load() {
		return len(p), nil
	}
	return g.Conn.Write(p)
}

// freeze silences every existing connection.
func (p *pipeDialer) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.ends {
		c.mine.Store(true)
	}
}

func (p *pipeDialer) DialAgent(ctx context.Context, domain string) (net.Conn, error) {
	if p.down.Load() {
		return nil, errors.New("no channel")
	}
	p.dials.Add(1)
	a, pb := net.Pipe()
	b := &gated{Conn: pb}
	go p.srv.Load().ServeConn(context.Background(), b)
	p.mu.Lock()
	p.ends = append(p.ends, b)
	p.mu.Unlock()
	return a, nil
}

// cut breaks every connection, as a VM restart does.
func (p *pipeDialer) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.ends {
		c.Close()
	}
	p.ends = nil
}

func newPair(t *testing.T) (*Client, *pipeDialer) {
	t.Helper()
	srv := &server.Server{Info: wire.Info{SHA256: "same", Version: "test"}, StateDir: t.TempDir()}
	if err := srv.Init(); err != nil {
		t.Fatal(err)
	}
	d := &pipeDialer{}
	d.srv.Store(srv)
	c, err := New(d, "", slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	return c, d
}

// hangGuard bounds waits for what must happen: long enough for a busy
// machine, it only turns a hang into a failure.
const hangGuard = 30 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return c
}

// waitFile waits until path exists (false: not within the hang guard).
func waitFile(path string) bool {
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

type collect struct {
	mu       sync.Mutex
	out, err bytes.Buffer
}

func (c *collect) write(stream string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stream == "stdout" {
		c.out.Write(b)
	} else {
		c.err.Write(b)
	}
	return nil
}

func sh(script string) Command {
	return Command{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "X=42"}}
}

func TestExecPipesStdinExitAndEnv(t *testing.T) {
	c, _ := newPair(t)
	var out collect
	ex, err := c.Exec(ctx(t), "d", sh(`cat; echo "x=$X" >&2; exit 3`), ExecIO{Stdin: strings.NewReader("from stdin\n"), Out: out.write})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Code != 3 || out.out.String() != "from stdin\n" || out.err.String() != "x=42\n" {
		t.Fatalf("exit %+v stdout %q stderr %q", ex, out.out.String(), out.err.String())
	}
	// Output comes while the command runs, not at its end: the command
	// goes on only once its first output has reached the caller.
	seen := filepath.Join(t.TempDir(), "seen")
	var streamed collect
	ex, err = c.Exec(ctx(t), "d", sh(`echo early; while [ ! -e `+seen+` ]; do sleep 0.02; done; echo late`), ExecIO{Out: func(s string, b []byte) error {
		if strings.Contains(string(b), "early") {
			os.WriteFile(seen, nil, 0o600)
		}
		return streamed.write(s, b)
	}})
	if err != nil || ex.Code != 0 || streamed.out.String() != "early\nlate\n" {
		t.Fatalf("first output not streamed while the command ran: %v, exit %+v, stdout %q", err, ex, streamed.out.String())
	}
}

// The case: a server started in the background must not hold the
// call until it exits.
func TestExecReturnsWhileABackgroundChildHoldsTheOutput(t *testing.T) {
	c, _ := newPair(t)
	var out collect
	// The child runs until the test lets it end, after the call returned.
	dir := t.TempDir()
	end, ended := filepath.Join(dir, "end"), filepath.Join(dir, "ended")
	t.Cleanup(func() { os.WriteFile(end, nil, 0o600) })
	ex, err := c.Exec(ctx(t), "d", sh(`(while [ ! -e `+end+` ]; do sleep 0.02; done; touch `+ended+`) & echo started`), ExecIO{Out: out.write})
	if err != nil || ex.Code != 0 || out.out.String() != "started\n" {
		t.Fatalf("exit %+v, stdout %q: %v", ex, out.out.String(), err)
	}
	if _, err := os.Stat(ended); err == nil {
		t.Fatal("the call waited for the background child")
	}
	os.WriteFile(end, nil, 0o600)
	if !waitFile(ended) {
		t.Fatal("the background child did not go on after the call returned")
	}
}

func TestExecCancelStopsTheCommand(t *testing.T) {
	c, _ := newPair(t)
	dir := t.TempDir()
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The caller goes away once the command runs with its trap set.
	_, err := c.Exec(cctx, "d", sh(`trap 'touch `+dir+`/stopped; exit 1' TERM; echo ready; while :; do sleep 0.1; done`), ExecIO{Out: func(_ string, b []byte) error {
		if strings.Contains(string(b), "ready") {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled exec: %v", err)
	}
	if !waitFile(filepath.Join(dir, "stopped")) {
		t.Fatal("the command was not stopped when the caller went away")
	}
}

func TestBackgroundProcesses(t *testing.T) {
	c, _ := newPair(t)
	p, err := c.Spawn(ctx(t), "d", "ticker", sh(`echo one; echo two >&2; sleep 30`))
	if err != nil || p.ID == "" || p.PID == 0 {
		t.Fatalf("%+v %v", p, err)
	}
	// Until both lines are in its log.
	var list []Proc
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(20 * time.Millisecond) {
		list, err = c.Procs(ctx(t), "d")
		if err != nil || len(list) != 1 || list[0].LogBytes >= int64(len("one\ntwo\n")) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(list) != 1 || !list[0].Running || list[0].Name != "ticker" || list[0].LogBytes == 0 {
		t.Fatalf("%+v %v", list, err)
	}
	var log bytes.Buffer
	if err := c.Log(ctx(t), "d", p.ID, 0, false, &log); err != nil || log.String() != "one\ntwo\n" {
		t.Fatalf("log %q %v", log.String(), err)
	}
	log.Reset()
	if err := c.Log(ctx(t), "d", p.ID, -4, false, &log); err != nil || log.String() != "two\n" {
		t.Fatalf("tail %q %v", log.String(), err)
	}
	// A follow ends when the process does.
	followed := make(chan error, 1)
	var flog bytes.Buffer
	go func() { followed <- c.Log(ctx(t), "d", p.ID, 0, true, &flog) }()
	time.Sleep(200 * time.Millisecond)
	if err := c.Kill(ctx(t), "d", p.ID, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-followed:
		if err != nil || flog.String() != "one\ntwo\n" {
			t.Fatalf("follow %q %v", flog.String(), err)
		}
	case <-time.After(hangGuard):
		t.Fatal("follow did not end with the process")
	}
	list, _ = c.Procs(ctx(t), "d")
	if list[0].Running || list[0].ExitCode == nil || *list[0].ExitCode != 128+15 {
		t.Fatalf("after kill: %+v", list[0])
	}
	if err := c.Kill(ctx(t), "d", "p-nope", 0); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("unknown process: %v", err)
	}
}

func TestFilesRoundTrip(t *testing.T) {
	c, _ := newPair(t)
	dir := t.TempDir()
	data := make([]byte, 5<<20+123)
	rand.Read(data)
	n, err := c.WriteFile(ctx(t), "d", filepath.Join(dir, "f"), 0o640, bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("%d %v", n, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "f")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	var back bytes.Buffer
	size, err := c.ReadFile(ctx(t), "d", filepath.Join(dir, "f"), &back)
	if err != nil || size != int64(len(data)) || sha256.Sum256(back.Bytes()) != sha256.Sum256(data) {
		t.Fatalf("read back %d bytes (size %d): %v", back.Len(), size, err)
	}
	// The file must be new; a missing one is not found; a directory is not a file.
	if _, err := c.WriteFile(ctx(t), "d", filepath.Join(dir, "f"), 0, strings.NewReader("x")); err == nil {
		t.Error("overwrote an existing file")
	}
	if _, err := c.ReadFile(ctx(t), "d", filepath.Join(dir, "nope"), io.Discard); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("missing file: %v", err)
	}
	var ve *desktop.ValidationError
	if _, err := c.ReadFile(ctx(t), "d", dir, io.Discard); !errors.As(err, &ve) {
		t.Errorf("directory: %v", err)
	}
	// An upload cut short, once the file is begun, leaves nothing.
	cut := filepath.Join(dir, "cut")
	cctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, 1<<20))
		waitFile(cut)
		cancel()
		time.Sleep(100 * time.Millisecond)
		pw.CloseWithError(errors.New("client gone"))
	}()
	if _, err := c.WriteFile(cctx, "d", cut, 0, pr); err == nil {
		t.Error("cut upload succeeded")
	}
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(cut)
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a cut upload left a file: %v", err)
		}
	}
}

func TestDialPort(t *testing.T) {
	c, _ := newPair(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		s, err := l.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(s)
		s.Write(bytes.ToUpper(b))
		s.Close()
	}()
	conn, err := c.DialPort(ctx(t), "d", l.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("hello guest"))
	conn.Close() // half-close: the answer still comes back
	got, _ := io.ReadAll(conn)
	if string(got) != "HELLO GUEST" {
		t.Fatalf("%q", got)
	}
	if _, err := c.DialPort(ctx(t), "d", 1); err == nil {
		t.Error("dial to a closed port succeeded")
	}
}

func TestPTY(t *testing.T) {
	c, _ := newPair(t)
	term, err := c.PTY(ctx(t), "d", Command{Argv: []string{"/bin/sh"}, Env: []string{"PATH=/usr/bin:/bin", "PS1=$ "}}, 30, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	term.Input([]byte("stty size; echo $((6*7)); exit 5\n"))
	var screen bytes.Buffer
	ex, err := term.Output(func(b []byte) error { screen.Write(b); return nil })
	if err != nil || ex.Code != 5 || !strings.Contains(screen.String(), "30 100") || !strings.Contains(screen.String(), "42") {
		t.Fatalf("exit %+v %v screen %q", ex, err, screen.String())
	}
}

// A session whose agent went silent without the socket closing (the guest
// was reverted or rebooted behind QEMU's socket) is found by a ping after
// it sat idle, and dialled again.
func TestSilentSessionIsDialledAgain(t *testing.T) {
	defer func(a, b time.Duration) { checkAfter, pingWithin = a, b }(checkAfter, pingWithin)
	checkAfter, pingWithin = 50*time.Millisecond, 300*time.Millisecond
	c, d := newPair(t)
	run := func() error {
		_, err := c.Exec(ctx(t), "d", sh("echo hi"), ExecIO{Out: func(string, []byte) error { return nil }})
		return err
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	d.freeze()
	time.Sleep(100 * time.Millisecond) // idle past checkAfter
	// The call gives up before a stale session's header timeout could
	// find it silent: only the ping before use can.
	c2, cancel := context.WithTimeout(context.Background(), headerWithin*2/3)
	defer cancel()
	if _, err := c.Exec(c2, "d", sh("echo hi"), ExecIO{Out: func(string, []byte) error { return nil }}); err != nil {
		t.Fatalf("after the agent went silent: %v", err)
	}
	if d.dials.Load() != 2 {
		t.Errorf("%d dials, want 2", d.dials.Load())
	}
}

// A session that breaks (the VM restarted) is dialled again; an agent
// that does not answer is reported as missing and not asked again at once.
func TestReconnectAndMissingAgent(t *testing.T) {
	c, d := newPair(t)
	run := func() error {
		_, err := c.Exec(ctx(t), "d", sh("true"), ExecIO{Out: func(string, []byte) error { return nil }})
		return err
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	d.cut()
	time.Sleep(50 * time.Millisecond)
	if err := run(); err != nil {
		t.Fatalf("after the session broke: %v", err)
	}
	if d.dials.Load() != 2 {
		t.Errorf("%d dials", d.dials.Load())
	}
	d.down.Store(true)
	d.cut()
	c.Forget("d")
	if err := run(); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("no agent: %v", err)
	}
	d.down.Store(false)
	if err := run(); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("asked again at once: %v", err)
	}
}

// An agent whose binary differs from the shipped one is sent it and
// restarts into it.
func TestUpdate(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bureau-agent")
	os.WriteFile(exe, []byte("old"), 0o755)
	ship := filepath.Join(dir, "shipped")
	os.WriteFile(ship, []byte("new binary"), 0o755)
	sum := sha256.Sum256([]byte("new binary"))
	var restarts atomic.Int32
	d := &pipeDialer{}
	srv := &server.Server{Info: wire.Info{SHA256: "old", Version: "v0"}, StateDir: t.TempDir(), Exe: exe}
	srv.Restart = func() {
		restarts.Add(1)
		b, _ := os.ReadFile(exe)
		s := sha256.Sum256(b)
		next := &server.Server{Info: wire.Info{SHA256: hexs(s[:]), Version: "v1"}, StateDir: t.TempDir()}
		next.Init()
		d.srv.Store(next)
		d.cut()
	}
	srv.Init()
	d.srv.Store(srv)
	c, err := New(d, ship, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx(t), "d")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(exe); string(b) != "new binary" || restarts.Load() != 1 || info.SHA256 != hexs(sum[:]) {
		t.Fatalf("binary %q, %d restarts, info %+v", b, restarts.Load(), info)
	}
}

func hexs(b []byte) string {
	const h = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, h[c>>4], h[c&15])
	}
	return string(out)
}

// A call that found a desktop's entry just before Forget dropped it (the
// VM was stopped, reimaged or reverted) makes its session on the live
// entry, not on the dropped one, where nothing would ever close it and
// QEMU's channel, which serves one client at a time, would stay taken.
func TestForgetDuringCall(t *testing.T) {
	c, d := newPair(t)
	old := c.entry("d")
	old.mu.Lock() // a call on it is under way
	found := make(chan struct{}, 1)
	testHookEntry = func() {
		select {
		case found <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookEntry = nil })
	done := make(chan error, 1)
	go func() {
		_, err := c.Info(ctx(t), "d")
		done <- err
	}()
	<-found // the call holds the old entry and waits for it
	forgot := make(chan struct{})
	go func() {
		c.Forget("d")
		close(forgot)
	}()
	for {
		c.mu.Lock()
		_, still := c.conns["d"]
		c.mu.Unlock()
		if !still {
			break
		}
		time.Sleep(time.Millisecond)
	}
	old.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-forgot
	if old.sess != nil {
		t.Error("a session was made on the dropped entry")
	}
	c.mu.Lock()
	live := c.conns["d"]
	c.mu.Unlock()
	if live == nil || live.sess == nil || live.sess.IsClosed() {
		t.Fatalf("the call's session is not the desktop's live one: %+v", live)
	}
	if d.dials.Load() != 1 {
		t.Errorf("%d dials", d.dials.Load())
	}
}
