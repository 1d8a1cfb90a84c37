//go:build e2e

package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// migEvents records what each host reports about one domain (virsh event,
// raw) and what the adapter delivers of it, and logs the adapter's own
// log lines, until the test ends.
type migEvents struct {
	t    *testing.T
	name string
	logs *testLog

	mu   sync.Mutex
	seen []desktop.VMEvent
}

func watchEvents(t *testing.T, name, host2 string) *migEvents {
	e := &migEvents{t: t, name: name, logs: &testLog{t: t}}
	for host, uri := range map[string]string{"host1": "qemu:///system", "host2": host2} {
		var out bytes.Buffer
		cmd := exec.Command("virsh", "-c", uri, "event", "--all", "--loop", "--timestamp")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill() // this test's own virsh
			cmd.Wait()
			var lines []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.Contains(l, "'"+name+"'") {
					lines = append(lines, l)
				}
			}
			t.Logf("raw events on %s:\n%s", host, strings.Join(lines, "\n"))
		})
	}
	t.Cleanup(e.logs.stop)
	return e
}

// drain records the adapter's events of the domain until ch closes.
func (e *migEvents) drain(ch <-chan desktop.VMEvent) {
	for ev := range ch {
		if ev.Domain != e.name {
			continue
		}
		e.mu.Lock()
		e.seen = append(e.seen, ev)
		e.mu.Unlock()
	}
}

func (e *migEvents) delivered() []desktop.VMEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]desktop.VMEvent(nil), e.seen...)
}

// testLog writes to t.Log until the test ends (libvirt's event loop may
// log later).
type testLog struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}
