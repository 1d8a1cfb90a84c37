package computer

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func changedOf(r StepResult) string {
	switch {
	case r.ScreenChanged == nil && r.ChangedAfterMS == nil:
		return "-"
	case r.ScreenChanged == nil:
		return "after without changed"
	case *r.ScreenChanged && r.ChangedAfterMS != nil:
		return "changed after " + (time.Duration(*r.ChangedAfterMS) * time.Millisecond).String()
	case !*r.ScreenChanged && r.ChangedAfterMS == nil:
		return "unchanged"
	}
	return "inconsistent"
}

// TestInputActionsSayWhetherTheScreenChanged: each input action is watched
// after its input went in, from a mark taken before it; actions that send
// no input are not watched and say nothing.
func TestInputActionsSayWhetherTheScreenChanged(t *testing.T) {
	c, l := newLive(t)
	l.effects = []time.Duration{40 * time.Millisecond, -1, 0}
	res, err := run(t, c, `{"actions":[{"action":"left_click","coordinate":[10,10]},{"action":"key","text":"F12"},`+
		`{"action":"screenshot"},{"action":"type","text":"hi"},{"action":"wait","duration":0.01},{"action":"cursor_position"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"changed after 40ms", "unchanged", "-", "changed after 0s", "-", "-"}
	for i, r := range res.Results {
		if got := changedOf(r); got != want[i] {
			t.Errorf("actions[%d] %s: %s, want %s", i, r.Action, got, want[i])
		}
	}
	if res.Verify != "" {
		t.Errorf("verify %q on a watched screen", res.Verify)
	}
	// Three watches of the default window, each after its action's input.
	if len(l.watches) != 3 {
		t.Fatalf("%d watches, want 3 (input actions only)", len(l.watches))
	}
	for _, w := range l.watches {
		if w.window != DefaultVerify {
			t.Errorf("window %v, want the default %v", w.window, DefaultVerify)
		}
	}
	// The click's move, press and release all went in before its watch.
	if l.watches[0].calls != 3 || l.marks[0] != 0 {
		t.Errorf("click: marked after %d input calls, watched after %d; want 0 and 3", l.marks[0], l.watches[0].calls)
	}
	// A mark is read before the key (the click changed the screen) and
	// before the type (a screenshot came between); the key, which changed
	// nothing, left the mark standing for nothing else.
	if len(l.marks) != 3 || l.watches[1].since != 2 || l.watches[2].since != 3 {
		t.Errorf("marks taken after %v input calls, watches compared with %+v", l.marks, l.watches)
	}
	// On the wire: the fields only where verified.
	b, _ := json.Marshal(res.Results)
	var raw []map[string]any
	json.Unmarshal(b, &raw)
	if _, ok := raw[2]["screen_changed"]; ok {
		t.Errorf("a screenshot says screen_changed: %s", b)
	}
	if v, ok := raw[1]["screen_changed"]; !ok || v != false || raw[1]["changed_after_ms"] != nil {
		t.Errorf("unchanged key on the wire: %v", raw[1])
	}
}

// TestVerifyWindows: verify_ms sets the window; a plain move is watched for
// at most MoveVerify unless expect asks for its change; 0 watches nothing.
func TestVerifyWindows(t *testing.T) {
	for _, c := range []struct {
		body string
		want []time.Duration
	}{
		{`{"action":"mouse_move","coordinate":[5,5]}`, []time.Duration{MoveVerify}},
		{`{"type":"move","x":5,"y":5,"keys":["SHIFT"],"verify_ms":40}`, []time.Duration{40 * time.Millisecond}},
		{`{"actions":[{"type":"move","x":5,"y":5},{"type":"click","x":5,"y":5}],"verify_ms":2000}`,
			[]time.Duration{MoveVerify, 2 * time.Second}},
		{`{"action":"mouse_move","coordinate":[5,5],"verify_ms":2000,"expect":"change"}`, []time.Duration{2 * time.Second}},
		{`{"action":"scroll","coordinate":[5,5],"scroll_direction":"down","verify_ms":10000}`, []time.Duration{MaxVerify}},
		{`{"actions":[{"action":"left_click","coordinate":[5,5]},{"action":"type","text":"x"}],"verify_ms":0}`, nil},
	} {
		comp, l := newLive(t)
		l.effects = []time.Duration{-1, -1}
		res, err := run(t, comp, c.body)
		var ne *NoEffectError
		if errors.As(err, &ne) && strings.Contains(c.body, "expect") {
			res, err = &Result{Results: ne.Results}, nil // nothing changed, as scripted
		}
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		var got []time.Duration
		for _, w := range l.watches {
			got = append(got, w.window)
		}
		if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) || (len(got) > 1 && got[1] != c.want[1]) {
			t.Errorf("%s: windows %v, want %v", c.body, got, c.want)
		}
		if c.want == nil {
			// No check: no mark, no watch, nothing said.
			if len(l.marks) != 0 || res.Verify != "" {
				t.Errorf("%s: %d marks, verify %q", c.body, len(l.marks), res.Verify)
			}
			for _, r := range res.Results {
				if changedOf(r) != "-" {
					t.Errorf("%s: %s says %s", c.body, r.Action, changedOf(r))
				}
			}
		}
	}
	// A change that comes after the window is none.
	comp, l := newLive(t)
	l.effects = []time.Duration{300 * time.Millisecond}
	res, err := run(t, comp, `{"action":"left_click","coordinate":[5,5],"verify_ms":200}`)
	if err != nil || changedOf(res.Results[0]) != "unchanged" {
		t.Fatalf("change after the window: %v %s", err, changedOf(res.Results[0]))
	}
}

// TestExpectChangeStopsAtAnActionWithoutEffect: the request fails at the
// first input action that changed nothing, names it, keeps what ran, and
// runs nothing after it.
func TestExpectChangeStopsAtAnActionWithoutEffect(t *testing.T) {
	c, l := newLive(t)
	l.effects = []time.Duration{10 * time.Millisecond, -1}
	_, err := run(t, c, `{"expect":"change","actions":[{"action":"left_click","coordinate":[5,5]},{"action":"screenshot"},`+
		`{"action":"left_click","coordinate":[120,300]},{"action":"key","text":"Return"}]}`)
	var ne *NoEffectError
	if !errors.As(err, &ne) {
		t.Fatalf("got %v, want a NoEffectError", err)
	}
	if ne.Index != 2 || ne.Action != "left_click" || ne.Window != DefaultVerify || len(ne.Results) != 3 {
		t.Errorf("no effect at %d %s within %v with %d results, want 2 left_click 500ms 3", ne.Index, ne.Action, ne.Window, len(ne.Results))
	}
	if got := changedOf(ne.Results[2]); got != "unchanged" {
		t.Errorf("the failing action's result says %s", got)
	}
	if want := "actions[2] left_click at (120, 300): the screen did not change within 500 ms"; err.Error() != want {
		t.Errorf("message %q\nwant %q", err, want)
	}
	// Two clicks of three calls each; the key never went in.
	if n := len(l.calls); n != 6 {
		t.Errorf("%d input calls, want the two clicks' 6", n)
	}
	// A drag names both ends.
	c, l = newLive(t)
	_, err = run(t, c, `{"expect":"change","action":"left_click_drag","start_coordinate":[1,2],"coordinate":[30,40]}`)
	if err == nil || !strings.Contains(err.Error(), "actions[0] left_click_drag from (1, 2) to (30, 40)") {
		t.Errorf("drag without effect: %v", err)
	}
}

// TestNoLiveScreenCannotVerify: without a live framebuffer the actions run
// unverified and the result says why; with expect nothing runs.
func TestNoLiveScreenCannotVerify(t *testing.T) {
	c, f := newFake(t) // screen dumps only
	res, err := run(t, c, `{"action":"left_click","coordinate":[5,5]}`)
	if err != nil || res.Verify != noLiveScreen || changedOf(res.Results[0]) != "-" {
		t.Fatalf("dumps only: %v, verify %q, %s", err, res.Verify, changedOf(res.Results[0]))
	}
	calls := len(f.calls)
	_, err = run(t, c, `{"action":"left_click","coordinate":[5,5],"expect":"change"}`)
	var cv *CannotVerifyError
	if !errors.As(err, &cv) || cv.Reason != noLiveScreen || len(f.calls) != calls {
		t.Fatalf("expect on dumps: %v, %d input calls sent", err, len(f.calls)-calls)
	}
	// Nothing to verify: no complaint.
	if res, err := run(t, c, `{"screenshot":true,"expect":"change"}`); err != nil || res.Verify != "" {
		t.Fatalf("screenshot only with expect: %v %+v", err, res)
	}

	// A live framebuffer that is down now.
	lc, l := newLive(t)
	l.down = true
	res, err = run(t, lc, `{"actions":[{"action":"left_click","coordinate":[5,5]},{"action":"key","text":"a"}]}`)
	if err != nil || res.Verify != liveLost || len(l.watches) != 0 || !strings.HasPrefix(res.Verify, "unavailable: ") {
		t.Fatalf("framebuffer down: %v, verify %q, %d watches", err, res.Verify, len(l.watches))
	}
	_, err = run(t, lc, `{"action":"left_click","coordinate":[5,5],"expect":"change"}`)
	if !errors.As(err, &cv) || cv.Reason != liveLost {
		t.Fatalf("expect on a framebuffer down: %v", err)
	}

	// Lost after the first action: the rest run unverified.
	lc, l = newLive(t)
	l.effects, l.lostAt = []time.Duration{5 * time.Millisecond}, 2
	res, err = run(t, lc, `{"actions":[{"action":"left_click","coordinate":[5,5]},{"action":"key","text":"a"},{"action":"key","text":"b"}]}`)
	if err != nil || res.Verify != liveLost {
		t.Fatalf("lost midway: %v, verify %q", err, res.Verify)
	}
	if got := []string{changedOf(res.Results[0]), changedOf(res.Results[1]), changedOf(res.Results[2])}; got[0] != "changed after 5ms" || got[1] != "-" || got[2] != "-" {
		t.Errorf("lost midway: %v", got)
	}
}

func TestVerifyFieldsAreChecked(t *testing.T) {
	c, l := newLive(t)
	for body, field := range map[string]string{
		`{"action":"left_click","coordinate":[5,5],"verify_ms":-1}`:                    "verify_ms",
		`{"action":"left_click","coordinate":[5,5],"verify_ms":10001}`:                 "verify_ms",
		`{"action":"left_click","coordinate":[5,5],"expect":"nothing"}`:                "expect",
		`{"action":"left_click","coordinate":[5,5],"expect":"change","verify_ms":0}`:   "verify_ms",
		`{"action":"left_click","coordinate":[5,5],"expect":"change","verify_ms":1}`:   "",
		`{"action":"left_click","coordinate":[5,5],"expect":"","verify_ms":10000}`:     "",
		`{"action":"left_click","coordinate":[5,5],"expect":"CHANGE","verify_ms":100}`: "expect",
	} {
		l.effects, l.watches = []time.Duration{0}, nil
		_, err := run(t, c, body)
		var ve *desktop.ValidationError
		switch {
		case field == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case field != "" && (!errors.As(err, &ve) || ve.Field != field):
			t.Errorf("%s: %v, want a validation error on %s", body, err, field)
		}
	}
	// Only the two valid clicks sent input.
	if n := len(l.calls); n != 6 {
		t.Errorf("%d input calls; refused requests must send none", n)
	}
}
