//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/guest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pointer is where the guest's X server says the pointer is.
func (s *server) pointer(d *apiv1.Desktop) (int, int) {
	s.t.Helper()
	out, _ := s.guest(d, "su agent -c 'DISPLAY=:0 xdotool getmouselocation --shell'")
	var x, y int
	for _, l := range strings.Split(out, "\n") {
		fmt.Sscanf(l, "X=%d", &x)
		fmt.Sscanf(l, "Y=%d", &y)
	}
	return x, y
}

func (s *server) computer(token string, d *apiv1.Desktop, req any) *computer.Result {
	s.t.Helper()
	var res computer.Result
	if code := s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/computer", req, &res); code != 200 {
		s.t.Fatalf("computer %v: %d", req, code)
	}
	return &res
}

var pointerDisplays = []computer.Size{{Width: 1280, Height: 800}, {Width: 1024, Height: 768}, {Width: 800, Height: 500}}

// checkPointer moves the pointer to n random points of a display size and
// checks that it lands within a pixel of each.
func checkPointer(t *testing.T, s *server, token string, d *apiv1.Desktop, display computer.Size, n int) bool {
	t.Helper()
	rng := mrand.New(mrand.NewPCG(uint64(display.Width), uint64(n)))
	worst, ok := 0, true
	for range n {
		x, y := rng.IntN(display.Width), rng.IntN(display.Height)
		// Points on the bottom panel would open menus; keep to the desktop.
		y = min(y, display.Height*85/100)
		s.computer(token, d, map[string]any{"action": "mouse_move", "coordinate": []int{x, y}, "display": display})
		// The real pixel is the one under the middle of the display pixel.
		wx, wy := (2*x+1)*1280/(2*display.Width), (2*y+1)*800/(2*display.Height)
		// The move is in the guest's kernel when the call returns; X on a
		// busy guest may take a moment more to read it.
		var gx, gy, off int
		for try := 0; try < 10; try++ {
			gx, gy = s.pointer(d)
			if off = max(abs(gx-wx), abs(gy-wy)); off <= 1 {
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
		worst = max(worst, off)
		if off > 1 {
			ok = false
			t.Errorf("display %v: (%d,%d) → pointer at (%d,%d), want (%d,%d)", display, x, y, gx, gy, wx, wy)
		}
	}
	t.Logf("display %dx%d: %d points, worst offset %d px", display.Width, display.Height, n, worst)
	return ok
}

// catWindow opens an xterm at a place on screen that writes what it
// receives to file.
func (s *server) catWindow(d *apiv1.Desktop, geometry, file string) {
	s.t.Helper()
	s.guest(d, "rm -f "+file+"; su agent -c 'cd; LANG=C.UTF-8 DISPLAY=:0 setsid xterm -geometry "+geometry+
		" -e sh -c \"stty -icanon -echo; exec cat > "+file+"\" >/dev/null 2>&1 &'")
	s.waitGuest(d, "xterm for "+file, "test -e "+file, time.Minute)
	time.Sleep(2 * time.Second) // mapped and focused
}

// testComputerUse clicks at points in three display sizes and checks the
// pointer lands within a pixel, delivers clicks to the window under the
// pointer, types 500 characters with symbols and Unicode exactly, and
// refuses bad actions.
func testComputerUse(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	s.guest(d, "pkill -x xterm")
	for _, display := range pointerDisplays {
		checkPointer(t, s, token, d, display, 30)
	}

	// Clicks reach the window under the pointer: two windows, a middle
	// click (paste) into the second one only.
	s.catWindow(d, "40x10+0+40", "/tmp/left.txt")
	s.catWindow(d, "40x10+700+400", "/tmp/right.txt")
	s.guest(d, "printf pasted-by-click | su agent -c 'DISPLAY=:0 xclip -selection primary -i >/dev/null 2>&1'")
	// In display space 1024x768: the right window's middle is at real (850, 480).
	s.computer(token, d, map[string]any{"display": map[string]int{"width": 1024, "height": 768},
		"actions": []map[string]any{{"action": "middle_click", "coordinate": []int{680, 460}}}})
	time.Sleep(time.Second)
	if got, _ := s.guest(d, "cat /tmp/right.txt; echo /; cat /tmp/left.txt"); got != "pasted-by-click/" {
		t.Errorf("middle click pasted into the wrong window: right/left = %q", got)
	}
	s.guest(d, "pkill -x xterm")

	// Typing and keys, exactly (BUREAU_TYPING_RUNS times: make typing-soak).
	runs := 1
	if n, err := strconv.Atoi(os.Getenv("BUREAU_TYPING_RUNS")); err == nil && n > 0 {
		runs = n
	}
	lost := 0
	for i := range runs {
		// A soak moves the pointer in each run too.
		pointed := runs == 1 || checkPointer(t, s, token, d, pointerDisplays[i%len(pointerDisplays)], 10)
		if !checkTyping(t, s, token, d, uint64(i+1)) || !pointed {
			lost++
		}
	}
	if runs > 1 {
		t.Logf("typing: %d of %d runs exact", runs-lost, runs)
	}

	// Screenshots: settled, scaled, JPEG.
	res := s.computer(token, d, map[string]any{"action": "screenshot", "display": map[string]int{"width": 1024, "height": 640}})
	img := res.Results[0].Image
	if m, err := png.Decode(bytes.NewReader(img.Data)); err != nil || m.Bounds().Dx() != 1024 || m.Bounds().Dy() != 640 {
		t.Errorf("scaled screenshot: %v", err)
	}
	var jpg []byte
	if code := s.call(token, "GET", "/api/v1/desktops/"+d.ID+"/screenshot?format=jpeg&quality=60&width=640", nil, &jpg); code != 200 {
		t.Errorf("jpeg screenshot: %d", code)
	} else if m, err := jpeg.Decode(bytes.NewReader(jpg)); err != nil || m.Bounds().Dx() != 640 || m.Bounds().Dy() != 400 {
		t.Errorf("jpeg screenshot: %v", err)
	}
	if res := s.computer(token, d, map[string]any{"action": "cursor_position"}); res.Results[0].Cursor == nil {
		t.Errorf("cursor_position: %+v", res.Results[0])
	}

	// Bad input is refused with the bounds or the valid names.
	path := "/api/v1/desktops/" + d.ID + "/computer"
	if e := s.expectError(token, "POST", path, map[string]any{"action": "left_click", "coordinate": []int{1280, 10}}, 422, "invalid"); !strings.Contains(e.Error.Message, "0..1279") {
		t.Errorf("out of bounds: %q", e.Error.Message)
	}
	if e := s.expectError(token, "POST", path, map[string]any{"action": "teleport"}, 422, "invalid"); !strings.Contains(e.Error.Message, "left_click") {
		t.Errorf("unknown action: %q", e.Error.Message)
	}
	s.expectError(token, "POST", path, map[string]any{"action": "key", "text": "ctrl+nokey"}, 422, "invalid")
	s.expectError(token, "GET", "/api/v1/desktops/"+d.ID+"/screenshot?format=gif", nil, 422, "invalid")
	s.expectError(token, "POST", path, map[string]any{"action": "left_click", "coordinate": []int{1, 1}, "expect": "nothing"}, 422, "invalid")
	s.expectError(token, "POST", path, map[string]any{"action": "left_click", "coordinate": []int{1, 1}, "verify_ms": 60000}, 422, "invalid")

	checkVerifiedActions(t, s, token, d) // verify_test.go
}

// checkTyping types 470 random printable ASCII characters and Unicode
// into an xterm, then keys in both shapes, and says whether all arrived
// exactly.
func checkTyping(t *testing.T, s *server, token string, d *apiv1.Desktop, seed uint64) bool {
	t.Helper()
	ok := true
	text := randomASCII(mrand.New(mrand.NewPCG(seed, 2)), "", 440) + " naïve café — 日本語 🙂 ß € Ünï\nend"
	got, res, took := s.typeIntoTerminal(token, d, "100x20+50+50", "/tmp/typed.txt", text)
	if got != strings.TrimSpace(text) {
		t.Errorf("typed text differs:\n got %q\nwant %q", got, text)
		ok = false
	}
	if res.Keyboard != "virtio" {
		t.Errorf("keys went in by the %q keyboard, want virtio (acknowledged)", res.Keyboard)
	}
	t.Logf("typed %d characters (%s, %s keyboard) in %s: %.0f chars/s", len([]rune(text)), res.TypedVia, res.Keyboard,
		took.Round(time.Millisecond), float64(len([]rune(text)))/took.Seconds())
	// Keys in both shapes: OpenAI's SHIFT+A and Anthropic's xdotool names.
	s.computer(token, d, map[string]any{"actions": []map[string]any{
		{"type": "keypress", "keys": []string{"SHIFT", "A"}}, {"action": "key", "text": "Return"}, {"action": "key", "text": "ctrl+c"},
	}})
	time.Sleep(time.Second)
	if got, _ := s.guest(d, "tail -c 3 /tmp/typed.txt"); got != "dA" {
		t.Errorf("keys: the file ends with %q", got)
		ok = false
	}
	s.guest(d, "pkill -x xterm")
	return ok
}

// randomASCII is prefix followed by random printable ASCII (every
// character 33..126, and spaces) up to n bytes.
func randomASCII(rng *mrand.Rand, prefix string, n int) string {
	b := strings.Builder{}
	b.WriteString(prefix)
	for b.Len() < n+30 {
		b.WriteByte(byte(33 + rng.IntN(94)))
		if rng.IntN(9) == 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// typeIntoTerminal opens a terminal that writes what it receives to file,
// clicks into it and types text; it returns what arrived, the type step's
// result and how long the call took.
func (s *server) typeIntoTerminal(token string, d *apiv1.Desktop, geometry, file, text string) (string, computer.StepResult, time.Duration) {
	s.t.Helper()
	s.catWindow(d, geometry, file)
	s.computer(token, d, map[string]any{"action": "left_click", "coordinate": []int{300, 150}})
	// An agent looks at the screen between a click and typing; the guest
	// (starved under TCG) redraws for the focus change meanwhile.
	time.Sleep(time.Second)
	begun := time.Now()
	res := s.computer(token, d, map[string]any{"action": "type", "text": text})
	took := time.Since(begun)
	// The call returns once the X server has handled every key; xterm
	// and cat still have to write them out.
	time.Sleep(time.Second)
	got, _ := s.guest(d, "cat "+file)
	return got, res.Results[0], took
}

// testExecFilesClipboard runs commands, moves files (with path tricks
// refused), and round-trips the clipboard and a resolution change.
func testExecFilesClipboard(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	api := "/api/v1/desktops/" + d.ID
	var r guest.ExecResult
	if code := s.call(token, "POST", api+"/exec", map[string]any{"cmd": "id -un; pwd; cat; echo err >&2; exit 3", "stdin": "in put\n"}, &r); code != 200 ||
		r.Stdout != "agent\n/home/agent\nin put\n" || r.Stderr != "err\n" || r.ExitCode != 3 {
		t.Errorf("exec: %d %+v", code, r)
	}
	if s.call(token, "POST", api+"/exec", map[string]any{"argv": []string{"sh", "-c", "id -un; pwd; echo $FOO"}, "user": "root", "cwd": "/tmp", "env": map[string]string{"FOO": "bar"}}, &r); r.Stdout != "root\n/tmp\nbar\n" {
		t.Errorf("exec as root in /tmp: %+v", r)
	}
	if s.call(token, "POST", api+"/exec", map[string]any{"cmd": "sleep 30", "timeout_s": 1}, &r); !r.TimedOut || r.DurationMS > 20000 {
		t.Errorf("timeout: %+v", r)
	}
	if s.call(token, "POST", api+"/exec", map[string]any{"cmd": "head -c 5000 /dev/zero | tr '\\0' x", "max_output_bytes": 100}, &r); len(r.Stdout) != 100 || !r.Truncated {
		t.Errorf("capped output: %d bytes, truncated %v", len(r.Stdout), r.Truncated)
	}
	s.expectError(token, "POST", api+"/exec", map[string]any{}, 422, "invalid")
	s.expectError(token, "POST", api+"/exec", map[string]any{"cmd": "true", "user": "bad user"}, 422, "invalid")
	testExecStream(t, s, token, d)

	// Files: an 8 MiB upload and download, byte for byte.
	data := make([]byte, 8<<20)
	rand.Read(data)
	begun := time.Now()
	var put struct {
		Path string
		Size int64
	}
	if code := s.call(token, "PUT", api+"/files?path=up/deep/blob.bin&mode=0600", string(data), &put); code != 201 || put.Path != "/home/agent/up/deep/blob.bin" || put.Size != int64(len(data)) {
		t.Fatalf("upload: %d %+v", code, put)
	}
	up := time.Since(begun)
	begun = time.Now()
	var got []byte
	if code := s.call(token, "GET", api+"/files?path=/home/agent/up/deep/blob.bin", nil, &got); code != 200 || !bytes.Equal(got, data) {
		t.Errorf("download: %d, %d bytes, equal %v", code, len(got), bytes.Equal(got, data))
	}
	t.Logf("8 MiB file: upload %s (%.1f MB/s), download %s (%.1f MB/s)", up.Round(time.Millisecond), 8.39/up.Seconds(),
		time.Since(begun).Round(time.Millisecond), 8.39/time.Since(begun).Seconds())
	if out, _ := s.guest(d, "stat -c '%U %a' /home/agent/up/deep/blob.bin; ls -a /home/agent/up/deep"); out != "agent 600\n.\n..\nblob.bin" {
		t.Errorf("uploaded file in the guest: %q", out)
	}
	var dir guest.Stat
	if s.call(token, "GET", api+"/files?path=up", nil, &dir); !dir.Dir || len(dir.Entries) != 1 || dir.Entries[0].Name != "deep" {
		t.Errorf("listing: %+v", dir)
	}
	for p, code := range map[string]string{
		"up/../../../etc/shadow": "forbidden", "/root/.bashrc": "forbidden", "/nope/x": "not_found", "": "invalid",
	} {
		want := map[string]int{"forbidden": 403, "not_found": 404, "invalid": 422}[code]
		s.expectError(token, "GET", api+"/files?path="+p, nil, want, code)
	}
	s.expectError(token, "PUT", api+"/files?path=/etc/evil", "x", 403, "forbidden")
	s.expectError(token, "PUT", api+"/files?path=up", "x", 409, "conflict")
	s.expectError(token, "DELETE", api+"/files?path=up", nil, 409, "conflict")
	if code := s.call(token, "DELETE", api+"/files?path=up&recursive=true", nil, nil); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if out, code := s.guest(d, "test -e /home/agent/up"); code == 0 {
		t.Errorf("deleted directory still there: %s", out)
	}

	// Clipboard: text both ways, and an image.
	var clip struct {
		Text  string
		Types []string
	}
	s.call(token, "PUT", api+"/clipboard", map[string]string{"text": "clip ☃ board"}, nil)
	if out, _ := s.guest(d, "su agent -c 'DISPLAY=:0 xclip -selection clipboard -o'"); out != "clip ☃ board" {
		t.Errorf("clipboard set through the API, read in the desktop: %q", out)
	}
	s.guest(d, "printf 'copied ☃ in the desktop' | su agent -c 'DISPLAY=:0 xclip -selection clipboard -i >/dev/null 2>&1'")
	if s.call(token, "GET", api+"/clipboard", nil, &clip); clip.Text != "copied ☃ in the desktop" || !slices.Contains(clip.Types, "text/plain") {
		t.Errorf("clipboard copied in the desktop, read through the API: %+v", clip)
	}
	var img []byte
	s.call(token, "GET", api+"/screenshot", nil, &img)
	if code := s.putRaw(token, api+"/clipboard", "image/png", img); code != 200 {
		t.Errorf("put an image on the clipboard: %d", code)
	}
	if out, _ := s.guest(d, "su agent -c 'DISPLAY=:0 xclip -selection clipboard -t image/png -o' | sha256sum"); !strings.HasPrefix(out, fmt.Sprintf("%x", sha256.Sum256(img))) {
		t.Errorf("the image on the desktop's clipboard differs (sha256 %s)", out)
	}
	var back []byte
	if code := s.call(token, "GET", api+"/clipboard?type=image/png", nil, &back); code != 200 || !bytes.Equal(back, img) {
		t.Errorf("image read back: %d, %d bytes of %d", code, len(back), len(img))
	}
	s.expectError(token, "PUT", api+"/clipboard", "GIF89a", 400, "bad_request") // JSON expected without a type
	if code := s.putRaw(token, api+"/clipboard", "image/png", []byte("GIF89a not a png")); code != 422 {
		t.Errorf("a GIF as image/png: %d", code)
	}
	if code := s.call(token, "POST", api+"/resolution", map[string]int{"width": 1024, "height": 768}, nil); code != 200 {
		t.Fatalf("resolution: %d", code)
	}
	var shot []byte
	s.call(token, "GET", api+"/screenshot", nil, &shot)
	if m, err := png.Decode(bytes.NewReader(shot)); err != nil || m.Bounds().Dx() != 1024 || m.Bounds().Dy() != 768 {
		t.Errorf("after resolution change: %v", err)
	}
	s.expectError(token, "POST", api+"/computer", map[string]any{"action": "mouse_move", "coordinate": []int{1100, 10}}, 422, "invalid")
	s.call(token, "POST", api+"/resolution", map[string]int{"width": 1280, "height": 800}, nil)
	s.expectError(token, "POST", api+"/resolution", map[string]int{"width": 10, "height": 800}, 422, "invalid")
}

// bearerTransport adds a token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// testMCP drives the desktop with a real MCP client (the go-sdk's) over
// streamable HTTP: list tools, screenshot, exec.
func testMCP(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := s.mcpSession(ctx, token)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 8 {
		t.Fatalf("tools: %v %d", err, len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "screenshot", Arguments: map[string]any{"desktop": d.ID}})
	if err != nil || res.IsError {
		t.Fatalf("screenshot: %v %+v", err, res)
	}
	img, ok := res.Content[0].(*mcp.ImageContent)
	if !ok {
		t.Fatalf("screenshot content %T", res.Content[0])
	}
	if m, err := png.Decode(bytes.NewReader(img.Data)); err != nil || m.Bounds().Dx() != 1280 {
		t.Errorf("screenshot over MCP is not the screen: %v", err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"desktop": d.ID, "cmd": "echo from-mcp; hostname"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `from-mcp\nagent-1`) {
		t.Errorf("exec over MCP: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "computer", Arguments: map[string]any{"desktop": d.ID,
		"actions": []map[string]any{{"action": "mouse_move", "coordinate": []int{10, 10}}}, "screenshot": true}})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Errorf("computer over MCP: %v %+v", err, res)
	}
	// The clipboard both ways, the desktop's events and a console link
	// a human can open.
	tool(ctx, t, cs, "set_clipboard", map[string]any{"desktop": d.ID, "text": "über MCP"})
	if out := tool(ctx, t, cs, "get_clipboard", map[string]any{"desktop": d.ID}); !strings.Contains(out, `"text":"über MCP"`) {
		t.Errorf("get_clipboard after set_clipboard: %s", out)
	}
	if out := tool(ctx, t, cs, "desktop_events", map[string]any{"desktop": d.ID, "limit": 3}); !strings.Contains(out, `"desktop_id":"`+d.ID+`"`) {
		t.Errorf("desktop_events: %.300s", out)
	}
	var link struct{ URL string }
	json.Unmarshal([]byte(tool(ctx, t, cs, "console_link", map[string]any{"desktop": d.ID, "view_only": true, "ttl_minutes": 1})), &link)
	if code, body := fetch(t, http.DefaultClient, "GET", link.URL, "", "", nil); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("console link %q from MCP: %d %.100q", link.URL, code, body)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// testExecStream runs a command that prints over a few seconds with
// ?stream=true and checks the output arrives as it is printed, then the
// exit code.
func testExecStream(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	req, _ := http.NewRequest("POST", s.url+"/api/v1/desktops/"+d.ID+"/exec?stream=true",
		strings.NewReader(`{"cmd":"echo one; sleep 3; echo two >&2; sleep 1; exit 4"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	begun := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []string
	var firstAt time.Duration
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			if len(events) == 0 {
				firstAt = time.Since(begun)
			}
			events = append(events, event+" "+data)
		}
	}
	want := []string{`stdout {"data":"one\n"}`, `stderr {"data":"two\n"}`}
	if len(events) != 3 || events[0] != want[0] || events[1] != want[1] || !strings.Contains(events[2], `"exit_code":4`) {
		t.Errorf("streamed events: %q", events)
	}
	if total := time.Since(begun); firstAt > total-2*time.Second {
		t.Errorf("first output after %s of %s: not streamed", firstAt, total)
	}
}
