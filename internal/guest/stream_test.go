package guest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
)

// step is what the simulated command does between two status polls.
type step struct {
	stdout, stderr string
	exit           *int // exits with this code
}

// fakeAgent is a guest whose files live in memory and whose streamed
// command advances one step at each guest-exec-status, so output grows
// over time and the command exits later, deterministically.
type fakeAgent struct {
	mu      sync.Mutex
	files   map[string][]byte
	handles map[int64]*fakeHandle
	next    int64
	steps   []step
	polls   int
	exited  bool
	code    int
	killed  bool
	started desktop.Exec
	execs   [][]string // every GuestExec argv
}

type fakeHandle struct {
	path string
	off  int64
	eof  bool // sticky, as glibc's: only a seek clears it
}

func newFakeAgent(steps ...step) *fakeAgent {
	return &fakeAgent{files: map[string][]byte{}, handles: map[int64]*fakeHandle{}, steps: steps}
}

const fakeDir = "/tmp/bureau-exec.AbC123"

func (f *fakeAgent) GuestExec(_ context.Context, _ string, e desktop.Exec) (*desktop.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, e.Argv)
	switch {
	case len(e.Argv) == 3 && e.Argv[2] == streamSetup:
		f.files[fakeDir+"/stdout"], f.files[fakeDir+"/stderr"] = nil, nil
		return &desktop.ExecResult{Stdout: []byte(fakeDir)}, nil
	case len(e.Argv) == 6 && e.Argv[2] == streamCleanup:
		if e.Argv[5] != "" && !f.exited {
			f.killed, f.exited, f.code = true, true, 143
		}
		for p := range f.files {
			if strings.HasPrefix(p, e.Argv[4]+"/") {
				delete(f.files, p)
			}
		}
		return &desktop.ExecResult{}, nil
	}
	return nil, errors.New("unexpected command")
}

func (f *fakeAgent) GuestExecStart(_ context.Context, _ string, e desktop.Exec) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = e
	return 4242, nil
}

func (f *fakeAgent) GuestExecStatus(_ context.Context, _ string, pid int) (bool, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pid != 4242 {
		return false, 0, errors.New("no such pid")
	}
	if !f.exited && f.polls < len(f.steps) {
		s := f.steps[f.polls]
		f.files[fakeDir+"/stdout"] = append(f.files[fakeDir+"/stdout"], s.stdout...)
		f.files[fakeDir+"/stderr"] = append(f.files[fakeDir+"/stderr"], s.stderr...)
		if s.exit != nil {
			f.exited, f.code = true, *s.exit
		}
	}
	f.polls++
	return f.exited, f.code, nil
}

func (f *fakeAgent) GuestFileOpen(_ context.Context, _, path, mode string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[path]; !ok || mode != "r" {
		return 0, errors.New("no such file")
	}
	f.next++
	f.handles[f.next] = &fakeHandle{path: path}
	return f.next, nil
}

func (f *fakeAgent) GuestFileRead(_ context.Context, _ string, h int64, n int) ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fh, ok := f.handles[h]
	if !ok {
		return nil, false, errors.New("bad handle")
	}
	if fh.eof {
		return nil, true, nil
	}
	b := f.files[fh.path][fh.off:]
	if len(b) > n {
		b = b[:n]
	}
	fh.off += int64(len(b))
	fh.eof = fh.off >= int64(len(f.files[fh.path]))
	return append([]byte(nil), b...), fh.eof, nil
}

func (f *fakeAgent) GuestFileSeek(_ context.Context, _ string, h, off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fh, ok := f.handles[h]
	if !ok {
		return errors.New("bad handle")
	}
	fh.off, fh.eof = off, false
	return nil
}

func (f *fakeAgent) GuestFileWrite(context.Context, string, int64, []byte) error {
	return errors.New("not used")
}

func (f *fakeAgent) GuestFileClose(_ context.Context, _ string, h int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.handles, h)
	return nil
}

// event is what a recorder saw: a chunk and whether the command had
// exited when it arrived.
type event struct {
	stream, data string
	exited       bool
}

type recorder struct {
	f       *fakeAgent
	started bool
	events  []event
	onData  func() error
}

func (r *recorder) Started() error { r.started = true; return nil }

func (r *recorder) Output(stream string, b []byte) error {
	r.f.mu.Lock()
	exited := r.f.exited
	r.f.mu.Unlock()
	r.events = append(r.events, event{stream, string(b), exited})
	if r.onData != nil {
		return r.onData()
	}
	return nil
}

func (r *recorder) text(stream string) string {
	var b strings.Builder
	for _, e := range r.events {
		if e.stream == stream {
			b.WriteString(e.data)
		}
	}
	return b.String()
}

func exitWith(code int) *int { return &code }

func testService(f *fakeAgent) *Service {
	s := New(f)
	s.poll = time.Millisecond
	return s
}

