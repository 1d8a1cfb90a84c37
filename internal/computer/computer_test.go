package computer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// fakeVM records input calls and serves a fixed screen.
type fakeVM struct {
	mu     sync.Mutex
	calls  [][]raw.InputEvent
	at     []time.Time // when each call arrived
	frames [][]byte    // served in turn; the last repeats
	shots  int
	execs  []desktop.Exec
	kq     *fakeQueue
	tablet *fakeTablet
	// xmodmap is what xmodmap -pk prints in the guest ("" = not there).
	xmodmap     string
	keymapReads int
}

// fakeQueue is a desktop's virtio keyboard and what reads it. The guest
// driver has posted free buffers; a report takes one per event and one
// for its sync and is dropped whole when they do not fit. Each time
// bureau looks, the guest kernel hands drain buffers' events on to X
// (through a 64-event buffer it empties when X falls behind) and X
// handles xRate events, switching the Num Lock LED on each press unless
// silent.
type fakeQueue struct {
	size, free, drain int
	xRate             int
	silent            bool

	ring, x  []raw.InputEvent // nil stands for a sync
	leds     uint16
	dropped  int // reports that did not fit
	overflow int // times X's buffer overflowed
	largest  int
	typed    [][]raw.InputEvent // what X received, in order
}

func (q *fakeQueue) step() {
	n := min(q.drain, len(q.ring))
	q.x, q.ring = append(q.x, q.ring[:n]...), q.ring[n:]
	q.free += n
	if len(q.x) > 64 {
		q.overflow++
		q.x = nil
	}
	n = min(q.xRate, len(q.x))
	var got []raw.InputEvent
	for _, e := range q.x[:n] {
		if k, ok := e.(raw.InputEventKey); ok {
			if raw.QKeyCode(k.Key.(raw.KeyValueQcode)) == raw.QKeyCodeNumLock {
				if k.Down && !q.silent {
					q.leds++
				}
				continue
			}
			got = append(got, e)
		}
	}
	if len(got) > 0 {
		q.typed = append(q.typed, got)
	}
	q.x = q.x[n:]
}

func (f *fakeVM) KeyQueue(context.Context, string) (int, uint16, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kq == nil {
		return 0, 0, false, nil
	}
	f.kq.step()
	return f.kq.free, f.kq.leds, true, nil
}

func (f *fakeVM) PointerQueue(context.Context, string) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tablet == nil {
		return 0, false, nil
	}
	f.tablet.step()
	return f.tablet.free, true, nil
}

func (f *fakeVM) SendInput(_ context.Context, _ string, ev []raw.InputEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, key := ev[0].(raw.InputEventKey); !key && f.tablet != nil && !f.tablet.send(ev) {
		return nil
	}
	if _, key := ev[0].(raw.InputEventKey); key && f.kq != nil {
		f.kq.step() // the guest runs meanwhile
		if len(ev)+1 > f.kq.free {
			f.kq.dropped++
			return nil
		}
		f.kq.free -= len(ev) + 1
		f.kq.largest = max(f.kq.largest, len(ev))
		f.kq.ring = append(append(f.kq.ring, ev...), nil)
	}
	f.calls = append(f.calls, ev)
	f.at = append(f.at, time.Now())
	return nil
}

func (f *fakeVM) Screenshot(context.Context, string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.shots, len(f.frames)-1)
	f.shots++
	return f.frames[i], "image/png", nil
}

func (f *fakeVM) GuestExec(_ context.Context, _ string, e desktop.Exec) (*desktop.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Contains(e.Argv, "xmodmap") {
		f.keymapReads++
		if f.xmodmap == "" {
			return &desktop.ExecResult{ExitCode: 127, Stderr: []byte("xmodmap: not found")}, nil
		}
		return &desktop.ExecResult{Stdout: []byte(f.xmodmap)}, nil
	}
	f.execs = append(f.execs, e)
	return &desktop.ExecResult{Stdout: []byte("X=7\nY=9\nSCREEN=0\n")}, nil
}

