package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const recs = "/api/v1/desktops/d1/recordings"

// rec is a recording as the API shows it.
func rec(id, state string, seconds int, size int64) map[string]any {
	started := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	r := map[string]any{"id": id, "desktop_id": "d1", "state": state, "actor": "alice/tok_1", "fps": 2, "max_seconds": 3600,
		"width": 1280, "height": 800, "frames": seconds * 2, "size_bytes": size, "started_at": started,
		"duration_ms": seconds * 1000}
	if state != "recording" {
		r["ended_at"] = started.Add(time.Duration(seconds) * time.Second)
		r["ended_why"] = "stopped by alice/tok_1"
		r["video_url"] = recs + "/" + id + "/video"
	}
	return r
}

func TestRecordingStart(t *testing.T) {
	f := newFakeBureau(t)
	var bodies []string
	f.routes["POST "+recs] = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		writeJSON(w, 201, rec("rec_0123456789abcdef", "recording", 0, 0))
	}
	out, _, err := f.run("recording", "start", "agent-1", "--fps", "5", "--max-seconds", "60")
	if err != nil {
		t.Fatal(err)
	}
	var got recordingView
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.ID != "rec_0123456789abcdef" || got.State != "recording" || got.Width != 1280 {
		t.Errorf("stdout %s %v", out, err)
	}
	if _, _, err := f.run("rec", "start", "d1"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(bodies, "\n") != `{"fps":5,"max_seconds":60}`+"\n{}" {
		t.Errorf("bodies %q", bodies)
	}

	f.json("POST "+recs, 409, map[string]any{"error": map[string]string{"code": "conflict", "message": "a recording of this desktop is under way"}})
	if _, _, err := f.run("recording", "start", "agent-1"); err == nil || err.Error() != "a recording of this desktop is under way (HTTP 409 conflict)" {
		t.Errorf("busy: %v", err)
	}
}

// stop without RID stops the recording under way, found from the list.
func TestRecordingStop(t *testing.T) {
	f := newFakeBureau(t)
	f.json("GET "+recs, 200, map[string]any{"recordings": []any{
		rec("rec_000000000000000a", "done", 10, 1000), rec("rec_000000000000000b", "recording", 3, 0)}})
	f.json("POST "+recs+"/rec_000000000000000b/stop", 200, rec("rec_000000000000000b", "done", 4, 2048))
	f.json("POST "+recs+"/rec_000000000000000a/stop", 200, rec("rec_000000000000000a", "done", 10, 1000))
	out, _, err := f.run("recording", "stop", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	var got recordingView
	if json.Unmarshal([]byte(out), &got) != nil || got.ID != "rec_000000000000000b" || got.State != "done" || got.SizeBytes != 2048 || got.DurationMS != 4000 {
		t.Errorf("stdout %s", out)
	}
	if reqs := f.requests(); reqs[len(reqs)-1] != "POST "+recs+"/rec_000000000000000b/stop" || reqs[len(reqs)-2] != "GET "+recs {
		t.Errorf("requests %q", reqs)
	}

	// A RID given is stopped without a look at the list.
	n := len(f.requests())
	if _, _, err := f.run("recording", "stop", "d1", "rec_000000000000000a"); err != nil {
		t.Fatal(err)
	}
	if reqs := f.requests()[n:]; len(reqs) != 2 || reqs[1] != "POST "+recs+"/rec_000000000000000a/stop" {
		t.Errorf("requests %q", reqs)
	}

	// None under way.
	f.json("GET "+recs, 200, map[string]any{"recordings": []any{rec("rec_000000000000000a", "done", 10, 1000)}})
	n = len(f.requests())
	if _, _, err := f.run("recording", "stop", "agent-1"); err == nil || !strings.Contains(err.Error(), "no recording of agent-1 is under way") {
		t.Errorf("none under way: %v", err)
	}
	for _, r := range f.requests()[n:] {
		if strings.HasPrefix(r, "POST") {
			t.Errorf("sent %q", r)
		}
	}
}

func TestRecordingList(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	failed := rec("rec_000000000000000c", "failed", 0, 0)
	failed["ended_why"], failed["error"] = "", "ffmpeg: exit status 1\nno space left on device"
	kept := rec("rec_000000000000000a", "done", 83, 3<<20+300<<10)
	kept["kept"] = true
	f.json("GET "+recs, 200, map[string]any{"recordings": []any{kept, failed, rec("rec_000000000000000b", "recording", 4, 0)}})
	out, _, err := f.run("recording", "list", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	want := `ID                    STATE      STARTED              DURATION  FRAMES  SIZE     KEPT  WHY
rec_000000000000000a  done       2025-03-04 05:06:07  1m23s     166     3.3 MiB  yes   stopped by alice/tok_1
rec_000000000000000c  failed     2025-03-04 05:06:07  0s        0       0 B            error: ffmpeg: exit status 1 no space left on device
rec_000000000000000b  recording  2025-03-04 05:06:07  4s        8       -
`
	if trimLines(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}

	out, _, err = f.run("recording", "list", "d1", "--json")
	var doc struct{ Recordings []map[string]any }
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Recordings) != 3 || doc.Recordings[1]["error"] == nil {
		t.Errorf("--json: %s %v", out, err)
	}

	if _, _, err := f.run("recording", "list", "nope"); err == nil || !strings.Contains(err.Error(), "desktop not found (HTTP 404 not_found)") {
		t.Errorf("an unknown desktop: %v", err)
	}
}

// trimLines drops the spaces at the ends of lines (a table's empty last cells).
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func TestRecordingGetAndRm(t *testing.T) {
	f := newFakeBureau(t)
	f.json("GET "+recs+"/rec_000000000000000a", 200, rec("rec_000000000000000a", "done", 10, 1000))
	out, _, err := f.run("recording", "get", "agent-1", "rec_000000000000000a")
	var got recordingView
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.VideoURL != recs+"/rec_000000000000000a/video" {
		t.Errorf("get: %s %v", out, err)
	}
	if _, _, err := f.run("recording", "get", "agent-1", "rec_000000000000000f"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("get an unknown one: %v", err)
	}

	f.routes["DELETE "+recs+"/rec_000000000000000a"] = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }
	out, _, err = f.run("recording", "rm", "agent-1", "rec_000000000000000a")
	if err != nil || out != "recording rec_000000000000000a deleted\n" {
		t.Errorf("rm: %q %v", out, err)
	}
	if reqs := f.requests(); reqs[len(reqs)-1] != "DELETE "+recs+"/rec_000000000000000a" {
		t.Errorf("requests %q", reqs)
	}
}

