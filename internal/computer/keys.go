package computer

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/digitalocean/go-qemu/qmp/raw"
)

// A chord is keys pressed together, in order, and released in reverse:
// "ctrl+shift+t" is ctrl, shift, t.
type chord []raw.QKeyCode

// keyNames maps the names agents use — xdotool/X keysym names
// ("Return", "Page_Up", "super"), Anthropic's and OpenAI's spellings
// ("Enter", "ARROWLEFT", "CMD") — lower-cased, to a QEMU key code and
// whether shift is needed (US layout).
var keyNames = map[string]keyStroke{}

type keyStroke struct {
	code  raw.QKeyCode
	shift bool
	altgr bool // the layout's third level (AltGr)
}

// charKeys maps each character a US keyboard types to its key stroke.
var charKeys = map[rune]keyStroke{}

func init() {
	add := func(code raw.QKeyCode, names ...string) {
		for _, n := range names {
			keyNames[n] = keyStroke{code: code}
		}
	}
	add(raw.QKeyCodeCtrl, "ctrl", "control", "control_l", "ctrl_l", "lctrl")
	add(raw.QKeyCodeCtrlR, "control_r", "ctrl_r", "rctrl")
	add(raw.QKeyCodeShift, "shift", "shift_l", "lshift")
	add(raw.QKeyCodeShiftR, "shift_r", "rshift")
	add(raw.QKeyCodeAlt, "alt", "alt_l", "option", "lalt")
	add(raw.QKeyCodeAltR, "alt_r", "altgr", "iso_level3_shift", "ralt")
	add(raw.QKeyCodeMetaL, "super", "super_l", "meta", "meta_l", "cmd", "command", "win", "windows", "hyper_l")
	add(raw.QKeyCodeMetaR, "super_r", "meta_r")
	add(raw.QKeyCodeMenu, "menu")
	add(raw.QKeyCodeEsc, "escape", "esc")
	add(raw.QKeyCodeRet, "return", "enter", "kp_return")
	add(raw.QKeyCodeTab, "tab")
	add(raw.QKeyCodeBackspace, "backspace", "back_space")
	add(raw.QKeyCodeDelete, "delete", "del")
	add(raw.QKeyCodeInsert, "insert", "ins")
	add(raw.QKeyCodeHome, "home")
	add(raw.QKeyCodeEnd, "end")
	add(raw.QKeyCodePgup, "page_up", "pageup", "prior", "pgup")
	add(raw.QKeyCodePgdn, "page_down", "pagedown", "next", "pgdn")
	add(raw.QKeyCodeLeft, "left", "arrowleft")
	add(raw.QKeyCodeRight, "right", "arrowright")
	add(raw.QKeyCodeUp, "up", "arrowup")
	add(raw.QKeyCodeDown, "down", "arrowdown")
	add(raw.QKeyCodeSpc, "space", "spc")
	add(raw.QKeyCodeCapsLock, "caps_lock", "capslock")
	add(raw.QKeyCodeNumLock, "num_lock", "numlock")
	add(raw.QKeyCodeScrollLock, "scroll_lock", "scrolllock")
	add(raw.QKeyCodePrint, "print", "printscreen", "print_screen", "sys_req")
	add(raw.QKeyCodePause, "pause", "break")
	add(raw.QKeyCodeAudiomute, "xf86audiomute", "audiomute", "mute")
	add(raw.QKeyCodeVolumeup, "xf86audioraisevolume", "volumeup", "audiovolumeup")
	add(raw.QKeyCodeVolumedown, "xf86audiolowervolume", "volumedown", "audiovolumedown")
	add(raw.QKeyCodeAudioplay, "xf86audioplay", "audioplay", "mediaplaypause")
	add(raw.QKeyCodeAudiostop, "xf86audiostop", "audiostop")
	add(raw.QKeyCodeAudionext, "xf86audionext", "audionext", "mediatracknext")
	add(raw.QKeyCodeAudioprev, "xf86audioprev", "audioprev", "mediatrackprevious")
	add(raw.QKeyCodeKpEnter, "kp_enter")
	add(raw.QKeyCodeKpAdd, "kp_add")
	add(raw.QKeyCodeKpSubtract, "kp_subtract")
	add(raw.QKeyCodeKpMultiply, "kp_multiply")
	add(raw.QKeyCodeKpDivide, "kp_divide")
	add(raw.QKeyCodeKpDecimal, "kp_decimal")
	fkeys := []raw.QKeyCode{raw.QKeyCodeF1, raw.QKeyCodeF2, raw.QKeyCodeF3, raw.QKeyCodeF4, raw.QKeyCodeF5, raw.QKeyCodeF6,
		raw.QKeyCodeF7, raw.QKeyCodeF8, raw.QKeyCodeF9, raw.QKeyCodeF10, raw.QKeyCodeF11, raw.QKeyCodeF12}
	for i, c := range fkeys {
		add(c, fmt.Sprintf("f%d", i+1))
	}
	kp := []raw.QKeyCode{raw.QKeyCodeKp0, raw.QKeyCodeKp1, raw.QKeyCodeKp2, raw.QKeyCodeKp3, raw.QKeyCodeKp4,
		raw.QKeyCodeKp5, raw.QKeyCodeKp6, raw.QKeyCodeKp7, raw.QKeyCodeKp8, raw.QKeyCodeKp9}
	for i, c := range kp {
		add(c, fmt.Sprintf("kp_%d", i))
	}

	// Characters: letters, digits and the US layout's punctuation, each
	// also known by its X keysym name.
	letters := []raw.QKeyCode{raw.QKeyCodeA, raw.QKeyCodeB, raw.QKeyCodeC, raw.QKeyCodeD, raw.QKeyCodeE, raw.QKeyCodeF,
		raw.QKeyCodeG, raw.QKeyCodeH, raw.QKeyCodeI, raw.QKeyCodeJ, raw.QKeyCodeK, raw.QKeyCodeL, raw.QKeyCodeM,
		raw.QKeyCodeN, raw.QKeyCodeO, raw.QKeyCodeP, raw.QKeyCodeQ, raw.QKeyCodeR, raw.QKeyCodeS, raw.QKeyCodeT,
		raw.QKeyCodeU, raw.QKeyCodeV, raw.QKeyCodeW, raw.QKeyCodeX, raw.QKeyCodeY, raw.QKeyCodeZ}
	for i, c := range letters {
		charKeys['a'+rune(i)] = keyStroke{code: c}
		charKeys['A'+rune(i)] = keyStroke{code: c, shift: true}
	}
	digits := []raw.QKeyCode{raw.QKeyCode0, raw.QKeyCode1, raw.QKeyCode2, raw.QKeyCode3, raw.QKeyCode4,
		raw.QKeyCode5, raw.QKeyCode6, raw.QKeyCode7, raw.QKeyCode8, raw.QKeyCode9}
	for i, c := range digits {
		charKeys['0'+rune(i)] = keyStroke{code: c}
	}
	punct := []struct {
		r     rune
		code  raw.QKeyCode
		shift bool
		names []string
	}{
		{' ', raw.QKeyCodeSpc, false, nil},
		{'\n', raw.QKeyCodeRet, false, nil},
		{'\t', raw.QKeyCodeTab, false, nil},
		{'-', raw.QKeyCodeMinus, false, []string{"minus"}},
		{'_', raw.QKeyCodeMinus, true, []string{"underscore"}},
		{'=', raw.QKeyCodeEqual, false, []string{"equal"}},
		{'+', raw.QKeyCodeEqual, true, []string{"plus"}},
		{'[', raw.QKeyCodeBracketLeft, false, []string{"bracketleft"}},
		{'{', raw.QKeyCodeBracketLeft, true, []string{"braceleft"}},
		{']', raw.QKeyCodeBracketRight, false, []string{"bracketright"}},
		{'}', raw.QKeyCodeBracketRight, true, []string{"braceright"}},
		{'\\', raw.QKeyCodeBackslash, false, []string{"backslash"}},
		{'|', raw.QKeyCodeBackslash, true, []string{"bar"}},
		{';', raw.QKeyCodeSemicolon, false, []string{"semicolon"}},
		{':', raw.QKeyCodeSemicolon, true, []string{"colon"}},
		{'\'', raw.QKeyCodeApostrophe, false, []string{"apostrophe", "quoteright"}},
		{'"', raw.QKeyCodeApostrophe, true, []string{"quotedbl"}},
		{'`', raw.QKeyCodeGraveAccent, false, []string{"grave", "quoteleft", "backquote"}},
		{'~', raw.QKeyCodeGraveAccent, true, []string{"asciitilde", "tilde"}},
		{',', raw.QKeyCodeComma, false, []string{"comma"}},
		{'<', raw.QKeyCodeComma, true, []string{"less"}},
		{'.', raw.QKeyCodeDot, false, []string{"period", "dot"}},
		{'>', raw.QKeyCodeDot, true, []string{"greater"}},
		{'/', raw.QKeyCodeSlash, false, []string{"slash"}},
		{'?', raw.QKeyCodeSlash, true, []string{"question"}},
		{'!', raw.QKeyCode1, true, []string{"exclam"}},
		{'@', raw.QKeyCode2, true, []string{"at"}},
		{'#', raw.QKeyCode3, true, []string{"numbersign"}},
		{'$', raw.QKeyCode4, true, []string{"dollar"}},
		{'%', raw.QKeyCode5, true, []string{"percent"}},
		{'^', raw.QKeyCode6, true, []string{"asciicircum"}},
		{'&', raw.QKeyCode7, true, []string{"ampersand"}},
		{'*', raw.QKeyCode8, true, []string{"asterisk"}},
		{'(', raw.QKeyCode9, true, []string{"parenleft"}},
		{')', raw.QKeyCode0, true, []string{"parenright"}},
	}
	for _, p := range punct {
		charKeys[p.r] = keyStroke{code: p.code, shift: p.shift}
		for _, n := range p.names {
			keyNames[n] = keyStroke{code: p.code, shift: p.shift}
		}
	}
}

