package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

func fastBackoff(t *testing.T) {
	old := []time.Duration{minBackoff, maxBackoff, stopGrace}
	minBackoff, maxBackoff, stopGrace = 20*time.Millisecond, 80*time.Millisecond, 2*time.Second
	t.Cleanup(func() { minBackoff, maxBackoff, stopGrace = old[0], old[1], old[2] })
}

func newTable(t *testing.T) *svcTable {
	t.Helper()
	tb, err := openServices(t.TempDir(), t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range tb.list() {
			tb.control(s.Name, "delete")
		}
	})
	return tb
}

func shSpec(name, script, restart string, secrets ...string) wire.ServiceSpec {
	return wire.ServiceSpec{Name: name, Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Restart: restart, Secrets: secrets}
}

// until polls f for up to 10 s.
func until(t *testing.T, what string, f func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if f() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (tb *svcTable) one(name string) wire.ServiceStatus {
	for _, s := range tb.list() {
		if s.Name == name {
			return s
		}
	}
	return wire.ServiceStatus{}
}

func TestServiceWaitsForItsSecretThenRunsWithIt(t *testing.T) {
	tb := newTable(t)
	if _, err := tb.put(shSpec("web", `echo "env=$API_KEY file=$(cat $BUREAU_SECRETS_DIR/API_KEY)"; sleep 30`, wire.RestartOnFailure, "API_KEY"), nil); err != nil {
		t.Fatal(err)
	}
	until(t, "waiting", func() bool { return tb.one("web").State == wire.SvcWaiting })
	if r := tb.one("web").Reason; !strings.Contains(r, "API_KEY") {
		t.Fatalf("reason %q does not name the secret", r)
	}
	tb.setSecrets(map[string]string{"API_KEY": "s3cret"})
	until(t, "running", func() bool { return tb.one("web").State == wire.SvcRunning })
	until(t, "its output", func() bool {
		b, _ := os.ReadFile(tb.path("web", "log"))
		return string(b) == "env=s3cret file=s3cret\n"
	})
	// The secret file is readable by the service's user only.
	fi, err := os.Stat(filepath.Join(tb.runDir, "web", "API_KEY"))
	if err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("secret file: %v %v", fi, err)
	}
	// The spec on disk holds the secret's name, never its value.
	b, _ := os.ReadFile(tb.path("web", "spec.json"))
	if strings.Contains(string(b), "s3cret") || !strings.Contains(string(b), "API_KEY") {
		t.Fatalf("spec.json: %s", b)
	}
}

func TestServiceRestartPolicies(t *testing.T) {
	fastBackoff(t)
	tb := newTable(t)
	tb.put(shSpec("flaky", `echo run; exit 3`, wire.RestartOnFailure), nil)
	until(t, "three restarts", func() bool { return tb.one("flaky").Restarts >= 3 })
	st := tb.one("flaky")
	if st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("exit code: %+v", st)
	}
	tb.put(shSpec("once", `exit 0`, wire.RestartOnFailure), nil)
	until(t, "exited", func() bool { return tb.one("once").State == wire.SvcExited })
	time.Sleep(200 * time.Millisecond)
	if st := tb.one("once"); st.Restarts != 0 || st.State != wire.SvcExited {
		t.Fatalf("a clean exit under on-failure restarted: %+v", st)
	}
	tb.put(shSpec("always", `exit 0`, wire.RestartAlways), nil)
	until(t, "restarts under always", func() bool { return tb.one("always").Restarts >= 2 })
	tb.put(shSpec("never", `exit 1`, wire.RestartNo), nil)
	until(t, "exited", func() bool { return tb.one("never").State == wire.SvcExited })
	if _, err := tb.put(shSpec("Bad Name", "true", wire.RestartNo), nil); err == nil {
		t.Fatal("a bad name was taken")
	}
	if _, err := tb.put(shSpec("x", "true", "sometimes"), nil); err == nil {
		t.Fatal("a bad restart policy was taken")
	}
}

