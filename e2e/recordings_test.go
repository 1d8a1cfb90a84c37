//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/recording"
)

// recordingView is a recording as the API shows it.
type recordingView struct {
	recording.Recording
	DurationMS int64  `json:"duration_ms"`
	VideoURL   string `json:"video_url"`
}

// testRecordings: a window opening and text typed into it are recorded
// as a WebM video as long as the recording, with the changes in it, that
// Chromium plays to its end in the web console.
func testRecordings(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID + "/recordings"
	s.guest(d, "pkill -x xterm")
	var r recordingView
	if code := s.call(token, "POST", base, map[string]any{"fps": 5}, &r); code != 201 || r.State != recording.StateRecording || r.Width < 640 {
		t.Fatalf("start: %d %+v", code, r)
	}
	s.expectError(token, "POST", base, nil, 409, "conflict")
	s.catWindow(d, "60x10+200+200", "/tmp/recorded.txt")
	s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/computer", map[string]any{"action": "type", "text": "recorded from the hypervisor"}, nil)
	// The typing is the newest step (recorded just after the call).
	var last stepList
	for i := 0; i < 50 && (len(last.Steps) == 0 || !strings.Contains(string(last.Steps[0].Input), "recorded from")); i++ {
		time.Sleep(100 * time.Millisecond)
		s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/steps?newest=true&limit=1", nil, &last)
	}
	typed := last.Steps
	if len(typed) != 1 || !strings.Contains(string(typed[0].Input), "recorded from") {
		t.Fatalf("the typing step: %+v", typed)
	}
	time.Sleep(time.Second)
	s.guest(d, "pkill -x xterm")
	time.Sleep(time.Second)
	var done recordingView
	if code := s.call(token, "POST", base+"/"+r.ID+"/stop", nil, &done); code != 200 || done.State != recording.StateDone ||
		done.Frames < 3 || done.SizeBytes == 0 || done.VideoURL == "" {
		t.Fatalf("stop: %d %+v", code, done)
	}
	t.Logf("recorded %s: %d changed frames, %d KiB", (time.Duration(done.DurationMS) * time.Millisecond).Round(100*time.Millisecond), done.Frames, done.SizeBytes>>10)

	var video []byte
	if code := s.call(token, "GET", done.VideoURL, nil, &video); code != 200 || !bytes.HasPrefix(video, []byte{0x1a, 0x45, 0xdf, 0xa3}) {
		t.Fatalf("video: %d (%d bytes)", code, len(video))
	}
	path := filepath.Join(t.TempDir(), "rec.webm")
	os.WriteFile(path, video, 0o644)
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration:stream=width,height", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var probe struct {
		Streams []struct{ Width, Height int }
		Format  struct{ Duration string }
	}
	json.Unmarshal(out, &probe)
	secs, _ := strconv.ParseFloat(probe.Format.Duration, 64)
	if want := float64(done.DurationMS) / 1000; secs < want-1.5 || secs > want+1 || len(probe.Streams) != 1 || probe.Streams[0].Width != r.Width {
		t.Errorf("the video: %s for a recording of %.1fs", out, want)
	}

	// The web console plays it to its end.
	shot := filepath.Join(os.TempDir(), "bureau-e2e-recording.png")
	cmd := exec.Command("node", "recordings.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "BUREAU_URL="+s.url, "TOKEN="+token, "DESKTOP="+d.ID, "RID="+r.ID, "SCREENSHOT="+shot)
	// ... and the typing step opens the recording at its time.
	cmd.Env = append(cmd.Env, "STEP_SEQ="+strconv.FormatInt(typed[0].Seq, 10))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser: %v\n%s", err, stderr.String())
	}
	var played struct {
		Played, Ended bool
		Duration      float64
		Width         int
		Errors        []string
		Step          struct {
			RID         string  `json:"rid"`
			T           float64 `json:"t"`
			CurrentTime float64 `json:"current_time"`
		} `json:"step"`
	}
	json.Unmarshal(stdout.Bytes(), &played)
	wantT := typed[0].At.Sub(r.StartedAt).Seconds()
	if !played.Played || !played.Ended || played.Width != r.Width || played.Duration < secs-1 || len(played.Errors) > 0 ||
		played.Step.RID != r.ID || played.Step.T < wantT-1 || played.Step.T > wantT+1 {
		t.Errorf("the console's Recordings tab (see %s): %s", shot, strings.TrimSpace(stdout.String()))
	}

	// Kept, it is among the owner's recordings, its video the same; the
	// owner's route deletes it (the desktop is shared: it stays).
	var kept recordingView
	if code := s.call(token, "PATCH", base+"/"+r.ID, map[string]any{"kept": true}, &kept); code != 200 || !kept.Kept || kept.Owner != d.Owner {
		t.Errorf("keep: %d %+v", code, kept)
	}
	var mine struct{ Recordings []recordingView }
	s.call(token, "GET", "/api/v1/recordings", nil, &mine)
	found := false
	for _, x := range mine.Recordings {
		found = found || x.ID == r.ID && x.Kept && !x.DesktopDeleted && x.DesktopName == d.Name
	}
	if !found {
		t.Errorf("the owner's recordings: %+v", mine.Recordings)
	}
	var again []byte
	if code := s.call(token, "GET", "/api/v1/recordings/"+r.ID+"/video", nil, &again); code != 200 || !bytes.Equal(again, video) {
		t.Errorf("the video by the owner's route: %d (%d bytes, want %d)", code, len(again), len(video))
	}
	if code := s.call(token, "DELETE", "/api/v1/recordings/"+r.ID, nil, nil); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code := s.call(token, "GET", base+"/"+r.ID, nil, nil); code != 404 {
		t.Errorf("after the delete: %d", code)
	}
}