// lookupKey resolves one key name: a known name (any case), or a single
// character a US keyboard types ("a", "A", "!").
func lookupKey(name string) (keyStroke, bool) {
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		if k, ok := charKeys[r]; ok && r != '\n' && r != '\t' {
			return k, true
		}
	}
	k, ok := keyNames[strings.ToLower(name)]
	return k, ok
}

// parseChord reads "ctrl+shift+t" (xdotool syntax). A "+" key is written
// "plus"; a trailing "+" ("ctrl++") is accepted too.
func parseChord(s string) (chord, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty key")
	}
	var names []string
	if strings.HasSuffix(s, "++") {
		names = append(strings.Split(strings.TrimSuffix(s, "++"), "+"), "plus")
	} else if s == "+" {
		names = []string{"plus"}
	} else {
		names = strings.Split(s, "+")
	}
	return chordOf(names)
}

// chordOf resolves key names pressed together. A shifted character adds
// shift ("ctrl+T" is ctrl+shift+t).
func chordOf(names []string) (chord, error) {
	var c chord
	needShift := false
	for _, n := range names {
		k, ok := lookupKey(strings.TrimSpace(n))
		if !ok {
			return nil, &unknownKeyError{name: n}
		}
		needShift = needShift || k.shift
		c = append(c, k.code)
	}
	if needShift && !c.has(raw.QKeyCodeShift) && !c.has(raw.QKeyCodeShiftR) {
		c = append(chord{raw.QKeyCodeShift}, c...)
	}
	return c, nil
}