func TestExecStreamIsIncrementalAndOrdered(t *testing.T) {
	f := newFakeAgent(
		step{stdout: "one\n"},
		step{},
		step{stderr: "warn\n"},
		step{stdout: "two\n"},
		step{},
		step{stdout: "three\n", exit: exitWith(3)},
	)
	rec := &recorder{f: f}
	res, err := testService(f).ExecStream(context.Background(), "dom", ExecRequest{Cmd: "echo one; sleep 1; echo two", Cwd: "/srv", User: "root", TimeoutS: 90}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Truncated || res.TimedOut {
		t.Errorf("result %+v", res)
	}
	want := []event{{"stdout", "one\n", false}, {"stderr", "warn\n", false}, {"stdout", "two\n", false}, {"stdout", "three\n", true}}
	if len(rec.events) != len(want) {
		t.Fatalf("events %+v, want %+v", rec.events, want)
	}
	for i := range want {
		if rec.events[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, rec.events[i], want[i])
		}
	}
	// The command: a launcher sending output to the private directory,
	// then the same timeout/runuser command line Exec runs.
	argv := f.started.Argv
	if len(argv) < 5 || argv[0] != "/bin/sh" || argv[2] != streamLaunch || argv[4] != fakeDir {
		t.Fatalf("launch %q", argv)
	}
	full, _, _ := testService(f).command(ExecRequest{Cmd: "echo one; sleep 1; echo two", User: "root", TimeoutS: 90})
	if strings.Join(argv[5:], "\x00") != strings.Join(full, "\x00") || full[2] != "90" {
		t.Errorf("command %q, want %q", argv[5:], full)
	}
	if !strings.Contains(strings.Join(f.started.Env, " "), "BUREAU_CWD=/srv") {
		t.Errorf("env %q", f.started.Env)
	}
	// Finished: handles closed, directory gone, nothing killed.
	if len(f.handles) != 0 || len(f.files) != 0 || f.killed {
		t.Errorf("after the exit: handles %v files %v killed %v", f.handles, f.files, f.killed)
	}
	last := f.execs[len(f.execs)-1]
	if last[2] != streamCleanup || last[4] != fakeDir || last[5] != "" {
		t.Errorf("cleanup %q", last)
	}
}

func TestExecStreamCapTruncates(t *testing.T) {
	f := newFakeAgent(
		step{stdout: "hello ", stderr: "e"},
		step{stdout: "world, this is more than the cap"},
		step{stdout: "and more", stderr: "rr", exit: exitWith(0)},
	)
	rec := &recorder{f: f}
	res, err := testService(f).ExecStream(context.Background(), "dom", ExecRequest{Cmd: "yes", MaxOutputBytes: 8}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
	if got := rec.text("stdout"); got != "hello wo" {
		t.Errorf("stdout %q", got)
	}
	if got := rec.text("stderr"); got != "err" {
		t.Errorf("stderr %q", got)
	}
}

func TestExecStreamKeepsCharactersWhole(t *testing.T) {
	f := newFakeAgent(
		step{stdout: "caf\xc3"},
		step{stdout: "\xa9 ok"},
		step{stdout: "\xe2\x82", exit: exitWith(0)}, // cut short by the exit
	)
	rec := &recorder{f: f}
	if _, err := testService(f).ExecStream(context.Background(), "dom", ExecRequest{Cmd: "x"}, rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != 3 || rec.events[0].data != "caf" || rec.events[1].data != "é ok" || rec.events[2].data != "\xe2\x82" {
		t.Errorf("events %+v", rec.events)
	}
	for _, e := range rec.events[:2] {
		if !utf8.ValidString(e.data) {
			t.Errorf("chunk %q is not UTF-8", e.data)
		}
	}
}

func TestExecStreamClientGoneKillsAndCleansUp(t *testing.T) {
	steps := []step{{stdout: "working\n"}}
	for range 1000 {
		steps = append(steps, step{}) // never exits on its own
	}
	f := newFakeAgent(steps...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{f: f, onData: func() error { cancel(); return nil }}
	_, err := testService(f).ExecStream(ctx, "dom", ExecRequest{Cmd: "sleep infinity"}, rec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if !f.killed || len(f.files) != 0 || len(f.handles) != 0 {
		t.Errorf("killed %v files %v handles %v", f.killed, f.files, f.handles)
	}
	last := f.execs[len(f.execs)-1]
	if last[2] != streamCleanup || last[4] != fakeDir || last[5] != "4242" {
		t.Errorf("cleanup %q", last)
	}
	// A reader that fails (a broken connection) stops the command too.
	f = newFakeAgent(steps...)
	rec = &recorder{f: f, onData: func() error { return errors.New("broken pipe") }}
	if _, err := testService(f).ExecStream(context.Background(), "dom", ExecRequest{Cmd: "sleep infinity"}, rec); err == nil || !f.killed || len(f.files) != 0 {
		t.Errorf("err %v killed %v files %v", err, f.killed, f.files)
	}
}

func TestExecStreamRefusesInvalidRequests(t *testing.T) {
	f := newFakeAgent()
	rec := &recorder{f: f}
	_, err := testService(f).ExecStream(context.Background(), "dom", ExecRequest{}, rec)
	var ve *desktop.ValidationError
	if !errors.As(err, &ve) || rec.started || len(f.execs) != 0 {
		t.Errorf("err %v started %v execs %q", err, rec.started, f.execs)
	}
}