func (f *fakeVM) json(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.calls)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func pngFrame(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func newFake(t *testing.T) (*Computer, *fakeVM) {
	f := &fakeVM{frames: [][]byte{pngFrame(t, 1280, 800, color.White)}}
	c := New(f, f, f)
	c.SettleFor, c.SettleMax = 20*time.Millisecond, 500*time.Millisecond
	return c, f
}

func run(t *testing.T, c *Computer, body string) (*Result, error) {
	t.Helper()
	var req Request
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return c.Run(context.Background(), "d", req)
}

func TestClickSendsMoveThenEachButtonChangeApart(t *testing.T) {
	c, f := newFake(t)
	if _, err := run(t, c, `{"action":"double_click","coordinate":[640,400]}`); err != nil {
		t.Fatal(err)
	}
	want := `[[{"data":{"axis":"x","value":16397},"type":"abs"},{"data":{"axis":"y","value":16404},"type":"abs"}],` +
		`[{"data":{"button":"left","down":true},"type":"btn"}],[{"data":{"button":"left","down":false},"type":"btn"}],` +
		`[{"data":{"button":"left","down":true},"type":"btn"}],[{"data":{"button":"left","down":false},"type":"btn"}]]`
	if got := f.json(t); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
}

func TestOpenAIClickAndKeypress(t *testing.T) {
	c, f := newFake(t)
	if _, err := run(t, c, `{"actions":[{"type":"click","x":10,"y":20,"button":"right"},{"type":"keypress","keys":["CTRL","A"]}]}`); err != nil {
		t.Fatal(err)
	}
	got := f.json(t)
	for _, want := range []string{`"button":"right","down":true`,
		// Pressed and released in one report.
		`[{"data":{"key":{"data":"ctrl","type":"qcode"},"down":true},"type":"key"},{"data":{"key":{"data":"a","type":"qcode"},"down":true},"type":"key"},` +
			`{"data":{"key":{"data":"a","type":"qcode"},"down":false},"type":"key"},{"data":{"key":{"data":"ctrl","type":"qcode"},"down":false},"type":"key"}]`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in %s", want, got)
		}
	}
	if strings.Contains(got, `"shift"`) {
		t.Errorf("CTRL+A must not add shift: %s", got)
	}
}

func TestKeyChords(t *testing.T) {
	for in, want := range map[string]string{
		"ctrl+shift+t": "[ctrl shift t]",
		"Return":       "[ret]",
		"super":        "[meta_l]",
		"ctrl+T":       "[shift ctrl t]",
		"ctrl++":       "[shift ctrl equal]",
		"Page_Down":    "[pgdn]",
		"KP_Enter":     "[kp_enter]",
		"alt+F4":       "[alt f4]",
		"exclam":       "[shift 1]",
	} {
		c, err := parseChord(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		var names []string
		for _, k := range c {
			names = append(names, k.String())
		}
		if got := "[" + strings.Join(names, " ") + "]"; got != want {
			t.Errorf("%s = %s, want %s", in, got, want)
		}
	}
	if _, err := parseKeys("ctrl+a BackSpace"); err != nil {
		t.Error(err)
	}
	_, err := parseChord("ctrl+bogus")
	if err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "Return") {
		t.Errorf("unknown key error should name it and list valid keys: %v", err)
	}
}

