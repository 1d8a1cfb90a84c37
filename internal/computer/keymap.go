package computer

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/digitalocean/go-qemu/qmp/raw"
)

// A keymap says which key strokes type each character on a desktop's
// keyboard layout. bureau reads it from the guest's X server (xmodmap
// -pk), so typing is exact under whatever layout the desktop uses — US,
// German, French… — including AltGr characters; the US map is the
// fallback when the session cannot be asked (login screen, no xmodmap).
type keymap struct {
	keys map[rune]keyStroke
	// dead types characters no key has: the dead key that, followed by
	// space, types the character (^ and ` on a German keyboard).
	dead map[rune]keyStroke
}

// types says whether keys can type r.
func (km keymap) types(r rune) bool { return km.strokes(r) != nil }

// strokes is the key strokes that type r: its key, or its dead key and
// space.
func (km keymap) strokes(r rune) []keyStroke {
	if k, ok := km.keys[r]; ok {
		return []keyStroke{k}
	}
	if d, ok := km.dead[r]; ok {
		return []keyStroke{d, charKeys[' ']}
	}
	return nil
}

// deadSpacing is the character each dead keysym types when followed by
// space, where every X and GTK compose table agrees (dead_acute and
// dead_diaeresis give ' and " in some, their spacing accents in others).
var deadSpacing = map[uint32]rune{0xfe50: '`', 0xfe52: '^', 0xfe53: '~'}

var usKeymap = keymap{keys: charKeys}

// altGr is the key that selects a layout's third level (ISO_Level3_Shift
// on the right Alt in every xkb layout that has one).
const altGr = raw.QKeyCodeAltR

// keymapTTL is how long a keymap read from a guest is used before it is
// read again (a layout changed inside the desktop is seen after this).
const keymapTTL = time.Minute

type keymapSeen struct {
	km keymap
	at time.Time
}

// keymapOf returns the desktop's keymap, read from its X session at most
// once per keymapTTL.
func (c *Computer) keymapOf(ctx context.Context, domain string) keymap {
	c.mu.Lock()
	seen, ok := c.keymaps[domain]
	c.mu.Unlock()
	if ok && time.Since(seen.at) < keymapTTL {
		return seen.km
	}
	km := usKeymap
	if r, err := c.asUser(ctx, domain, nil, "xmodmap", "-pk"); err == nil {
		if read, ok := parseXmodmap(string(r.Stdout)); ok {
			km = read
		}
	}
	c.mu.Lock()
	c.keymaps[domain] = keymapSeen{km, time.Now()}
	c.mu.Unlock()
	return km
}

// xmodmap -pk lists, per X keycode, keysyms by column: 1 plain, 2 with
// shift, 3 and 4 the second group, 5 with AltGr, 6 with shift and AltGr.
var columnMods = map[int]keyStroke{0: {}, 1: {shift: true}, 4: {altgr: true}, 5: {shift: true, altgr: true}}

// parseXmodmap reads xmodmap -pk output into a keymap; ok is false when
// it does not look like one (no letter a anywhere).
func parseXmodmap(out string) (keymap, bool) {
	km := keymap{keys: map[rune]keyStroke{}, dead: map[rune]keyStroke{}}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		xcode, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		code, known := xKeycodes[xcode]
		if !known {
			continue
		}
		var syms []uint32
		for _, s := range f[1:] {
			if v, err := strconv.ParseUint(s, 0, 32); err == nil && strings.HasPrefix(s, "0x") {
				syms = append(syms, uint32(v))
			}
		}
		for col, mods := range columnMods {
			if col >= len(syms) {
				continue
			}
			k := keyStroke{code: code, shift: mods.shift, altgr: mods.altgr}
			into := km.keys
			r, ok := keysymRune(syms[col])
			if !ok {
				if r, ok = deadSpacing[syms[col]]; !ok {
					continue
				}
				into = km.dead
			}
			if old, dup := into[r]; !dup || k.cost() < old.cost() {
				into[r] = k
			}
		}
	}
	for r := range km.dead {
		if _, ok := km.keys[r]; ok {
			delete(km.dead, r)
		}
	}
	if _, ok := km.keys['a']; !ok {
		return keymap{}, false
	}
	// Whitespace is not a keysym xmodmap lists as a character.
	km.keys['\n'], km.keys['\t'], km.keys[' '] = charKeys['\n'], charKeys['\t'], charKeys[' ']
	return km, true
}

// cost orders the ways to type a character: plain, shift, AltGr, both.
func (k keyStroke) cost() int {
	n := 0
	if k.shift {
		n++
	}
	if k.altgr {
		n += 2
	}
	return n
}

