package computer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/go-qemu/qmp/raw"
)

// absMax is the top of QEMU's absolute pointer axis (0..0x7fff).
const absMax = 0x7fff

// absAxis converts a pixel to QEMU's absolute axis so that the guest,
// which maps the axis linearly onto the screen, lands on the middle of
// that pixel.
func absAxis(px, size int) int64 {
	v := (int64(2*px+1)*(absMax+1) + int64(size)) / int64(2*size)
	return min(max(v, 0), absMax)
}

func (c *Computer) move(ctx context.Context, domain string, p Point) error {
	w, h, err := c.screenSize(ctx, domain)
	if err != nil {
		return err
	}
	err = c.sendPointer(ctx, domain, []raw.InputEvent{
		raw.InputEventAbs{Axis: raw.InputAxisX, Value: absAxis(p.X, w)},
		raw.InputEventAbs{Axis: raw.InputAxisY, Value: absAxis(p.Y, h)},
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.cursors[domain] = p
	c.mu.Unlock()
	return nil
}

var buttons = map[string]raw.InputButton{
	"left": raw.InputButtonLeft, "middle": raw.InputButtonMiddle, "right": raw.InputButtonRight,
	"side": raw.InputButtonSide, "extra": raw.InputButtonExtra,
}

// button presses or releases one button; each change is its own report
// so that the guest sees every transition.
func (c *Computer) button(ctx context.Context, domain string, b raw.InputButton, down bool) error {
	return c.sendPointer(ctx, domain, []raw.InputEvent{raw.InputEventBtn{Button: b, Down: down}})
}

func (c *Computer) click(ctx context.Context, domain string, s step) error {
	b := buttons[s.button]
	return c.withKeys(ctx, domain, s.mods, func() error {
		if s.press || s.lift {
			return c.button(ctx, domain, b, s.press)
		}
		for i := 0; i < s.clicks; i++ {
			if err := c.button(ctx, domain, b, true); err != nil {
				return err
			}
			if err := c.button(ctx, domain, b, false); err != nil {
				return err
			}
		}
		return nil
	})
}

// drag presses the button at the first point, moves through the others
// in small steps (so applications see motion) and releases at the last.
func (c *Computer) drag(ctx context.Context, domain string, sc *scaler, s step) error {
	b := buttons[s.button]
	from := sc.real(s.path[0])
	if err := c.move(ctx, domain, from); err != nil {
		return err
	}
	if err := c.button(ctx, domain, b, true); err != nil {
		return err
	}
	for _, p := range s.path[1:] {
		to := sc.real(p)
		const steps = 8
		for i := 1; i <= steps; i++ {
			q := Point{from.X + (to.X-from.X)*i/steps, from.Y + (to.Y-from.Y)*i/steps}
			if err := c.move(ctx, domain, q); err != nil {
				c.button(context.WithoutCancel(ctx), domain, b, false)
				return err
			}
			if err := sleep(ctx, 10*time.Millisecond); err != nil {
				c.button(context.WithoutCancel(ctx), domain, b, false)
				return err
			}
		}
		from = to
	}
	return c.button(ctx, domain, b, false)
}

// scroll turns the wheel; sideways is shift+wheel, which X applications
// read as horizontal scrolling.
func (c *Computer) scroll(ctx context.Context, domain string, s step) error {
	wheel := func(n int) error {
		b := raw.InputButtonWheelDown
		if n < 0 {
			b, n = raw.InputButtonWheelUp, -n
		}
		for i := 0; i < n; i++ {
			if err := c.button(ctx, domain, b, true); err != nil {
				return err
			}
			if err := c.button(ctx, domain, b, false); err != nil {
				return err
			}
		}
		return nil
	}
	return c.withKeys(ctx, domain, s.mods, func() error {
		if err := wheel(s.scrollV); err != nil {
			return err
		}
		if s.scrollH == 0 {
			return nil
		}
		return c.withKeys(ctx, domain, chord{raw.QKeyCodeShift}, func() error { return wheel(s.scrollH) })
	})
}

// withKeys holds keys down while fn runs and always releases them.
func (c *Computer) withKeys(ctx context.Context, domain string, keys chord, fn func() error) error {
	if len(keys) == 0 {
		return fn()
	}
	if err := c.keys(ctx, domain, keys, true); err != nil {
		return err
	}
	err := fn()
	if rerr := c.keys(context.WithoutCancel(ctx), domain, keys, false); err == nil {
		err = rerr
	}
	return err
}

// keys presses (in order) or releases (in reverse) the keys of a chord.
func (c *Computer) keys(ctx context.Context, domain string, k chord, down bool) error {
	ev := make([]raw.InputEvent, len(k))
	for i, code := range k {
		if !down {
			code = k[len(k)-1-i]
		}
		ev[i] = keyEvent(code, down)
	}
	return c.sendKeys(ctx, domain, ev, !down)
}

func keyEvent(code raw.QKeyCode, down bool) raw.InputEvent {
	return raw.InputEventKey{Key: raw.KeyValueQcode(code), Down: down}
}

// hold presses each chord, keeps it down for d, and releases it.
func (c *Computer) hold(ctx context.Context, domain string, chords []chord, d time.Duration) error {
	for _, k := range chords {
		if d == 0 {
			if err := c.tap(ctx, domain, k); err != nil {
				return err
			}
			continue
		}
		err := c.withKeys(ctx, domain, k, func() error {
			if d > 0 {
				return sleep(ctx, d)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tap presses a chord and releases it in one report: were the release a
// report of its own, a guest that fell behind in between would see the
// keys held past its autorepeat delay and repeat them (a busy host once
// pasted twice that way).
func (c *Computer) tap(ctx context.Context, domain string, k chord) error {
	ev := make([]raw.InputEvent, 0, 2*len(k))
	for _, code := range k {
		ev = append(ev, keyEvent(code, true))
	}
	for i := len(k) - 1; i >= 0; i-- {
		ev = append(ev, keyEvent(k[i], false))
	}
	return c.sendKeys(ctx, domain, ev, true)
}

// typeBudget is how many key events go into one call to the PS/2
// keyboard (see keyboard.go). Its queue holds 16 scancode bytes, one per
// event of the keys text uses, and nothing drains it while QEMU handles
// one call; six bytes stay free for safety. typePause between calls gives
// a guest short of CPU time to drain the queue: bytes that find it full
// are lost. (14 events and 8 ms lost a shift release and a few keys in
// one of six end-to-end runs on an otherwise idle TCG host; 10 events and
// 20 ms lost two consecutive keys in two of two runs.)
const (
	typeBudget = 6
	typePause  = 20 * time.Millisecond
)

// typeText types text exactly. Runs of text a US keyboard can type go in
// as key events; runs it cannot (accents, CJK, emoji) are put on the X
// session's PRIMARY and CLIPBOARD selections through the guest agent and
// pasted with shift+Insert, which terminals and GTK applications alike
// take as paste.
func (c *Computer) typeText(ctx context.Context, domain, text string) (string, error) {
	via := "keyboard"
	km := c.keymapOf(ctx, domain)
	for _, run := range splitTypeable(text, km) {
		if run.keys {
			if err := c.typeKeys(ctx, domain, run.text, km); err != nil {
				return via, err
			}
			continue
		}
		via = "keyboard+paste"
		if _, err := c.asUser(ctx, domain, []byte(run.text), "/bin/sh", "-c",
			`t=$(cat); for s in primary clipboard; do printf '%s' "$t" | xclip -selection $s -i >/dev/null 2>&1 || exit 1; done`); err != nil {
			return via, err
		}
		if err := c.hold(ctx, domain, []chord{{raw.QKeyCodeShift, raw.QKeyCodeInsert}}, 0); err != nil {
			return via, err
		}
		// The application fetches the selection after the key arrives.
		if err := sleep(ctx, pasteSettle); err != nil {
			return via, err
		}
	}
	return via, nil
}

// pasteSettle is how long a paste is given to fetch the selection before
// the next one replaces it.
const pasteSettle = 400 * time.Millisecond

type textRun struct {
	text string
	keys bool
}

// splitTypeable cuts text into runs that keys can type and runs they
// cannot. A short typeable run between two pasted ones (a space between
// two words of Japanese) is pasted with them, since each paste costs a
// guest command; a newline never is, so pasted text runs no command.
func splitTypeable(text string, km keymap) []textRun {
	var runs []textRun
	for _, r := range text {
		k := km.types(r)
		if n := len(runs); n > 0 && runs[n-1].keys == k {
			runs[n-1].text += string(r)
			continue
		}
		runs = append(runs, textRun{string(r), k})
	}
	var out []textRun
	for i := 0; i < len(runs); i++ {
		r := runs[i]
		n := len(out)
		if n > 0 && !out[n-1].keys && r.keys && i+1 < len(runs) && len(r.text) <= maxBridge && !strings.Contains(r.text, "\n") {
			out[n-1].text += r.text + runs[i+1].text
			i++
			continue
		}
		out = append(out, r)
	}
	return out
}

// maxBridge is the longest typeable run pasted along with its neighbours.
const maxBridge = 16

// keyBatches turns typeable text into calls of at most budget key events
// each; shift and AltGr are held across runs that need them and released
// at the end of every call. A character typed by a dead key and space
// never straddles two calls.
func keyBatches(text string, budget int, km keymap) [][]raw.InputEvent {
	var out [][]raw.InputEvent
	var cur []raw.InputEvent
	var held keyStroke // the modifiers down: shift, altgr
	for _, r := range text {
		strokes := km.strokes(r)
		ev, after := strokeEvents(held, strokes)
		// This character's events and the releases of what it leaves held.
		if len(cur) > 0 && len(cur)+len(ev)+releases(after) > budget {
			cur, _ = appendMods(cur, held, keyStroke{})
			out = append(out, cur)
			cur, held = nil, keyStroke{}
			ev, after = strokeEvents(held, strokes)
		}
		cur, held = append(cur, ev...), after
	}
	if cur, _ = appendMods(cur, held, keyStroke{}); len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// strokeEvents is the key events of strokes typed with held's modifiers
// down, and the modifiers down after them.
func strokeEvents(held keyStroke, strokes []keyStroke) ([]raw.InputEvent, keyStroke) {
	var ev []raw.InputEvent
	for _, k := range strokes {
		ev, held = appendMods(ev, held, k)
		ev = append(ev, keyEvent(k.code, true), keyEvent(k.code, false))
	}
	return ev, held
}

// appendMods presses or releases shift and AltGr to go from held to what
// k needs.
func appendMods(ev []raw.InputEvent, held, k keyStroke) ([]raw.InputEvent, keyStroke) {
	if held.shift != k.shift {
		ev = append(ev, keyEvent(raw.QKeyCodeShift, k.shift))
	}
	if held.altgr != k.altgr {
		ev = append(ev, keyEvent(altGr, k.altgr))
	}
	return ev, keyStroke{shift: k.shift, altgr: k.altgr}
}

// releases is how many events release held's modifiers.
func releases(held keyStroke) int {
	n := 0
	if held.shift {
		n++
	}
	if held.altgr {
		n++
	}
	return n
}

// cursor is where bureau last put the pointer, or, before its first move,
// where the guest's X server says it is.
func (c *Computer) cursor(ctx context.Context, domain string) (Point, error) {
	c.mu.Lock()
	p, ok := c.cursors[domain]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	r, err := c.asUser(ctx, domain, nil, "xdotool", "getmouselocation", "--shell")
	if err != nil {
		return Point{}, fmt.Errorf("pointer position unknown before the first move: %w", err)
	}
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		k, v, _ := strings.Cut(line, "=")
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		switch k {
		case "X":
			p.X = n
		case "Y":
			p.Y = n
		}
	}
	return p, nil
}
