package computer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// replayStream interprets key events across calls as a US keyboard would
// (shift may stay down from one report to the next) and says whether
// shift is left down at the end.
func replayStream(calls [][]raw.InputEvent) (string, bool) {
	byCode := usByCode()
	var out []rune
	shift := false
	for _, call := range calls {
		for _, e := range call {
			k := e.(raw.InputEventKey)
			code := raw.QKeyCode(k.Key.(raw.KeyValueQcode))
			switch {
			case code == raw.QKeyCodeShift:
				shift = k.Down
			case code == raw.QKeyCodeNumLock:
			case k.Down:
				out = append(out, byCode[code][shift])
			}
		}
	}
	return string(out), shift
}

// checkBarriers: Num Lock is only ever tapped with no other key held, and
// an even number of times (it ends as it began).
func checkBarriers(t *testing.T, calls [][]raw.InputEvent) {
	t.Helper()
	held, taps := map[raw.QKeyCode]bool{}, 0
	for _, call := range calls {
		for _, e := range call {
			k, ok := e.(raw.InputEventKey)
			if !ok {
				continue
			}
			code := raw.QKeyCode(k.Key.(raw.KeyValueQcode))
			if code == raw.QKeyCodeNumLock {
				if k.Down {
					taps++
					if len(held) > 0 {
						t.Fatalf("Num Lock tapped while %v held", held)
					}
				}
				continue
			}
			if k.Down {
				held[code] = true
			} else {
				delete(held, code)
			}
		}
	}
	if taps%2 != 0 {
		t.Errorf("Num Lock tapped %d times: left toggled", taps)
	}
}

func allKeys() string {
	all := ""
	for r := range charKeys {
		all += string(r)
	}
	return all
}

func TestVirtioKeyboardLosesNoKeyWhateverTheGuestsPace(t *testing.T) {
	text := allKeys() + "MiXeD CaSe AND CAPITALS and lower "
	for _, g := range []fakeQueue{
		{size: 64, drain: 64, xRate: 500}, // keeps up
		{size: 64, drain: 64, xRate: 3},   // X starved: would overflow its 64-event buffer unasked
		{size: 64, drain: 2, xRate: 100},  // kernel slow to hand buffers back
	} {
		t.Run(fmt.Sprintf("drain%d_x%d", g.drain, g.xRate), func(t *testing.T) {
			c, f := newFake(t)
			g.free = g.size
			f.kq = &g
			res, err := run(t, c, `{"action":"type","text":`+quote(text)+`}`)
			if err != nil || res.Results[0].TypedVia != "keyboard" || res.Results[0].Keyboard != "virtio" {
				t.Fatalf("type: %v %+v", err, res)
			}
			if g.dropped != 0 || g.overflow != 0 {
				t.Errorf("%d reports dropped by QEMU, %d overflows of X's buffer", g.dropped, g.overflow)
			}
			if g.largest > deepBatch+len(barrier) {
				t.Errorf("a report of %d events", g.largest)
			}
			got, shift := replayStream(g.typed)
			if got != text || shift {
				t.Errorf("X got %q (shift left down: %t)\nwant %q", got, shift, text)
			}
			for _, e := range append(g.ring, g.x...) {
				if k, ok := e.(raw.InputEventKey); ok && raw.QKeyCode(k.Key.(raw.KeyValueQcode)) != raw.QKeyCodeNumLock {
					t.Fatalf("type returned before X handled every key (%v left)", e)
				}
			}
			checkBarriers(t, f.calls)
			// Far fewer calls than the PS/2 keyboard's for the same text.
			if ps2 := len(keyBatches(text, typeBudget, usKeymap)); len(f.calls)*2 > ps2 {
				t.Errorf("%d calls, the PS/2 keyboard needs %d", len(f.calls), ps2)
			}
		})
	}
}

func TestVirtioKeyboardChordsEndWithABarrier(t *testing.T) {
	c, f := newFake(t)
	f.kq = &fakeQueue{size: 64, free: 64, drain: 64, xRate: 100}
	if _, err := run(t, c, `{"actions":[{"action":"key","text":"ctrl+shift+t"},{"type":"keypress","keys":["SHIFT","A"]},{"action":"key","text":"Return"}]}`); err != nil {
		t.Fatal(err)
	}
	checkBarriers(t, f.calls)
	// Each chord in one report: its presses, its releases, the barrier.
	if len(f.calls) != 3 || len(f.calls[0]) != 6+len(barrier) || f.kq.dropped != 0 {
		t.Errorf("%d calls (%d dropped): %v", len(f.calls), f.kq.dropped, f.calls)
	}
}

