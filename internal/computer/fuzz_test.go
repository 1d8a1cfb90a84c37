package computer

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
)

// FuzzKeys: any key argument either parses into non-empty chords or is
// refused with a validation-style message; it never panics.
func FuzzKeys(f *testing.F) {
	for _, s := range []string{"ctrl+shift+t", "Return", "super", "ctrl++", "+", "a b c", "ctrl+T", "é", "", " ", "F13", "shift+!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		chords, err := parseKeys(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, c := range chords {
			if len(c) == 0 {
				t.Fatalf("%q parsed into an empty chord", s)
			}
		}
	})
}

// FuzzActions: any JSON action body compiles or is refused as invalid
// input (a 422), never a panic or another kind of error.
func FuzzActions(f *testing.F) {
	for _, s := range []string{
		`{"action":"left_click","coordinate":[10,20]}`,
		`{"action":"type","text":"héllo"}`,
		`{"action":"key","text":"ctrl+a"}`,
		`{"action":"scroll","coordinate":[1,2],"scroll_direction":"left","scroll_amount":3}`,
		`{"action":"left_click_drag","start_coordinate":[0,0],"coordinate":[5,5]}`,
		`{"action":"hold_key","text":"shift","duration":1.5}`,
		`{"action":"zoom","region":[0,0,100,100]}`,
		`{"type":"click","x":1,"y":2,"button":"wheel"}`,
		`{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]}`,
		`{"type":"keypress","keys":["CTRL","A"]}`,
		`{"type":"scroll","x":1,"y":1,"scroll_x":-300,"scroll_y":120}`,
		`{"action":"wait","duration":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Action
		if json.Unmarshal(b, &a) != nil {
			return
		}
		if _, err := compile(a); err != nil {
			var ve *desktop.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%s: %T %v, want a validation error", b, err, err)
			}
		}
	})
}
