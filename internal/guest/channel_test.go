package guest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/desktop"
)

func agentService(t *testing.T, c *client.Client, ga Agent) *Service {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runs commands as root through runuser")
	}
	s := New(ga).WithChannel(c)
	s.User = "root"
	return s
}

type sseOut struct {
	started bool
	out     bytes.Buffer
}

func (o *sseOut) Started() error { o.started = true; return nil }
func (o *sseOut) Output(stream string, b []byte) error {
	o.out.WriteString(stream + ":" + string(b) + "|")
	return nil
}

func TestExecThroughBureauAgent(t *testing.T) {
	s := agentService(t, agenttest.Client(t), nil) // no QEMU agent at all: it must not be needed
	ctx := context.Background()
	begun := time.Now()
	res, err := s.Exec(ctx, "d", ExecRequest{Cmd: "sleep 30 & echo started; echo err >&2; exit 4", Cwd: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || res.Stdout != "started\n" || res.Stderr != "err\n" || time.Since(begun) > 5*time.Second {
		t.Fatalf("%+v after %s", res, time.Since(begun))
	}
	res, err = s.Exec(ctx, "d", ExecRequest{Cmd: "sleep 5", TimeoutS: 1})
	if err != nil || !res.TimedOut {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	res, err = s.Exec(ctx, "d", ExecRequest{Cmd: "head -c 3000 /dev/zero", MaxOutputBytes: 1000})
	if err != nil || len(res.Stdout) != 1000 || !res.Truncated {
		t.Fatalf("cap: %d %v", len(res.Stdout), err)
	}
	var o sseOut
	sres, err := s.ExecStream(ctx, "d", ExecRequest{Cmd: "printf 'h\\xc3'; sleep 0.3; printf '\\xa9\\n'", Stdin: "x"}, &o)
	if err != nil || !o.started || sres.ExitCode != 0 || o.out.String() != "stdout:h|stdout:é\n|" {
		t.Fatalf("stream %+v %v %q", sres, err, o.out.String())
	}
}

func TestBackgroundThroughBureauAgent(t *testing.T) {
	s := agentService(t, agenttest.Client(t), nil)
	ctx := context.Background()
	if _, err := s.Start(ctx, "d", ExecRequest{Cmd: "true", Stdin: "x"}); err == nil {
		t.Error("stdin accepted for a background process")
	}
	p, err := s.Start(ctx, "d", ExecRequest{Cmd: "echo up; exec sleep 60", Name: "srv"})
	if err != nil || !procID.MatchString(p.ID) {
		t.Fatalf("%+v %v", p, err)
	}
	time.Sleep(300 * time.Millisecond)
	got, err := s.Process(ctx, "d", p.ID)
	if err != nil || !got.Running || got.Name != "srv" || strings.Join(got.Command, " ") != "/bin/bash -c echo up; exec sleep 60" {
		t.Fatalf("%+v %v", got, err)
	}
	var log bytes.Buffer
	if err := s.ProcessLog(ctx, "d", p.ID, 0, false, &log); err != nil || log.String() != "up\n" {
		t.Fatalf("log %q %v", log.String(), err)
	}
	if err := s.Signal(ctx, "d", p.ID, "NOPE"); err == nil {
		t.Error("unknown signal accepted")
	}
	if err := s.Signal(ctx, "d", p.ID, "kill"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got, _ = s.Process(ctx, "d", p.ID); got.Running || got.ExitCode == nil || *got.ExitCode != 137 || got.EndedAt == nil {
		t.Fatalf("after KILL: %+v", got)
	}
	if _, err := s.Process(ctx, "d", "p-000000000000"); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("unknown process: %v", err)
	}
}

func TestFilesThroughBureauAgent(t *testing.T) {
	s := agentService(t, agenttest.Client(t), nil)
	ctx := context.Background()
	dir := t.TempDir()
	final, n, err := s.Write(ctx, "d", WriteRequest{Path: filepath.Join(dir, "a/b/f.txt"), Parents: true, Mode: 0o640}, strings.NewReader("content"))
	if err != nil || n != 7 || final != filepath.Join(dir, "a/b/f.txt") {
		t.Fatalf("%s %d %v", final, n, err)
	}
	st, err := s.Stat(ctx, "d", final, "")
	if err != nil || st.Size != 7 {
		t.Fatalf("%+v %v", st, err)
	}
	var back bytes.Buffer
	if err := s.Read(ctx, "d", st, &back); err != nil || back.String() != "content" {
		t.Fatalf("%q %v", back.String(), err)
	}
	if fi, _ := os.Stat(final); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
}

// Without bureau-agent, background processes say why they cannot run, and
// exec falls back to QEMU's agent, naming both when neither answers.
func TestWithoutBureauAgent(t *testing.T) {
	s := agentService(t, agenttest.ClientOf(t, agenttest.NoAgent{}), failingAgent{})
	ctx := context.Background()
	if _, err := s.Start(ctx, "d", ExecRequest{Cmd: "true"}); !errors.Is(err, desktop.ErrUnavailable) || !strings.Contains(err.Error(), "bureau-agent") {
		t.Errorf("start without the agent: %v", err)
	}
	_, err := s.Exec(ctx, "d", ExecRequest{Cmd: "true"})
	if !errors.Is(err, desktop.ErrUnavailable) || !strings.Contains(err.Error(), "neither bureau-agent") || !strings.Contains(err.Error(), "qga down") {
		t.Errorf("exec with neither agent: %v", err)
	}
}

type failingAgent struct{ Agent }

func (failingAgent) GuestExec(context.Context, string, desktop.Exec) (*desktop.ExecResult, error) {
	return nil, errors.New("qga down")
}