func TestServiceStopStartRestartDelete(t *testing.T) {
	fastBackoff(t)
	tb := newTable(t)
	tb.put(shSpec("srv", `trap 'exit 0' TERM; while :; do sleep 0.1; done`, wire.RestartAlways), nil)
	until(t, "running", func() bool { return tb.one("srv").State == wire.SvcRunning })
	pid := tb.one("srv").PID
	st, err := tb.control("srv", "stop")
	if err != nil || st.State != wire.SvcStopped {
		t.Fatalf("stop: %+v %v", st, err)
	}
	if err := exec.Command("kill", "-0", strconv.Itoa(pid)).Run(); err == nil {
		t.Fatal("the process outlived stop")
	}
	// Stopped stays stopped (an "always" service is not restarted).
	time.Sleep(300 * time.Millisecond)
	if st := tb.one("srv"); st.State != wire.SvcStopped {
		t.Fatalf("after stop: %+v", st)
	}
	var f svcFile
	b, _ := os.ReadFile(tb.path("srv", "spec.json"))
	if json.Unmarshal(b, &f) != nil || f.Enabled {
		t.Fatalf("stop is not remembered for the next boot: %s", b)
	}
	tb.control("srv", "start")
	until(t, "running again", func() bool { return tb.one("srv").State == wire.SvcRunning })
	first := tb.one("srv").PID
	tb.control("srv", "restart")
	until(t, "a new process", func() bool { s := tb.one("srv"); return s.State == wire.SvcRunning && s.PID != first })
	if _, err := tb.control("srv", "delete"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tb.dir, "srv")); !os.IsNotExist(err) {
		t.Fatalf("delete left its directory: %v", err)
	}
	if _, err := tb.control("srv", "stop"); !os.IsNotExist(err) {
		t.Fatalf("a deleted service answered: %v", err)
	}
}

func TestServicesStartAgainWhenTheAgentDoes(t *testing.T) {
	dir, run := t.TempDir(), t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tb, _ := openServices(dir, run, log)
	tb.put(shSpec("web", `sleep 30`, wire.RestartOnFailure), nil)
	tb.put(shSpec("off", `sleep 30`, wire.RestartOnFailure), nil)
	until(t, "running", func() bool { return tb.one("web").State == wire.SvcRunning })
	tb.control("off", "stop")
	pid := tb.one("web").PID
	// A process from this boot is adopted, not started twice.
	if r := tb.adoptable("web"); r == nil || r.PID != pid {
		t.Fatalf("adoptable: %+v", r)
	}
	// One from another boot (or a reused pid) is not.
	b, _ := os.ReadFile(tb.path("web", "run.json"))
	var r runFile
	json.Unmarshal(b, &r)
	r.BootID = "another-boot"
	b, _ = json.Marshal(r)
	os.WriteFile(tb.path("web", "run.json"), b, 0o600)
	if tb.adoptable("web") != nil {
		t.Fatal("a process of another boot was adopted")
	}
	tb.control("web", "delete")
	tb.control("off", "delete")

	// After a "reboot" (nothing running, no run.json) the enabled service
	// starts and the stopped one does not.
	tb.put(shSpec("web2", `sleep 30`, wire.RestartOnFailure), nil)
	tb.put(shSpec("off2", `sleep 30`, wire.RestartOnFailure), nil)
	tb.control("off2", "stop")
	until(t, "running", func() bool { return tb.one("web2").State == wire.SvcRunning })
	old := tb.one("web2").PID
	halt(tb.all["web2"].stop, tb.all["web2"].done) // the process ends with "the boot"
	os.Remove(tb.path("web2", "run.json"))
	tb2, _ := openServices(dir, run, log)
	t.Cleanup(func() { tb2.control("web2", "delete"); tb2.control("off2", "delete") })
	until(t, "started at boot", func() bool { s := tb2.one("web2"); return s.State == wire.SvcRunning && s.PID != old })
	if s := tb2.one("off2"); s.State != wire.SvcStopped {
		t.Fatalf("a stopped service started at boot: %+v", s)
	}
}

func TestRotateKeepsTheTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte(strings.Repeat("a", 100)+"TAIL"), 0o600)
	rotate(p, 50)
	if fi, _ := os.Stat(p); fi.Size() != 0 {
		t.Fatalf("log not emptied: %d", fi.Size())
	}
	b, _ := os.ReadFile(p + ".1")
	if !strings.HasSuffix(string(b), "TAIL") {
		t.Fatalf("log.1 lost the tail: %q", b)
	}
}

func TestStopEndsWhatTheServiceLeftRunning(t *testing.T) {
	fastBackoff(t)
	tb := newTable(t)
	// The service's shell starts a child that ignores the shell's end.
	spec := shSpec("tree", `sleep 300 & echo $! > child.pid; wait`, wire.RestartOnFailure)
	dir := t.TempDir()
	spec.Dir = dir
	tb.put(spec, nil)
	var child int
	until(t, "the child", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "child.pid"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return child > 0
	})
	if _, err := tb.control("tree", "stop"); err != nil {
		t.Fatal(err)
	}
	// Gone, or a zombie nobody reaped yet (its parent shell is gone).
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Fatalf("the service's child outlived stop: %s", b)
	}
}