func TestVirtioKeyboardWithSilentLEDsIsPacedByTime(t *testing.T) {
	c, f := newFake(t)
	c.KeyAckWait = 100 * time.Millisecond
	f.kq = &fakeQueue{size: 64, free: 64, drain: 64, xRate: 500, silent: true}
	text := strings.Repeat("Hello, World! ", 5)
	if _, err := run(t, c, `{"action":"type","text":`+quote(text)+`}`); err != nil {
		t.Fatal(err)
	}
	f.kq.step() // X handles the last keys
	if got, _ := replayStream(f.kq.typed); got != text {
		t.Errorf("X got %q", got)
	}
	// The next call goes by time at once: small calls, typePause apart.
	f.calls, f.at, f.kq.typed = nil, nil, nil
	if res, err := run(t, c, `{"action":"type","text":`+quote(text)+`}`); err != nil || res.Results[0].Keyboard != "virtio-paced" {
		t.Fatalf("%v %+v", err, res)
	}
	f.kq.step()
	if got, _ := replayStream(f.kq.typed); got != text {
		t.Errorf("paced: X got %q", got)
	}
	for i, call := range f.calls {
		if len(call) > typeBudget {
			t.Fatalf("paced call of %d events", len(call))
		}
		if i > 0 && f.at[i].Sub(f.at[i-1]) < typePause-time.Millisecond {
			t.Fatalf("paced calls %s apart", f.at[i].Sub(f.at[i-1]))
		}
	}
}

func TestVirtioKeyboardGivesUpOnAGuestThatTakesNoKeys(t *testing.T) {
	c, f := newFake(t)
	c.KeyStall = 50 * time.Millisecond
	f.kq = &fakeQueue{size: 64, free: 0, drain: 0}
	begun := time.Now()
	_, err := run(t, c, `{"action":"type","text":"hello"}`)
	if !errors.Is(err, desktop.ErrUnavailable) || !strings.Contains(err.Error(), "took no key") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(begun); took > 2*time.Second {
		t.Errorf("gave up after %s", took)
	}
}

func TestPS2KeyCallsArePacedApart(t *testing.T) {
	c, f := newFake(t)
	res, err := run(t, c, `{"actions":[{"action":"key","text":"a"},{"action":"key","text":"Return"},{"action":"key","text":"ctrl+c"}]}`)
	if err != nil || res.Results[2].Keyboard != "ps2" {
		t.Fatalf("%v %+v", err, res)
	}
	if len(f.calls) != 3 {
		t.Fatalf("%d calls, want one (press and release) for each of 3 keys", len(f.calls))
	}
	for i := 1; i < len(f.at); i++ {
		if gap := f.at[i].Sub(f.at[i-1]); gap < typePause-time.Millisecond {
			t.Errorf("calls %d and %d %s apart, want at least %s", i-1, i, gap, typePause)
		}
	}
}

func TestVirtioKeyboardFallsBackWhenTheDriverGoes(t *testing.T) {
	c, f := newFake(t)
	f.kq = &fakeQueue{size: 64, free: 64, drain: 64, xRate: 500}
	// The guest reboots after the first report: its driver is gone.
	go func() {
		for {
			f.mu.Lock()
			n := len(f.calls)
			if n > 0 {
				f.kq = nil
			}
			f.mu.Unlock()
			if n > 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	text := strings.Repeat("abc", 20)
	if _, err := run(t, c, `{"action":"type","text":"`+text+`"}`); err != nil {
		t.Fatal(err)
	}
	if got, _ := replayStream(f.calls); got != text {
		t.Errorf("replayed %q", got)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestPacedKeyboardOnRequest(t *testing.T) {
	c, f := newFake(t)
	f.kq = &fakeQueue{size: 64, free: 64, drain: 64, xRate: 500}
	res, err := run(t, c, `{"action":"type","text":"Hello there","keyboard":"paced"}`)
	if err != nil || res.Results[0].Keyboard != "virtio-paced" {
		t.Fatalf("%v %+v", err, res)
	}
	for _, call := range f.calls {
		if len(call) > typeBudget {
			t.Errorf("paced call of %d events", len(call))
		}
	}
	if _, err := run(t, c, `{"action":"type","text":"x","keyboard":"usb"}`); err == nil || !strings.Contains(err.Error(), "paced") {
		t.Errorf("unknown keyboard: %v", err)
	}
}
