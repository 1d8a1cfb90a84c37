package computer

import (
	"os"
	"strings"
	"testing"

	"github.com/digitalocean/go-qemu/qmp/raw"
)

// xmodmapOf is what xmodmap -pk prints on an X server with layout.
func xmodmapOf(t *testing.T, layout string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/xmodmap-" + layout + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readKeymap(t *testing.T, layout string) keymap {
	t.Helper()
	km, ok := parseXmodmap(xmodmapOf(t, layout))
	if !ok {
		t.Fatalf("%s: not a keymap", layout)
	}
	return km
}

// typeOn interprets key events as the layout km describes: each key with
// the modifiers held gives the character km maps to it. It also checks
// every call ends with no modifier held.
func typeOn(t *testing.T, km keymap, calls [][]raw.InputEvent) string {
	t.Helper()
	byStroke, byDead := map[keyStroke]rune{}, map[keyStroke]rune{}
	for r, k := range km.keys {
		byStroke[k] = r
	}
	for r, k := range km.dead {
		byDead[k] = r
	}
	var out []rune
	var dead rune // a dead key pressed, waiting for its space
	for _, call := range calls {
		var held keyStroke
		for _, e := range call {
			k := e.(raw.InputEventKey)
			code := raw.QKeyCode(k.Key.(raw.KeyValueQcode))
			stroke := keyStroke{code: code, shift: held.shift, altgr: held.altgr}
			switch {
			case code == raw.QKeyCodeShift:
				held.shift = k.Down
			case code == altGr:
				held.altgr = k.Down
			case !k.Down:
			case dead != 0:
				if stroke != charKeys[' '] {
					t.Fatalf("dead key for %q followed by %+v", dead, stroke)
				}
				out, dead = append(out, dead), 0
			case byDead[stroke] != 0:
				dead = byDead[stroke]
			default:
				out = append(out, byStroke[stroke])
			}
		}
		if held.shift || held.altgr || dead != 0 {
			t.Fatalf("a call ends with %+v held (dead key %q)", held, dead)
		}
	}
	return string(out)
}

func TestUSKeymapReadFromXMatchesTheBuiltInOne(t *testing.T) {
	km := readKeymap(t, "us") // xmodmap -pk of an X server with the us layout
	// The pc105 model's 102nd key types < on the us layout too, without
	// shift (> takes shift either way: the lower key code wins).
	ukey := map[rune]keyStroke{'<': {code: raw.QKeyCodeLess}}
	for r, want := range charKeys {
		if k, ok := ukey[r]; ok {
			want = k
		}
		if got := km.keys[r]; got != want {
			t.Errorf("%q: %+v, built-in %+v", r, got, want)
		}
	}
}

func TestGermanKeymapTypesWhatAGermanKeyboardTypes(t *testing.T) {
	km := readKeymap(t, "de")
	for r, want := range map[rune]keyStroke{
		'z': {code: raw.QKeyCodeY}, 'y': {code: raw.QKeyCodeZ}, 'Z': {code: raw.QKeyCodeY, shift: true},
		'ß': {code: raw.QKeyCodeMinus}, '?': {code: raw.QKeyCodeMinus, shift: true},
		'@': {code: raw.QKeyCodeQ, altgr: true}, '{': {code: raw.QKeyCode7, altgr: true}, '\\': {code: raw.QKeyCodeMinus, altgr: true},
		'€': {code: raw.QKeyCodeE, altgr: true}, '|': {code: raw.QKeyCodeLess, altgr: true}, '<': {code: raw.QKeyCodeLess},
		'ö': {code: raw.QKeyCodeSemicolon}, 'Ä': {code: raw.QKeyCodeApostrophe, shift: true}, '#': {code: raw.QKeyCodeBackslash},
		'/': {code: raw.QKeyCode7, shift: true}, '"': {code: raw.QKeyCode2, shift: true}, '~': {code: raw.QKeyCodeBracketRight, altgr: true},
		' ': {code: raw.QKeyCodeSpc}, '\n': {code: raw.QKeyCodeRet},
		'Ω': {code: raw.QKeyCodeQ, shift: true, altgr: true},
	} {
		if got, ok := km.keys[r]; !ok || got != want {
			t.Errorf("%q: %+v (%t), want %+v", r, got, ok, want)
		}
	}
	// ^ and ` are dead keys (then space); ~ has a key of its own; ´
	// (dead_acute and space) differs between compose tables: no key.
	for r, want := range map[rune]keyStroke{'^': {code: raw.QKeyCodeGraveAccent}, '`': {code: raw.QKeyCodeEqual, shift: true}} {
		if got, ok := km.dead[r]; !ok || got != want {
			t.Errorf("dead key for %q: %+v (%t), want %+v", r, got, ok, want)
		}
	}
	if _, ok := km.dead['~']; ok || km.types('´') {
		t.Errorf("dead keys %v", km.dead)
	}
	// Every character the map has, typed in batches as small as the PS/2
	// keyboard's, comes out exactly.
	var all strings.Builder
	for r := range km.keys {
		all.WriteRune(r)
	}
	text := all.String() + " Grüße aus Köln: {x|y} @ 5 € \\o/ ÄÖÜ ß x^2 `cmd` ^^``"
	for _, budget := range []int{typeBudget, deepBatch} {
		if got := typeOn(t, km, keyBatches(text, budget, km)); got != text {
			t.Errorf("budget %d: typed %q\nwant %q", budget, got, text)
		}
	}
	// What has no key is pasted.
	runs := splitTypeable("x´2 = 4", km)
	if len(runs) != 3 || runs[1].keys || runs[1].text != "´" {
		t.Errorf("runs %+v", runs)
	}
}

func TestTypingReadsTheGuestsKeymapOnce(t *testing.T) {
	c, f := newFake(t)
	f.xmodmap = xmodmapOf(t, "de")
	km := readKeymap(t, "de")
	for range 3 {
		if _, err := run(t, c, `{"action":"type","text":"Zürich @ 5€"}`); err != nil {
			t.Fatal(err)
		}
	}
	if f.keymapReads != 1 || len(f.execs) != 0 {
		t.Errorf("%d keymap reads, %d other guest commands for 3 typing calls", f.keymapReads, len(f.execs))
	}
	if got := typeOn(t, km, f.calls); got != strings.Repeat("Zürich @ 5€", 3) {
		t.Errorf("typed %q", got)
	}
	// A resolution change or a stop forgets it.
	c.Forget("d")
	run(t, c, `{"action":"type","text":"a"}`)
	if f.keymapReads != 2 {
		t.Errorf("%d keymap reads after Forget", f.keymapReads)
	}
}

func TestKeyChordsFollowTheLayout(t *testing.T) {
	c, f := newFake(t)
	f.xmodmap = xmodmapOf(t, "de")
	if _, err := run(t, c, `{"actions":[{"action":"key","text":"ctrl+z"},{"action":"key","text":"Return"}]}`); err != nil {
		t.Fatal(err)
	}
	// ctrl and the key that types z on a German keyboard (the US Y key).
	want := `[[{"data":{"key":{"data":"ctrl","type":"qcode"},"down":true},"type":"key"},{"data":{"key":{"data":"y","type":"qcode"},"down":true},"type":"key"},`
	if got := f.json(t); !strings.HasPrefix(got, want) {
		t.Errorf("calls %s\nwant them to start %s", got, want)
	}
	if f.keymapReads != 1 {
		t.Errorf("%d keymap reads", f.keymapReads)
	}
}
