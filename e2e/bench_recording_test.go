//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// cpuSeconds is the CPU time a process has used so far (0 if it is gone).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks (USER_HZ 100)
}

// benchRecording measures what a recording costs at 2 frames a second:
// ffmpeg's CPU and bureau's (reading the screen), and bytes a minute,
// with the screen idle and with a terminal scrolling text.
func benchRecording(t *testing.T, s *server, d *apiv1.Desktop, addRow func(name, value string)) {
	span := 30 * time.Second
	if benchShort() {
		span = 10 * time.Second
	}
	base := "/api/v1/desktops/" + d.ID + "/recordings"
	for _, scene := range []struct{ name, start string }{
		{"an idle screen", ""},
		{"a terminal scrolling text", "su agent -c 'DISPLAY=:0 setsid xterm -geometry 100x30+100+100 -e sh -c \"while :; do date +%T.%N; sleep 0.1; done\" >/dev/null 2>&1 &'"},
	} {
		s.guest(d, "pkill -x xterm")
		if scene.start != "" {
			s.guest(d, scene.start)
			time.Sleep(2 * time.Second)
		}
		var r recordingView
		benchCall(t, s, adminToken, "POST", base, map[string]any{"fps": 2}, &r)
		out, _ := exec.Command("pgrep", "-f", r.ID+".webm").Output()
		ffmpeg, _ := strconv.Atoi(strings.Fields(string(out) + " 0")[0])
		bureau := s.cmd.Process.Pid
		f0, b0 := cpuSeconds(ffmpeg), cpuSeconds(bureau)
		time.Sleep(span)
		f1, b1 := cpuSeconds(ffmpeg), cpuSeconds(bureau)
		var done recordingView
		benchCall(t, s, adminToken, "POST", base+"/"+r.ID+"/stop", nil, &done)
		secs := span.Seconds()
		addRow(fmt.Sprintf("recording %s at 2 fps (%s): ffmpeg / bureau CPU, size", scene.name, span),
			fmt.Sprintf("%.0f%% / %.0f%% of a core, %d changed frames, %.0f KiB a minute",
				100*(f1-f0)/secs, 100*(b1-b0)/secs, done.Frames, float64(done.SizeBytes)/1024/(float64(done.DurationMS)/60000)))
		s.call(adminToken, "DELETE", base+"/"+r.ID, nil, nil)
	}
	s.guest(d, "pkill -x xterm")
}