// keysymRune is the character an X keysym types: Latin-1 keysyms are
// their code point, Unicode keysyms 0x1000000 plus it; dead keys and
// function keys type none.
func keysymRune(ks uint32) (rune, bool) {
	switch {
	case ks >= 0x20 && ks <= 0x7e, ks >= 0xa0 && ks <= 0xff:
		return rune(ks), true
	case ks >= 0x1000100 && ks <= 0x110ffff:
		return rune(ks - 0x1000000), true
	case ks == 0x20ac: // EuroSign
		return '€', true
	}
	return 0, false
}

// xKeycodes maps the X keycodes of the keys that type characters (evdev
// code + 8) to QEMU's key codes. The keypad is left out: its keys depend
// on Num Lock, which the virtio keyboard's barriers tap.
var xKeycodes = map[int]raw.QKeyCode{
	10: raw.QKeyCode1, 11: raw.QKeyCode2, 12: raw.QKeyCode3, 13: raw.QKeyCode4, 14: raw.QKeyCode5,
	15: raw.QKeyCode6, 16: raw.QKeyCode7, 17: raw.QKeyCode8, 18: raw.QKeyCode9, 19: raw.QKeyCode0,
	20: raw.QKeyCodeMinus, 21: raw.QKeyCodeEqual,
	24: raw.QKeyCodeQ, 25: raw.QKeyCodeW, 26: raw.QKeyCodeE, 27: raw.QKeyCodeR, 28: raw.QKeyCodeT,
	29: raw.QKeyCodeY, 30: raw.QKeyCodeU, 31: raw.QKeyCodeI, 32: raw.QKeyCodeO, 33: raw.QKeyCodeP,
	34: raw.QKeyCodeBracketLeft, 35: raw.QKeyCodeBracketRight,
	38: raw.QKeyCodeA, 39: raw.QKeyCodeS, 40: raw.QKeyCodeD, 41: raw.QKeyCodeF, 42: raw.QKeyCodeG,
	43: raw.QKeyCodeH, 44: raw.QKeyCodeJ, 45: raw.QKeyCodeK, 46: raw.QKeyCodeL,
	47: raw.QKeyCodeSemicolon, 48: raw.QKeyCodeApostrophe, 49: raw.QKeyCodeGraveAccent,
	51: raw.QKeyCodeBackslash,
	52: raw.QKeyCodeZ, 53: raw.QKeyCodeX, 54: raw.QKeyCodeC, 55: raw.QKeyCodeV, 56: raw.QKeyCodeB,
	57: raw.QKeyCodeN, 58: raw.QKeyCodeM, 59: raw.QKeyCodeComma, 60: raw.QKeyCodeDot, 61: raw.QKeyCodeSlash,
	65: raw.QKeyCodeSpc, 94: raw.QKeyCodeLess, 97: raw.QKeyCodeRo, 132: raw.QKeyCodeYen,
}

// usPlain is the character each key types without modifiers on a US
// keyboard: the character a key name such as "z" stands for. (Built on
// first use: charKeys is filled by an init function.)
var usPlain = sync.OnceValue(func() map[raw.QKeyCode]rune {
	m := map[raw.QKeyCode]rune{}
	for r, k := range charKeys {
		if !k.shift && r != ' ' && r != '\n' && r != '\t' {
			m[k.code] = r
		}
	}
	return m
})

// hasCharKeys says whether chords name character keys (which depend on
// the layout).
func hasCharKeys(chords []chord) bool {
	for _, ch := range chords {
		for _, code := range ch {
			if _, ok := usPlain()[code]; ok {
				return true
			}
		}
	}
	return false
}

// onLayout moves the character keys of chords to where the layout types
// those characters without a modifier: "ctrl+z" on a German keyboard is
// ctrl and the key that types z there (the US Y key). A character the
// layout types only with shift or AltGr keeps its US key.
func (km keymap) onLayout(chords []chord) []chord {
	out := make([]chord, len(chords))
	for i, ch := range chords {
		out[i] = make(chord, len(ch))
		for j, code := range ch {
			if r, ok := usPlain()[code]; ok {
				if k, ok := km.keys[r]; ok && !k.shift && !k.altgr {
					code = k.code
				}
			}
			out[i][j] = code
		}
	}
	return out
}

// onLayout maps the character keys of chords to the desktop's layout.
func (c *Computer) onLayout(ctx context.Context, domain string, chords []chord) []chord {
	if !hasCharKeys(chords) {
		return chords
	}
	return c.keymapOf(ctx, domain).onLayout(chords)
}