// A download is written beside the file and renamed to it once complete:
// one that fails leaves nothing half-written.
func TestRecordingDownload(t *testing.T) {
	f := newFakeBureau(t)
	video := "\x1aE\xdf\xa3 webm " + strings.Repeat("v", 100<<10)
	f.routes["GET "+recs+"/rec_000000000000000a/video"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/webm")
		io.WriteString(w, video)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "rec.webm")
	if _, _, err := f.run("recording", "download", "agent-1", "rec_000000000000000a", "-o", file); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != video {
		t.Errorf("file: %d bytes", len(b))
	}
	out, _, err := f.run("recording", "download", "agent-1", "rec_000000000000000a", "-o", "-")
	if err != nil || out != video {
		t.Errorf("stdout: %d bytes, %v", len(out), err)
	}

	// Cut off half way: the file is as it was, and no part is left.
	f.routes["GET "+recs+"/rec_000000000000000b/video"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/webm")
		w.Header().Set("Content-Length", "1000000")
		io.WriteString(w, video[:1000])
	}
	if _, _, err := f.run("recording", "download", "agent-1", "rec_000000000000000b", "-o", file); err == nil {
		t.Error("a cut-off download: no error")
	}
	f.json("GET "+recs+"/rec_000000000000000c/video", 409, map[string]any{"error": map[string]string{"code": "conflict", "message": "the recording is not finished"}})
	other := filepath.Join(dir, "other.webm")
	if _, _, err := f.run("recording", "download", "agent-1", "rec_000000000000000c", "-o", other); err == nil || err.Error() != "the recording is not finished (HTTP 409 conflict)" {
		t.Errorf("not finished: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != video {
		t.Errorf("the file was changed: %d bytes", len(b))
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("left in the directory: %q", names)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
		t.Errorf("left in the directory: %q", names)
	}

	n := len(f.requests())
	if _, _, err := f.run("recording", "download", "agent-1", "rec_000000000000000a"); err == nil || !strings.Contains(err.Error(), "-o FILE") {
		t.Errorf("no -o: %v", err)
	}
	if len(f.requests()) != n {
		t.Errorf("sent without -o: %q", f.requests()[n:])
	}
}

func TestRecordingFormats(t *testing.T) {
	for ms, want := range map[int64]string{0: "0s", 4240: "4.2s", 59_960: "1m0s", 83_400: "1m23s", 3_605_000: "1h0m5s"} {
		if got := recordingDuration(ms); got != want {
			t.Errorf("recordingDuration(%d) = %q, want %q", ms, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 12 << 20: "12.0 MiB", 3 << 30: "3.0 GiB", 5 << 40: "5.0 TiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
