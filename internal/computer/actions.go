package computer

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Action is one computer-use action in Anthropic's shape
// ({"action": "left_click", "coordinate": [x, y]}) or OpenAI's
// ({"type": "click", "x": 1, "y": 2, "button": "left"}). Coordinates are in
// the request's display space.
type Action struct {
	// Anthropic.
	Action          string  `json:"action,omitempty"`
	Coordinate      []int   `json:"coordinate,omitempty"`
	StartCoordinate []int   `json:"start_coordinate,omitempty"`
	Text            string  `json:"text,omitempty"`
	ScrollDirection string  `json:"scroll_direction,omitempty"`
	ScrollAmount    *int    `json:"scroll_amount,omitempty"`
	Duration        float64 `json:"duration,omitempty"`
	Region          []int   `json:"region,omitempty"`
	// OpenAI.
	Type    string   `json:"type,omitempty"`
	X       *int     `json:"x,omitempty"`
	Y       *int     `json:"y,omitempty"`
	Button  string   `json:"button,omitempty"`
	Path    []Point  `json:"path,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	ScrollX int      `json:"scroll_x,omitempty"`
	ScrollY int      `json:"scroll_y,omitempty"`
	// Element names an accessibility node instead of a coordinate: its id
	// (a string) or a query ({"role", "name", "app", "window"}). The API
	// resolves it to the middle of the node's bounds before Run (see
	// internal/api's computer_element.go); Run refuses one left in.
	Element json.RawMessage `json:"element,omitempty"`
}

// ElementActions are the actions that may name an element: those that
// act at a point.
var ElementActions = map[string]bool{"left_click": true, "right_click": true, "middle_click": true, "double_click": true,
	"triple_click": true, "mouse_move": true, "left_mouse_down": true, "left_mouse_up": true, "scroll": true,
	"click": true, "move": true}

// Point is a screen position.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// Limits on what one action may ask for.
const (
	maxWait       = 30 * time.Second
	maxScroll     = 50
	maxTextLength = 100_000
	maxPath       = 1000
)

// AnthropicActions and OpenAIActions are the action names accepted.
var (
	AnthropicActions = []string{"key", "type", "mouse_move", "left_click", "left_click_drag", "right_click",
		"middle_click", "double_click", "triple_click", "left_mouse_down", "left_mouse_up", "scroll", "hold_key",
		"wait", "screenshot", "cursor_position", "zoom"}
	OpenAIActions = []string{"click", "double_click", "drag", "keypress", "move", "scroll", "type", "wait", "screenshot"}
)

// step is one validated action, ready to run: coordinates still in
// display space (scaled when run, once the screen size is known).
type step struct {
	name string
	// at: move here first (nil: stay).
	at *Point
	// path: a drag through these points with button held.
	path []Point
	// button pressed (clicks times; clicks 0 with down/up set for a press
	// or a release alone).
	button       string
	clicks       int
	press, lift  bool
	mods         chord
	keys         []chord
	hold         time.Duration
	text         string
	scrollV      int // >0 down, <0 up (wheel clicks)
	scrollH      int // >0 right, <0 left
	wait         time.Duration
	screenshot   bool
	cursor       bool
	region       []int
	returnsImage bool
}

// compile validates an action and turns it into a step.
func compile(a Action) (step, error) {
	switch {
	case len(a.Element) > 0:
		return step{}, invalid("element", "an element is resolved by the API before the action runs: give it to POST /computer")
	case a.Action != "" && a.Type != "":
		return step{}, invalid("action", `give "action" (Anthropic) or "type" (OpenAI), not both`)
	case a.Action != "":
		return compileAnthropic(a)
	case a.Type != "":
		return compileOpenAI(a)
	}
	return step{}, invalid("action", fmt.Sprintf(`missing: give "action" (one of %s) or "type" (one of %s)`,
		strings.Join(AnthropicActions, ", "), strings.Join(OpenAIActions, ", ")))
}

func compileAnthropic(a Action) (step, error) {
	s := step{name: a.Action}
	var err error
	if len(a.Coordinate) > 0 {
		if s.at, err = pair("coordinate", a.Coordinate); err != nil {
			return s, err
		}
	}
	needAt := func() error {
		if s.at == nil {
			return invalid("coordinate", a.Action+" needs coordinate [x, y]")
		}
		return nil
	}
	clickMods := func() error {
		if a.Text == "" {
			return nil
		}
		c, err := parseChord(a.Text)
		if err != nil {
			return invalid("text", err.Error())
		}
		s.mods = c
		return nil
	}
	switch a.Action {
	case "key":
		if a.Text == "" {
			return s, invalid("text", `key needs text, e.g. "ctrl+s" or "Return"`)
		}
		if s.keys, err = parseKeys(a.Text); err != nil {
			return s, invalid("text", err.Error())
		}
	case "type":
		if a.Text == "" {
			return s, invalid("text", "type needs text")
		}
		if len(a.Text) > maxTextLength {
			return s, invalid("text", fmt.Sprintf("at most %d bytes per type action", maxTextLength))
		}
		s.text = a.Text
	case "mouse_move":
		err = needAt()
	case "left_click", "right_click", "middle_click", "double_click", "triple_click":
		s.button = map[string]string{"right_click": "right", "middle_click": "middle"}[a.Action]
		if s.button == "" {
			s.button = "left"
		}
		s.clicks = map[string]int{"double_click": 2, "triple_click": 3}[a.Action]
		if s.clicks == 0 {
			s.clicks = 1
		}
		err = clickMods()
	case "left_mouse_down", "left_mouse_up":
		s.button, s.press, s.lift = "left", a.Action == "left_mouse_down", a.Action == "left_mouse_up"
	case "left_click_drag":
		from, err := pair("start_coordinate", a.StartCoordinate)
		if err != nil {
			return s, err
		}
		if err := needAt(); err != nil {
			return s, err
		}
		s.path, s.at, s.button = []Point{*from, *s.at}, nil, "left"
	case "scroll":
		n := 3
		if a.ScrollAmount != nil {
			n = *a.ScrollAmount
		}
		if n < 0 || n > maxScroll {
			return s, invalid("scroll_amount", fmt.Sprintf("must be 0..%d", maxScroll))
		}
		switch a.ScrollDirection {
		case "down":
			s.scrollV = n
		case "up":
			s.scrollV = -n
		case "right":
			s.scrollH = n
		case "left":
			s.scrollH = -n
		default:
			return s, invalid("scroll_direction", "must be up, down, left or right")
		}
		err = clickMods()
	case "hold_key":
		if s.keys, err = parseKeys(a.Text); err != nil {
			return s, invalid("text", err.Error())
		}
		if s.hold, err = seconds("duration", a.Duration, true); err != nil {
			return s, err
		}
	case "wait":
		if s.wait, err = seconds("duration", a.Duration, false); err != nil {
			return s, err
		}
		if a.Duration == 0 {
			s.wait = time.Second
		}
	case "screenshot":
		s.screenshot, s.returnsImage = true, true
	case "cursor_position":
		s.cursor = true
	case "zoom":
		if len(a.Region) != 4 || a.Region[0] >= a.Region[2] || a.Region[1] >= a.Region[3] {
			return s, invalid("region", "zoom needs region [x0, y0, x1, y1] with x0 < x1 and y0 < y1")
		}
		s.region, s.returnsImage = a.Region, true
	default:
		return s, invalid("action", fmt.Sprintf("unknown action %q; valid: %s", a.Action, strings.Join(AnthropicActions, ", ")))
	}
	return s, err
}

func compileOpenAI(a Action) (step, error) {
	s := step{name: a.Type}
	if a.X != nil || a.Y != nil {
		if a.X == nil || a.Y == nil {
			return s, invalid("x", "give both x and y")
		}
		s.at = &Point{*a.X, *a.Y}
	}
	needAt := func() error {
		if s.at == nil {
			return invalid("x", a.Type+" needs x and y")
		}
		return nil
	}
	var err error
	switch a.Type {
	case "click", "double_click":
		s.button, s.clicks = "left", 1
		if a.Type == "double_click" {
			s.clicks = 2
		}
		switch a.Button {
		case "", "left":
		case "right", "middle":
			s.button = a.Button
		case "wheel":
			s.button = "middle"
		case "back", "forward":
			s.button = map[string]string{"back": "side", "forward": "extra"}[a.Button]
		default:
			return s, invalid("button", "must be left, right, wheel, back or forward")
		}
		err = needAt()
	case "drag":
		if len(a.Path) < 2 || len(a.Path) > maxPath {
			return s, invalid("path", fmt.Sprintf("drag needs 2..%d points", maxPath))
		}
		s.path, s.button = a.Path, "left"
	case "keypress":
		if len(a.Keys) == 0 {
			return s, invalid("keys", `keypress needs keys, e.g. ["CTRL", "C"]`)
		}
		c, err := openAIChord(a.Keys)
		if err != nil {
			return s, err
		}
		s.keys = []chord{c}
	case "move":
		err = needAt()
	case "scroll":
		s.scrollV, s.scrollH = wheelClicks(a.ScrollY), wheelClicks(a.ScrollX)
		if abs(s.scrollV) > maxScroll || abs(s.scrollH) > maxScroll {
			return s, invalid("scroll_y", fmt.Sprintf("at most %d wheel clicks (100 px each) per action", maxScroll))
		}
	case "type":
		if a.Text == "" {
			return s, invalid("text", "type needs text")
		}
		if len(a.Text) > maxTextLength {
			return s, invalid("text", fmt.Sprintf("at most %d bytes per type action", maxTextLength))
		}
		s.text = a.Text
	case "wait":
		s.wait = time.Second
	case "screenshot":
		s.screenshot, s.returnsImage = true, true
	default:
		return s, invalid("type", fmt.Sprintf("unknown action %q; valid: %s", a.Type, strings.Join(OpenAIActions, ", ")))
	}
	if err == nil && a.Type != "keypress" && len(a.Keys) > 0 {
		// Keys held through a pointer action (shift+click, ctrl+scroll).
		switch a.Type {
		case "click", "double_click", "drag", "move", "scroll":
			s.mods, err = openAIChord(a.Keys)
		default:
			err = invalid("keys", "keys are held only through click, double_click, drag, move and scroll")
		}
	}
	return s, err
}

// openAIChord is the chord of OpenAI key names, which spell letters in
// capitals ("CTRL", "A") and mean the key.
func openAIChord(keys []string) (chord, error) {
	names := make([]string, len(keys))
	for i, k := range keys {
		if len(k) == 1 {
			k = strings.ToLower(k)
		}
		names[i] = k
	}
	c, err := chordOf(names)
	if err != nil {
		return nil, invalid("keys", err.Error())
	}
	return c, nil
}

// PixelsPerWheelClick is what one wheel click is worth of an OpenAI
// scroll's pixels.
const PixelsPerWheelClick = 100

// wheelClicks turns a scroll distance in pixels into wheel clicks
// (PixelsPerWheelClick each, at least one for any movement).
func wheelClicks(px int) int {
	if px == 0 {
		return 0
	}
	n := int(math.Ceil(math.Abs(float64(px)) / PixelsPerWheelClick))
	if px < 0 {
		return -n
	}
	return n
}

func pair(field string, v []int) (*Point, error) {
	if len(v) != 2 {
		return nil, invalid(field, "must be [x, y]")
	}
	return &Point{v[0], v[1]}, nil
}

func seconds(field string, v float64, required bool) (time.Duration, error) {
	if math.IsNaN(v) || v < 0 || v > maxWait.Seconds() || required && v == 0 {
		return 0, invalid(field, fmt.Sprintf("must be seconds in (0, %g]", maxWait.Seconds()))
	}
	return time.Duration(v * float64(time.Second)), nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
