package api

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pngScreens is a fake display whose colour changes each time it is read
// (until frozen).
type pngScreens struct{ n atomic.Int32 }

func (p *pngScreens) Screenshot(context.Context, string) ([]byte, string, error) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 40))
	c := color.RGBA{uint8(p.n.Add(1) * 7), 90, 200, 255}
	for y := 0; y < 40; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes(), "image/png", nil
}

func TestRecordings(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on this host")
	}
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id + "/recordings"
	for body, want := range map[string]int{`{"fps":0.5}`: 400, `{"fps":50}`: 422, `{"max_seconds":100000}`: 422, `{"bogus":1}`: 400} {
		if code, r := e.do(t, e.alice, "POST", base, body); code != want {
			t.Errorf("start with %s: %d %v, want %d", body, code, r, want)
		}
	}
	code, r := e.do(t, e.alice, "POST", base, `{"fps":5}`)
	if code != 201 || r["state"] != "recording" || r["width"] != 64.0 || r["video_url"] != nil {
		t.Fatalf("start: %d %v", code, r)
	}
	rid := r["id"].(string)
	if code, _ := e.do(t, e.alice, "POST", base, ``); code != 409 {
		t.Errorf("a second recording: %d", code)
	}
	if code, _ := e.do(t, e.alice, "GET", base+"/"+rid+"/video", ""); code != 409 {
		t.Errorf("the video while recording: %d", code)
	}
	if code, _ := e.do(t, e.bob, "GET", base+"/"+rid, ""); code != 404 {
		t.Errorf("bob sees alice's recording: %d", code)
	}
	time.Sleep(time.Second)
	code, r = e.do(t, e.alice, "POST", base+"/"+rid+"/stop", "")
	if code != 200 || r["state"] != "done" || !strings.HasPrefix(r["ended_why"].(string), "stopped by alice/") || r["size_bytes"].(float64) == 0 ||
		r["frames"].(float64) < 3 || r["video_url"] != base+"/"+rid+"/video" {
		t.Fatalf("stop: %d %v", code, r)
	}
	if code, again := e.do(t, e.alice, "POST", base+"/"+rid+"/stop", ""); code != 200 || again["ended_at"] != r["ended_at"] {
		t.Errorf("stop again: %d %v", code, again)
	}
	code, list := e.do(t, e.alice, "GET", base, "")
	if code != 200 || len(list["recordings"].([]any)) != 1 {
		t.Errorf("list: %d %v", code, list)
	}
	// The video, whole and in a range (a player seeking).
	get := func(rng string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", e.srv.URL+base+"/"+rid+"/video", nil)
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
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/webm" || !bytes.HasPrefix(whole, []byte{0x1a, 0x45, 0xdf, 0xa3}) {
		t.Fatalf("video: %d %s % x", resp.StatusCode, resp.Header.Get("Content-Type"), whole[:min(4, len(whole))])
	}
	resp, part := get("bytes=4-9")
	if resp.StatusCode != 206 || !bytes.Equal(part, whole[4:10]) {
		t.Errorf("a range: %d % x", resp.StatusCode, part)
	}
	if code, _ := e.do(t, e.alice, "DELETE", base+"/"+rid, ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := e.do(t, e.alice, "GET", base+"/"+rid, ""); code != 404 {
		t.Errorf("after delete: %d", code)
	}
}

// record=true on a computer-use call records the batch, and leaves a
// recording already under way alone.
func TestRecordABatch(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on this host")
	}
	e := newEnv(t)
	id := runningDesktop(t, e, e.alice)
	call := func() string {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/desktops/"+id+"/computer?record=true", strings.NewReader(`{"action":"mouse_move","coordinate":[5,5]}`))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("computer?record=true: %v %v", resp.StatusCode, err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-Bureau-Recording")
	}
	rid := call()
	if !strings.HasPrefix(rid, "rec_") {
		t.Fatalf("X-Bureau-Recording %q", rid)
	}
	var r map[string]any
	waitFor(t, "the batch's recording ends", func() bool {
		_, r = e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/recordings/"+rid, "")
		return r["state"] == "done"
	})
	if r["ended_why"] != "the computer-use batch ended" {
		t.Errorf("ended: %v", r)
	}
	_, started := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/recordings", "")
	if got := call(); got != started["id"] {
		t.Errorf("a batch during a recording made its own: %q, want %v", got, started["id"])
	}
	time.Sleep(1500 * time.Millisecond)
	if _, cur := e.do(t, e.alice, "GET", "/api/v1/desktops/"+id+"/recordings/"+recID(started), ""); cur["state"] != "recording" {
		t.Errorf("the recording under way was stopped by the batch: %v", cur)
	}
	e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/recordings/"+recID(started)+"/stop", "")
	if code, _ := e.do(t, e.alice, "POST", "/api/v1/desktops/"+id+"/computer?record=maybe", `{"action":"mouse_move","coordinate":[5,5]}`); code != 422 {
		t.Errorf("record=maybe: %d", code)
	}
}

func recID(m map[string]any) string { s, _ := m["id"].(string); return s }