// parseKeys reads an xdotool key argument: chords separated by spaces,
// pressed one after another ("ctrl+a BackSpace").
func parseKeys(s string) ([]chord, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty key")
	}
	out := make([]chord, 0, len(fields))
	for _, f := range fields {
		c, err := parseChord(f)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (c chord) has(k raw.QKeyCode) bool {
	for _, x := range c {
		if x == k {
			return true
		}
	}
	return false
}

type unknownKeyError struct{ name string }

func (e *unknownKeyError) Error() string {
	return fmt.Sprintf("unknown key %q; use xdotool names such as %s, single characters, or modifiers joined with + (ctrl+shift+t)",
		e.name, strings.Join(exampleKeys(), ", "))
}

// KeyNames lists every key name accepted, sorted.
func KeyNames() []string {
	out := make([]string, 0, len(keyNames))
	for n := range keyNames {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func exampleKeys() []string {
	return []string{"Return", "Tab", "Escape", "BackSpace", "Delete", "Up", "Down", "Left", "Right",
		"Home", "End", "Page_Up", "Page_Down", "F1…F12", "ctrl", "alt", "shift", "super", "space"}
}

// typeable reports whether every character of s has a key on a US
// keyboard, so it can be typed with key events alone.
func typeable(s string) bool {
	for _, r := range s {
		if _, ok := charKeys[r]; !ok {
			return false
		}
	}
	return true
}
