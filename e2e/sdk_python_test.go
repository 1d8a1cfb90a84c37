//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// testSDKPython runs the Python SDK's tests (sdk/python, standard library
// only) with Debian's python3 against this server and desktop, then its
// example that replays a recorded agent transcript through the Anthropic
// and OpenAI adapters, and checks the file the replayed session wrote.
func testSDKPython(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := append(os.Environ(), "BUREAU_URL="+s.url, "BUREAU_TOKEN="+token, "BUREAU_DESKTOP="+d.ID, "PYTHONDONTWRITEBYTECODE=1")
	dir := filepath.Join("..", "sdk", "python")
	python := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		python = "/usr/bin/python3" // the distribution's, not one a version manager put first on PATH
	}
	run := func(args ...string) (string, time.Duration) { return runTool(ctx, t, dir, env, python, args...) }
	out, took := run("-m", "unittest", "-v")
	ran := regexp.MustCompile(`Ran (\d+) tests`).FindStringSubmatch(out)
	if ran == nil || strings.Contains(out, "skipped") {
		t.Fatalf("the Python SDK's tests did not all run:\n%s", out)
	}
	t.Logf("Python SDK: %s tests passed in %s", ran[1], took.Round(100*time.Millisecond))

	checkReplay(t, s, d, func(png string) (string, time.Duration) {
		return run("examples/replay_transcript.py", d.ID, "--save", png)
	})
}

// checkReplay runs an SDK's transcript replay example (replay saves the
// last screenshot to the path it is given) and checks what the replayed
// session did: a PNG came back and the shell command it typed wrote its
// file in the desktop.
func checkReplay(t *testing.T, s *server, d *apiv1.Desktop, replay func(png string) (string, time.Duration)) {
	t.Helper()
	s.guest(d, "rm -f /home/agent/replay-marker.txt")
	png := filepath.Join(t.TempDir(), "final.png")
	out, took := replay(png)
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the replay saved no screenshot: %v\n%s", err, out)
	}
	if got, _ := s.guest(d, "cat /home/agent/replay-marker.txt"); got != "replayed" {
		t.Errorf("the replayed session did not write its file (%q):\n%s", got, out)
	}
	s.guest(d, "rm -f /home/agent/replay-marker.txt; pkill -x xterm; true")
	t.Logf("replayed transcript in %s:\n%s", took.Round(100*time.Millisecond), out)
}

// runTool runs a command in dir with env and answers its output and how
// long it took; a failure ends the test with the output.
func runTool(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) (string, time.Duration) {
	t.Helper()
	begun := time.Now()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), time.Since(begun)
}
