package steps

import (
	"strings"

	"github.com/bureau/bureau/internal/computer"
)

// action is a computer-use action as recorded, in either shape
// (Anthropic's "action" or OpenAI's "type"): bureau's own.
type action = computer.Action

// pixelsPerClick is what one wheel click is worth in OpenAI's pixels
// (as bureau runs them).
const pixelsPerClick = computer.PixelsPerWheelClick

func ip(v int) *int { return &v }

func at(c []int) (x, y *int) {
	if len(c) != 2 {
		return nil, nil
	}
	return ip(c[0]), ip(c[1])
}

func xy(a action) []int {
	if a.X == nil || a.Y == nil {
		return nil
	}
	return []int{*a.X, *a.Y}
}

// toOpenAI gives an action in OpenAI's shape, or false when OpenAI's
// computer tool has no such action.
func toOpenAI(a action) (action, bool) {
	if a.Type != "" {
		return a, true
	}
	x, y := at(a.Coordinate)
	switch a.Action {
	case "left_click", "right_click", "middle_click":
		b := map[string]string{"left_click": "left", "right_click": "right", "middle_click": "wheel"}[a.Action]
		return action{Type: "click", Button: b, X: x, Y: y}, x != nil
	case "double_click":
		return action{Type: "double_click", X: x, Y: y}, x != nil
	case "mouse_move":
		return action{Type: "move", X: x, Y: y}, x != nil
	case "left_click_drag":
		if len(a.StartCoordinate) != 2 || x == nil {
			return a, false
		}
		return action{Type: "drag", Path: []computer.Point{{X: a.StartCoordinate[0], Y: a.StartCoordinate[1]}, {X: *x, Y: *y}}}, true
	case "type":
		return action{Type: "type", Text: a.Text}, true
	case "key":
		if strings.Contains(strings.TrimSpace(a.Text), " ") {
			return a, false // a sequence of chords: not one keypress
		}
		var keys []string
		for _, k := range strings.Split(a.Text, "+") {
			keys = append(keys, openAIKey(k))
		}
		return action{Type: "keypress", Keys: keys}, true
	case "scroll":
		n := 3
		if a.ScrollAmount != nil {
			n = *a.ScrollAmount
		}
		out := action{Type: "scroll", X: x, Y: y}
		switch a.ScrollDirection {
		case "down":
			out.ScrollY = n * pixelsPerClick
		case "up":
			out.ScrollY = -n * pixelsPerClick
		case "right":
			out.ScrollX = n * pixelsPerClick
		case "left":
			out.ScrollX = -n * pixelsPerClick
		}
		if out.X == nil {
			out.X, out.Y = ip(0), ip(0)
		}
		return out, true
	case "wait":
		return action{Type: "wait"}, true // OpenAI's wait has no length
	case "screenshot":
		return action{Type: "screenshot"}, true
	}
	return a, false
}

// toAnthropic gives an action in Anthropic's shape, or false when
// Anthropic's computer tool has no such action.
func toAnthropic(a action) (action, bool) {
	if a.Action != "" {
		return a, true
	}
	c := xy(a)
	switch a.Type {
	case "click":
		name := map[string]string{"": "left_click", "left": "left_click", "right": "right_click", "wheel": "middle_click", "middle": "middle_click"}[a.Button]
		return action{Action: name, Coordinate: c}, name != "" && c != nil
	case "double_click":
		return action{Action: "double_click", Coordinate: c}, c != nil
	case "move":
		return action{Action: "mouse_move", Coordinate: c}, c != nil
	case "drag":
		if len(a.Path) != 2 {
			return a, false
		}
		return action{Action: "left_click_drag",
			StartCoordinate: []int{a.Path[0].X, a.Path[0].Y}, Coordinate: []int{a.Path[1].X, a.Path[1].Y}}, true
	case "type":
		return action{Action: "type", Text: a.Text}, true
	case "keypress":
		var keys []string
		for _, k := range a.Keys {
			keys = append(keys, anthropicKey(k))
		}
		return action{Action: "key", Text: strings.Join(keys, "+")}, len(keys) > 0
	case "scroll":
		out := action{Action: "scroll", Coordinate: c}
		px := a.ScrollY
		out.ScrollDirection = "down"
		if a.ScrollY < 0 {
			out.ScrollDirection = "up"
		}
		if a.ScrollY == 0 {
			px, out.ScrollDirection = a.ScrollX, "right"
			if a.ScrollX < 0 {
				out.ScrollDirection = "left"
			}
		}
		if px < 0 {
			px = -px
		}
		out.ScrollAmount = ip(max(1, (px+pixelsPerClick-1)/pixelsPerClick))
		return out, true
	case "wait":
		return action{Action: "wait", Duration: 1}, true // as bureau runs OpenAI's wait
	case "screenshot":
		return action{Action: "screenshot"}, true
	}
	return a, false
}

// Key names: OpenAI's are upper case ("CTRL", "ENTER"); Anthropic's are
// xdotool's ("ctrl", "Return").
var openAIToX = map[string]string{
	"CTRL": "ctrl", "CONTROL": "ctrl", "ALT": "alt", "SHIFT": "shift", "META": "super", "SUPER": "super", "CMD": "super",
	"ENTER": "Return", "RETURN": "Return", "ESC": "Escape", "ESCAPE": "Escape", "TAB": "Tab", "SPACE": "space",
	"BACKSPACE": "BackSpace", "DELETE": "Delete", "HOME": "Home", "END": "End", "PAGEUP": "Page_Up", "PAGEDOWN": "Page_Down",
	"UP": "Up", "DOWN": "Down", "LEFT": "Left", "RIGHT": "Right",
	"ARROWUP": "Up", "ARROWDOWN": "Down", "ARROWLEFT": "Left", "ARROWRIGHT": "Right", "INSERT": "Insert",
}

func anthropicKey(k string) string {
	if x, ok := openAIToX[strings.ToUpper(k)]; ok {
		return x
	}
	if len(k) == 1 {
		return strings.ToLower(k)
	}
	return k
}

// xToOpenAI is openAIToX the other way (one name each).
var xToOpenAI = map[string]string{
	"ctrl": "CTRL", "alt": "ALT", "shift": "SHIFT", "super": "SUPER", "return": "ENTER", "escape": "ESC", "tab": "TAB",
	"space": "SPACE", "backspace": "BACKSPACE", "delete": "DELETE", "home": "HOME", "end": "END", "page_up": "PAGEUP",
	"page_down": "PAGEDOWN", "up": "UP", "down": "DOWN", "left": "LEFT", "right": "RIGHT", "insert": "INSERT",
}

func openAIKey(k string) string {
	if o, ok := xToOpenAI[strings.ToLower(k)]; ok {
		return o
	}
	return strings.ToUpper(k)
}
