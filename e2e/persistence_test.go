//go:build e2e

package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// testPauseHibernate starts a counter process, pauses and resumes the
// desktop, then hibernates and resumes it: the same process must still be
// counting afterwards, and the guest clock must be right again.
func testPauseHibernate(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	s.guest(d, `cat > /home/agent/counter.sh <<'EOF'
i=0
while true; do i=$((i+1)); echo $i > /home/agent/counter; sleep 1; done
EOF
runuser -u agent -- sh -c 'nohup sh /home/agent/counter.sh >/dev/null 2>&1 & echo $! > /home/agent/counter.pid'`)
	pid, _ := s.guest(d, "cat /home/agent/counter.pid")
	if _, err := strconv.Atoi(pid); err != nil {
		t.Fatalf("counter pid %q", pid)
	}
	s.waitGuest(d, "counter running", "test $(cat /home/agent/counter) -ge 2", time.Minute)

	// Pause: the VM is frozen, the API says so, and input-free calls refuse.
	var p apiv1.Desktop
	if code := s.call(token, "POST", base+"/pause", nil, &p); code != http.StatusOK || p.State != string(desktop.StatePaused) {
		t.Fatalf("pause: %d %+v", code, p)
	}
	if st := s.vmState(d); st != desktop.VMPaused {
		t.Errorf("VM is %s after pause", st)
	}
	s.expectError(token, "POST", base+"/pause", nil, 409, "invalid_state")
	s.expectError(token, "POST", base+"/reboot", nil, 409, "invalid_state")
	if code := s.call(token, "POST", base+"/resume", nil, &p); code != http.StatusOK || p.State != string(desktop.StateRunning) {
		t.Fatalf("resume from pause: %d %+v", code, p)
	}

	// Hibernate: RAM goes to disk, the VM stops using the host.
	before, _ := s.guest(d, "cat /home/agent/counter")
	hibAt := time.Now()
	var h apiv1.Desktop
	if code := s.call(token, "POST", base+"/hibernate", nil, &h); code != http.StatusAccepted || h.State != string(desktop.StateHibernating) {
		t.Fatalf("hibernate: %d %+v", code, h)
	}
	s.waitState(token, d.ID, desktop.StateHibernated, 5*time.Minute)
	t.Logf("hibernate: %s", time.Since(hibAt).Round(100*time.Millisecond))
	if st := s.vmState(d); st != desktop.VMSaved {
		t.Errorf("VM is %s after hibernate, want saved", st)
	}
	s.expectError(token, "POST", base+"/reboot", nil, 409, "invalid_state")
	time.Sleep(3 * time.Second) // wall time passes while hibernated

	resumeAt := time.Now()
	if code := s.call(token, "POST", base+"/resume", nil, &h); code != http.StatusAccepted {
		t.Fatalf("resume from hibernation: %d %+v", code, h)
	}
	s.waitState(token, d.ID, desktop.StateRunning, 3*time.Minute)
	t.Logf("resume from hibernation → running: %s", time.Since(resumeAt).Round(100*time.Millisecond))
	s.waitAgent(d, 2*time.Minute)
	t.Logf("resume from hibernation → guest agent: %s", time.Since(resumeAt).Round(100*time.Millisecond))
	// bureau-agent reconnects, and the server bureau_agent left running
	// in the background still serves.
	s.servedAgain(token, d)
	t.Logf("resume from hibernation → bureau-agent and the background server: %s", time.Since(resumeAt).Round(100*time.Millisecond))

	// The same process is alive and still counting.
	if out, code := s.guest(d, "kill -0 "+pid+" && echo alive"); code != 0 || out != "alive" {
		t.Fatalf("counter process %s gone after hibernation: %q", pid, out)
	}
	b, _ := strconv.Atoi(before)
	s.waitGuest(d, "counter continues", "test $(cat /home/agent/counter) -gt "+strconv.Itoa(b+1), time.Minute)
	// The guest clock is synced to the host's within a few seconds.
	s.waitGuest(d, "guest clock synced", "test $(( $(date +%s) - "+strconv.FormatInt(time.Now().Unix(), 10)+" )) -ge -5", time.Minute)
	s.guest(d, "kill "+pid)

	var evs struct{ Events []apiv1.Event }
	s.call(token, "GET", base+"/events", nil, &evs)
	var types []string
	for _, e := range evs.Events {
		types = append(types, e.Type)
	}
	for _, want := range []string{"paused", "hibernated", "resumed"} {
		if !strings.Contains(strings.Join(types, " "), want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}
}
