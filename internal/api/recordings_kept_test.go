package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// storedDesktop puts the fake desktop id in the store too, as the manager
// keeps it (recordings read their desktop's name and whether it is gone).
func storedDesktop(t *testing.T, e *env, id string) {
	t.Helper()
	d, err := e.desktops.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateDesktop(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// markDeleted does what the manager's delete leaves: the desktop's row,
// soft-deleted.
func markDeleted(t *testing.T, e *env, id string) {
	t.Helper()
	now := time.Now().UTC()
	e.desktops.mu.Lock()
	e.desktops.desktops[id].State, e.desktops.desktops[id].DeletedAt = desktop.StateDeleted, &now
	e.desktops.mu.Unlock()
	d, err := e.store.GetDesktop(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d.State, d.DeletedAt = desktop.StateDeleted, &now
	if err := e.store.UpdateDesktop(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// recorded makes a finished recording of desktop id.
func recorded(t *testing.T, e *env, token, id string) string {
	t.Helper()
	base := "/api/v1/desktops/" + id + "/recordings"
	code, r := e.do(t, token, "POST", base, `{"fps":5}`)
	if code != 201 {
		t.Fatalf("start: %d %v", code, r)
	}
	time.Sleep(600 * time.Millisecond)
	if code, r = e.do(t, token, "POST", base+"/"+recID(r)+"/stop", ""); code != 200 || r["state"] != "done" {
		t.Fatalf("stop: %d %v", code, r)
	}
	return recID(r)
}

func TestKeptRecordingsOutliveTheirDesktop(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on this host")
	}
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	storedDesktop(t, e, id)
	base := "/api/v1/desktops/" + id + "/recordings"
	kept, dropped := recorded(t, e, e.alice, id), recorded(t, e, e.alice, id)
	for body, want := range map[string]int{`{}`: 422, `{"kept":"yes"}`: 400, ``: 400, `{"kept":true,"x":1}`: 400} {
		if code, r := e.do(t, e.alice, "PATCH", base+"/"+kept, body); code != want {
			t.Errorf("keep with %q: %d %v, want %d", body, code, r, want)
		}
	}
	if code, _ := e.do(t, e.bob, "PATCH", base+"/"+kept, `{"kept":true}`); code != 404 {
		t.Errorf("bob keeps alice's recording: %d", code)
	}
	if code, r := e.do(t, e.alice, "PATCH", base+"/"+kept, `{"kept":true}`); code != 200 || r["kept"] != true || r["owner"] != "alice" || r["desktop_name"] != "c" {
		t.Fatalf("keep: %d %v", code, r)
	}
	// One under way, kept: the delete ends it and leaves it.
	code, under := e.do(t, e.alice, "POST", base, `{"fps":5}`)
	if code != 201 {
		t.Fatalf("start: %d %v", code, under)
	}
	if code, r := e.do(t, e.alice, "PATCH", base+"/"+recID(under), `{"kept":true}`); code != 200 || r["kept"] != true || r["state"] != "recording" {
		t.Fatalf("keep the one under way: %d %v", code, r)
	}
	code, all := e.do(t, e.alice, "GET", "/api/v1/recordings", "")
	if list, _ := all["recordings"].([]any); code != 200 || len(list) != 3 || list[0].(map[string]any)["desktop_deleted"] != false {
		t.Fatalf("alice's recordings: %d %v", code, all)
	}
	time.Sleep(600 * time.Millisecond)
	if code, r := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id+"?keep_recordings=maybe", ""); code != 422 {
		t.Errorf("keep_recordings=maybe: %d %v", code, r)
	}
	if code, r := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id, ""); code != 200 {
		t.Fatalf("delete the desktop: %d %v", code, r)
	}
	markDeleted(t, e, id)

	if code, _ := e.do(t, e.alice, "GET", base+"/"+kept, ""); code != 404 {
		t.Errorf("the deleted desktop's route: %d", code)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/recordings/"+dropped, ""); code != 404 {
		t.Errorf("the recording not kept: %d", code)
	}
	code, all = e.do(t, e.alice, "GET", "/api/v1/recordings", "")
	list, _ := all["recordings"].([]any)
	if code != 200 || len(list) != 2 || all["kept_size_bytes"] != all["size_bytes"] || all["size_bytes"].(float64) == 0 {
		t.Fatalf("alice's recordings after the delete: %d %v", code, all)
	}
	for _, x := range list {
		r := x.(map[string]any)
		if r["kept"] != true || r["desktop_deleted"] != true || r["desktop_id"] != id || r["desktop_name"] != "c" || r["state"] != "done" ||
			r["video_url"] != "/api/v1/recordings/"+r["id"].(string)+"/video" {
			t.Errorf("a kept recording of a deleted desktop: %v", r)
		}
	}
	if r := list[1].(map[string]any); r["id"] != recID(under) || r["ended_why"] != "the desktop was deleted" || r["size_bytes"].(float64) == 0 {
		t.Errorf("the one under way at the delete: %v", r)
	}
	// Its video, whole and in a range, as from the desktop's route.
	get := func(rng string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/recordings/"+kept+"/video?download=true", nil)
		req.Header.Set("Authorization", "Bearer "+e.alice)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, whole := get("")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/webm" || !bytes.HasPrefix(whole, []byte{0x1a, 0x45, 0xdf, 0xa3}) ||
		resp.Header.Get("Content-Disposition") == "" {
		t.Fatalf("video: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, part := get("bytes=4-9"); resp.StatusCode != 206 || !bytes.Equal(part, whole[4:10]) {
		t.Errorf("a range: %d % x", resp.StatusCode, part)
	}
	// Another owner reaches none of it; an admin reaches all.
	for _, path := range []string{"/api/v1/recordings/" + kept, "/api/v1/recordings/" + kept + "/video"} {
		if code, _ := e.do(t, e.bob, "GET", path, ""); code != 404 {
			t.Errorf("bob GET %s: %d", path, code)
		}
	}
	if code, _ := e.do(t, e.bob, "DELETE", "/api/v1/recordings/"+kept, ""); code != 404 {
		t.Errorf("bob deletes alice's: %d", code)
	}
	if _, r := e.do(t, e.bob, "GET", "/api/v1/recordings", ""); len(r["recordings"].([]any)) != 0 {
		t.Errorf("bob's recordings: %v", r)
	}
	if _, r := e.do(t, e.admin, "GET", "/api/v1/recordings", ""); len(r["recordings"].([]any)) != 2 {
		t.Errorf("the admin's view: %v", r)
	}
	if code, r := e.do(t, e.admin, "GET", "/api/v1/recordings/"+kept, ""); code != 200 || r["owner"] != "alice" {
		t.Errorf("the admin gets alice's: %d %v", code, r)
	}
	// Its owner deletes it.
	if code, _ := e.do(t, e.alice, "DELETE", "/api/v1/recordings/"+kept, ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/recordings/"+kept+"/video", ""); code != 404 {
		t.Errorf("its video after the delete: %d", code)
	}
	if code, _ := e.do(t, e.alice, "GET", "/api/v1/recordings/rec_0000000000000000", ""); code != 404 {
		t.Errorf("no such recording: %d", code)
	}
}

func TestDeleteDesktopKeepingRecordings(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on this host")
	}
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	a, b := recorded(t, e, e.alice, id), recorded(t, e, e.alice, id)
	// A delete that fails keeps nothing.
	e.desktops.mu.Lock()
	e.desktops.err = desktop.ErrConflict
	e.desktops.mu.Unlock()
	code, _ := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id+"?keep_recordings=true", "")
	e.desktops.mu.Lock()
	e.desktops.err = nil
	e.desktops.mu.Unlock()
	if code != 409 {
		t.Fatalf("the failed delete: %d", code)
	}
	if _, r := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/recordings/"+a, ""); r["kept"] != false {
		t.Errorf("a failed delete left it kept: %v", r)
	}
	if code, r := e.do(t, e.alice, "DELETE", "/api/v1/desktops/"+id+"?keep_recordings=true", ""); code != 200 {
		t.Fatalf("delete keeping recordings: %d %v", code, r)
	}
	for _, rid := range []string{a, b} {
		if code, r := e.do(t, e.alice, "GET", "/api/v1/recordings/"+rid, ""); code != 200 || r["kept"] != true {
			t.Errorf("%s after the delete: %d %v", rid, code, r)
		}
	}
}

// The MCP tool delete_desktop keeps them too, with keep_recordings.
func TestMCPDeleteDesktopKeepingRecordings(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on this host")
	}
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	rid := recorded(t, e, e.alice, id)
	cs, err := mcpSession(t, e, e.alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_desktop", Arguments: map[string]any{"desktop": id, "keep_recordings": true}})
	if err != nil || res.IsError {
		t.Fatalf("delete_desktop: %v %+v", err, res)
	}
	if code, r := e.do(t, e.alice, "GET", "/api/v1/recordings/"+rid, ""); code != 200 || r["kept"] != true {
		t.Errorf("after delete_desktop with keep_recordings: %d %v", code, r)
	}
}
