package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestRecordingKeepAndUnkeep(t *testing.T) {
	f := newFakeBureau(t)
	var bodies []string
	f.routes["PATCH "+recs+"/rec_000000000000000a"] = func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, strings.TrimSpace(string(b)))
		var req struct{ Kept bool }
		json.Unmarshal(b, &req)
		out := rec("rec_000000000000000a", "done", 10, 1000)
		out["kept"] = req.Kept
		writeJSON(w, 200, out)
	}
	out, _, err := f.run("recording", "keep", "agent-1", "rec_000000000000000a")
	if err != nil || out != "recording rec_000000000000000a is kept\n" {
		t.Errorf("keep: %q %v", out, err)
	}
	out, _, err = f.run("recording", "unkeep", "d1", "rec_000000000000000a")
	if err != nil || out != "recording rec_000000000000000a goes with its desktop\n" {
		t.Errorf("unkeep: %q %v", out, err)
	}
	if strings.Join(bodies, " ") != `{"kept":true} {"kept":false}` {
		t.Errorf("bodies %q", bodies)
	}
	if _, _, err := f.run("recording", "keep", "agent-1", "rec_000000000000000f"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("keep an unknown one: %v", err)
	}
}

// list --all lists every recording of the caller's, deleted desktops'
// included; get, download and rm by RID alone reach them.
func TestRecordingListAllAndByID(t *testing.T) {
	inUTC(t)
	f := newFakeBureau(t)
	gone := rec("rec_000000000000000a", "done", 83, 2048)
	gone["kept"], gone["desktop_name"], gone["desktop_deleted"] = true, "old-one", true
	gone["video_url"] = "/api/v1/recordings/rec_000000000000000a/video"
	live := rec("rec_000000000000000b", "done", 4, 1000)
	live["desktop_name"] = "agent-1"
	f.json("GET /api/v1/recordings", 200, map[string]any{"recordings": []any{gone, live}, "size_bytes": 3048, "kept_size_bytes": 2048})
	out, _, err := f.run("recording", "list", "--all")
	if err != nil {
		t.Fatal(err)
	}
	want := `DESKTOP            ID                    STATE  STARTED              DURATION  FRAMES  SIZE     KEPT  WHY
old-one (deleted)  rec_000000000000000a  done   2025-03-04 05:06:07  1m23s     166     2.0 KiB  yes   stopped by alice/tok_1
agent-1            rec_000000000000000b  done   2025-03-04 05:06:07  4s        8       1000 B         stopped by alice/tok_1
`
	if trimLines(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	for _, args := range [][]string{{"recording", "list"}, {"recording", "list", "agent-1", "--all"}} {
		if _, _, err := f.run(args...); err == nil || !strings.Contains(err.Error(), "--all") {
			t.Errorf("%q: %v", args, err)
		}
	}

	f.json("GET /api/v1/recordings/rec_000000000000000a", 200, gone)
	out, _, err = f.run("recording", "get", "rec_000000000000000a")
	var got recordingView
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || !got.Kept || !got.DesktopDeleted {
		t.Errorf("get by RID: %s %v", out, err)
	}
	f.routes["GET /api/v1/recordings/rec_000000000000000a/video"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "video/webm")
		io.WriteString(w, "\x1aE\xdf\xa3 webm")
	}
	if out, _, err := f.run("recording", "download", "rec_000000000000000a", "-o", "-"); err != nil || out != "\x1aE\xdf\xa3 webm" {
		t.Errorf("download by RID: %q %v", out, err)
	}
	f.routes["DELETE /api/v1/recordings/rec_000000000000000a"] = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }
	if out, _, err := f.run("recording", "rm", "rec_000000000000000a"); err != nil || out != "recording rec_000000000000000a deleted\n" {
		t.Errorf("rm by RID: %q %v", out, err)
	}
	if reqs := f.requests(); reqs[len(reqs)-1] != "DELETE /api/v1/recordings/rec_000000000000000a" {
		t.Errorf("requests %q", reqs)
	}
}

func TestDesktopDeleteKeepingRecordings(t *testing.T) {
	f := newFakeBureau(t)
	f.json("DELETE /api/v1/desktops/d1", 200, map[string]any{"desktop": map[string]any{"id": "d1", "name": "agent-1"}, "data_deleted": false})
	for _, args := range [][]string{{"desktop", "rm", "agent-1", "--keep-recordings"}, {"desktop", "delete", "agent-1"}} {
		if _, _, err := f.run(args...); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
	}
	var dels []string
	for _, r := range f.requests() {
		if strings.HasPrefix(r, "DELETE") {
			dels = append(dels, r)
		}
	}
	if len(dels) != 2 || dels[0] != "DELETE /api/v1/desktops/d1?delete_data=false&keep_recordings=true" || dels[1] != "DELETE /api/v1/desktops/d1?delete_data=false" {
		t.Errorf("deletes %q", dels)
	}
}