func TestTypeUsesKeysForUSTextAndTheGuestForTheRest(t *testing.T) {
	c, f := newFake(t)
	res, err := run(t, c, `{"action":"type","text":"Hi! a_b"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Results[0].TypedVia != "keyboard" || len(f.execs) != 0 {
		t.Fatalf("ASCII went via %s", res.Results[0].TypedVia)
	}
	// "Hi! a_b": shift h (shift up) i, shift 1 ... in calls that fit the
	// PS/2 queue, and replaying them types the text.
	if len(f.calls) < 2 {
		t.Errorf("%d input calls for 7 characters", len(f.calls))
	}
	if got := replay(t, f.calls); got != "Hi! a_b" {
		t.Errorf("replayed %q", got)
	}
	f.calls = nil
	res, err = run(t, c, `{"action":"type","text":"naïve 日本 🙂"}`)
	if err != nil || res.Results[0].TypedVia != "keyboard+paste" || len(f.execs) != 1 {
		t.Fatalf("unicode: %v %+v", err, res)
	}
	// "na" typed, the rest pasted at once (the ASCII between is short).
	for i, want := range []string{"ïve 日本 🙂"} {
		if string(f.execs[i].Stdin) != want || !strings.Contains(strings.Join(f.execs[i].Argv, " "), "xclip") {
			t.Errorf("paste %d: %q via %v", i, f.execs[i].Stdin, f.execs[i].Argv)
		}
	}
	if n := strings.Count(f.json(t), `"data":"insert"`); n != 2 {
		t.Errorf("%d shift+Insert key events, want a press and a release", n)
	}
	runs := splitTypeable("é and then a long stretch of plain text ü\nö", usKeymap)
	if len(runs) != 5 || runs[1].text != " and then a long stretch of plain text " || runs[3].text != "\n" {
		t.Errorf("runs %+v", runs)
	}
}

func TestScalingIsExact(t *testing.T) {
	for _, d := range []Size{{1024, 768}, {1280, 800}, {640, 400}, {1366, 900}} {
		s, err := newScaler(&d, 1280, 800)
		if err != nil {
			t.Fatal(err)
		}
		for x := 0; x < d.Width; x += 7 {
			for y := 0; y < d.Height; y += 11 {
				r := s.real(Point{x, y})
				if r.X < 0 || r.X >= 1280 || r.Y < 0 || r.Y >= 800 {
					t.Fatalf("%v: (%d,%d) → %v off screen", d, x, y, r)
				}
				// The real pixel lies within the block the display pixel covers.
				if fx := float64(x) * 1280 / float64(d.Width); float64(r.X) < fx-1 || float64(r.X) > fx+1280/float64(d.Width) {
					t.Fatalf("%v: x %d → %d (block starts %.2f)", d, x, r.X, fx)
				}
				if d.Width <= 1280 && d.Height <= 800 {
					if back := s.toDisplay(r); back != (Point{x, y}) {
						t.Fatalf("%v: (%d,%d) → %v → %v", d, x, y, r, back)
					}
				}
			}
		}
	}
}

func TestAbsAxisHitsPixelMiddles(t *testing.T) {
	// The guest maps v in 0..32767 to v*size/32768; each pixel's value
	// must land inside it, and the ends stay in range.
	for _, size := range []int{800, 1024, 1280, 1920} {
		for px := 0; px < size; px++ {
			v := absAxis(px, size)
			if got := int(v * int64(size) / 32768); got != px {
				t.Fatalf("size %d: pixel %d → %d → %d", size, px, v, got)
			}
		}
	}
}

func TestBadInputIsRefusedBeforeAnythingHappens(t *testing.T) {
	c, f := newFake(t)
	for body, field := range map[string]string{
		`{"action":"left_click","coordinate":[1280,5]}`:                                       "coordinate",
		`{"action":"left_click","coordinate":[1023,5],"display":{"width":1024,"height":768}}`: "",
		`{"actions":[{"action":"mouse_move","coordinate":[1,1]},{"action":"fly"}]}`:           "actions[1].action",
		`{"type":"teleport"}`:                 "type",
		`{"action":"key","text":"ctrl+nope"}`: "text",
		`{"action":"scroll","coordinate":[1,1],"scroll_direction":"sideways"}`: "scroll_direction",
		`{"action":"zoom","region":[10,10,5,5]}`:                               "region",
		`{"action":"mouse_move"}`:                                              "coordinate",
		`{"action":"wait","duration":99}`:                                      "duration",
		`{}`:                                                                   "action",
		`{"action":"left_click","type":"click"}`:                               "action",
		`{"action":"left_click","display":{"width":0,"height":-1}}`:            "display",
	} {
		_, err := run(t, c, body)
		var ve *desktop.ValidationError
		if field == "" {
			if err != nil {
				t.Errorf("%s: %v", body, err)
			}
			continue
		}
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%s: %v, want a validation error on %s", body, err, field)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Only the valid click at 1023 sent input (move, down, up).
	if len(f.calls) != 3 {
		t.Errorf("%d input calls; invalid requests must send none", len(f.calls))
	}
	_, err := run(t, c, `{"action":"fly"}`)
	if err == nil || !strings.Contains(err.Error(), "left_click_drag") {
		t.Errorf("unknown action must list valid ones: %v", err)
	}
}

func TestScreenshotScalesAndSettles(t *testing.T) {
	c, f := newFake(t)
	white, black := pngFrame(t, 1280, 800, color.White), pngFrame(t, 1280, 800, color.Black)
	f.frames = [][]byte{white, black, white, black, black}
	res, err := run(t, c, `{"action":"mouse_move","coordinate":[100,100],"display":{"width":1024,"height":640},"screenshot":true}`)
	if err != nil {
		t.Fatal(err)
	}
	img := res.Screenshot
	if img.Width != 1024 || img.Height != 640 || img.Settled == nil || !*img.Settled {
		t.Fatalf("screenshot %dx%d settled=%v", img.Width, img.Height, img.Settled)
	}
	m, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil || m.Bounds().Dx() != 1024 {
		t.Fatalf("decode: %v", err)
	}
	if r, _, _, _ := m.At(5, 5).RGBA(); r != 0 {
		t.Errorf("settled on the wrong frame")
	}
	if res.Display != (Size{1024, 640}) || res.Screen != (Size{1280, 800}) {
		t.Errorf("sizes %+v %+v", res.Display, res.Screen)
	}
	// Cursor reports in display space where bureau put it.
	res, err = run(t, c, `{"action":"cursor_position","display":{"width":1024,"height":640}}`)
	if err != nil || *res.Results[0].Cursor != (Point{100, 100}) {
		t.Fatalf("cursor: %v %+v", err, res)
	}
	// Zoom returns the region fitted to the display.
	res, err = run(t, c, `{"action":"zoom","region":[0,0,512,160],"display":{"width":1024,"height":640}}`)
	if err != nil || res.Results[0].Image.Width != 1024 || res.Results[0].Image.Height != 320 {
		t.Fatalf("zoom: %v %+v", err, res.Results)
	}
}

func TestCursorBeforeAnyMoveAsksTheGuest(t *testing.T) {
	c, f := newFake(t)
	res, err := run(t, c, `{"action":"cursor_position"}`)
	if err != nil || *res.Results[0].Cursor != (Point{7, 9}) || len(f.execs) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestJPEGAndSizedScreenshot(t *testing.T) {
	c, _ := newFake(t)
	img, err := c.Screenshot(context.Background(), "d", ShotOptions{Format: "jpeg", Quality: 50, Width: 640})
	if err != nil || img.MediaType != "image/jpeg" || img.Width != 640 || img.Height != 400 {
		t.Fatalf("%v %+v", err, img)
	}
	if err := ValidateShot(ShotOptions{Format: "gif"}); err == nil {
		t.Error("gif accepted")
	}
	if err := ValidateShot(ShotOptions{Format: "png", Quality: 5}); err == nil {
		t.Error("quality for png accepted")
	}
}

// usByCode is the character each key types on a US keyboard, without and
// with shift.
func usByCode() map[raw.QKeyCode]map[bool]rune {
	byCode := map[raw.QKeyCode]map[bool]rune{}
	for r, k := range charKeys {
		if byCode[k.code] == nil {
			byCode[k.code] = map[bool]rune{}
		}
		byCode[k.code][k.shift] = r
	}
	return byCode
}

// replay interprets key events as a US keyboard would and checks each
// call fits the guest's queue and leaves shift up.
func replay(t *testing.T, calls [][]raw.InputEvent) string {
	t.Helper()
	var out strings.Builder
	for _, call := range calls {
		if len(call) > typeBudget {
			t.Errorf("call of %d events overflows the PS/2 queue", len(call))
		}
		typed, shift := replayStream([][]raw.InputEvent{call})
		if shift {
			t.Errorf("call ends with shift held")
		}
		out.WriteString(typed)
	}
	return out.String()
}

func TestKeyBatchesTypeEveryCharacter(t *testing.T) {
	all := ""
	for r := range charKeys {
		all += string(r)
	}
	text := all + "MiXeD CaSe AND CAPITALS and lower " + all
	if got := replay(t, keyBatches(text, typeBudget, usKeymap)); got != text {
		t.Errorf("replayed %q\nwant %q", got, text)
	}
}

// TestOpenAIKeysHeldThroughPointerActions: OpenAI's keys on a click, a
// drag or a scroll are pressed before it and released after it.
func TestOpenAIKeysHeldThroughPointerActions(t *testing.T) {
	for _, body := range []string{
		`{"type":"click","x":10,"y":20,"keys":["SHIFT"]}`,
		`{"type":"drag","path":[{"x":1,"y":1},{"x":50,"y":50}],"keys":["SHIFT"]}`,
		`{"type":"scroll","x":10,"y":20,"scroll_y":200,"keys":["SHIFT"]}`,
		`{"type":"move","x":10,"y":20,"keys":["SHIFT"]}`,
	} {
		c, f := newFake(t)
		if _, err := run(t, c, body); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		got := f.json(t)
		down := strings.Index(got, `{"data":{"key":{"data":"shift","type":"qcode"},"down":true}`)
		up := strings.LastIndex(got, `{"data":{"key":{"data":"shift","type":"qcode"},"down":false}`)
		// What the keys modify: the buttons, or for a move the motion.
		event := `"type":"btn"`
		if !strings.Contains(got, event) {
			event = `"type":"abs"`
		}
		if down < 0 || up < 0 || strings.Index(got, event) < down || strings.LastIndex(got, event) > up {
			t.Errorf("%s: shift not held around the pointer events: %s", body, got)
		}
	}
	c, _ := newFake(t)
	if _, err := run(t, c, `{"type":"type","text":"x","keys":["SHIFT"]}`); err == nil || !strings.Contains(err.Error(), "keys") {
		t.Errorf("keys on type: %v", err)
	}
}
