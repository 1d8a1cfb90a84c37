package loop

import (
	"strings"
	"testing"
)

func TestParsePolicyNamesTheField(t *testing.T) {
	many := `"` + strings.Repeat(`a", "`, MaxPolicyRules) + `a"`
	for _, c := range []struct{ json, field string }{
		{`{"exec": ["rm", "(unclosed"]}`, "exec[1]"},
		{`{"urls": ["[a-"]}`, "urls[0]"},
		{`{"exec": [""]}`, "exec[0]"},
		{`{"keys": [{"key": "Return", "window_title": "*"}]}`, "keys[0].window_title"},
		{`{"keys": [{"key": ""}]}`, "keys[0].key"},
		{`{"keys": [{"key": "Return"}, {"key": "` + strings.Repeat("k", 65) + `"}]}`, "keys[1].key"},
		{`{"keys": [{"key": "ctrl+"}]}`, "keys[0].key"},
		{`{"clicks": [{"x":0,"y":0,"width":1,"height":1}, {"x":0,"y":0,"width":1,"height":1}, {"x":1,"y":2,"width":0,"height":5}]}`, "clicks[2].width"},
		{`{"clicks": [{"x":0,"y":0,"width":1,"height":0}]}`, "clicks[0].height"},
		{`{"clicks": [{"x":-1,"y":0,"width":1,"height":1}]}`, "clicks[0].x"},
		{`{"clicks": [{"x":0,"y":0,"width":1,"height":1,"window_title":"("}]}`, "clicks[0].window_title"},
		{`{"timeout_s": 3}`, "timeout_s"},
		{`{"timeout_s": 3601}`, "timeout_s"},
		{`{"exec": [` + many + `]}`, "exec"},
		{`{"exec": ["rm"], "shell": true}`, "shell"},
		{`{"keys": [{"key": "Return", "title": "x"}]}`, "title"},
		{`{"file_delete": "yes"}`, "file_delete"},
		{`{"exec": "rm"}`, "exec"},
		{`{"exec": ["rm"]} {}`, "policy"},
		{`[`, "policy"},
	} {
		if _, err := ParsePolicy([]byte(c.json)); field(err) != c.field {
			t.Errorf("%s: field %s, want %s", c.json, field(err), c.field)
		}
	}
	p, err := ParsePolicy([]byte(`{"exec": ["rm\\s+-rf", "^git push"], "file_delete": true,
		"keys": [{"key": "Return", "window_title": "Checkout"}],
		"clicks": [{"name": "Pay button", "x": 900, "y": 600, "width": 200, "height": 60}],
		"urls": ["^https://bank\\."], "timeout_s": 300}`))
	if err != nil || len(p.Exec) != 2 || !p.FileDelete || p.Clicks[0].Name != "Pay button" || p.TimeoutS != 300 {
		t.Fatalf("the documented example: %+v %v", p, err)
	}
	if p, err := ParsePolicy([]byte(`{}`)); err != nil || p.Validate() != nil {
		t.Fatalf("empty: %v", err)
	}
	if err := (Policy{TimeoutS: 1}).Validate(); field(err) != "timeout_s" {
		t.Fatalf("Validate: %v", err)
	}
}

func TestMatch(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"exec": ["rm\\s+-rf", "^git push"], "file_delete": true,
		"keys": [{"key": "Return", "window_title": "Checkout"}, {"key": "Ctrl+Shift+Q"}],
		"clicks": [{"x": 900, "y": 600, "width": 200, "height": 60},
		           {"name": "Pay button", "x": 0, "y": 0, "width": 10, "height": 10, "window_title": "^Bank"}],
		"urls": ["^https://bank\\."]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   Input
		rule string // "" : no match
	}{
		{Input{Kind: ActionExec, Command: "sudo rm  -rf /tmp/x"}, `exec[0]: rm\s+-rf`},
		{Input{Kind: ActionExec, Command: "git push origin main"}, "exec[1]: ^git push"},
		{Input{Kind: ActionExec, Command: "echo git push"}, ""},
		{Input{Kind: ActionFileDelete, Path: "/home/agent/x"}, "file_delete"},
		{Input{Kind: ActionURL, URL: "https://bank.example/pay"}, `urls[0]: ^https://bank\.`},
		{Input{Kind: ActionURL, URL: "https://example.com/?to=https://bank.x"}, ""},
		{Input{Kind: ActionKey, Keys: "Return", WindowTitle: "Checkout - Shop"}, `keys[0]: Return in a window titled /Checkout/`},
		{Input{Kind: ActionKey, Keys: "ctrl+a Enter", WindowTitle: "Checkout"}, `keys[0]: Return in a window titled /Checkout/`},
		{Input{Kind: ActionKey, Keys: "return", WindowTitle: "Editor"}, ""},
		{Input{Kind: ActionKey, Keys: "Return"}, ""},
		{Input{Kind: ActionKey, Keys: "shift+control+q"}, "keys[1]: Ctrl+Shift+Q"},
		{Input{Kind: ActionKey, Keys: "ctrl+q"}, ""},
		{Input{Kind: ActionClick, X: 900, Y: 600}, "clicks[0]: the region at (900, 600), 200×60"},
		{Input{Kind: ActionClick, X: 1099, Y: 659}, "clicks[0]: the region at (900, 600), 200×60"},
		{Input{Kind: ActionClick, X: 1100, Y: 600}, ""},
		{Input{Kind: ActionClick, X: 900, Y: 660}, ""},
		{Input{Kind: ActionClick, X: 5, Y: 5, WindowTitle: "Bank of X"}, "clicks[1]: Pay button"},
		{Input{Kind: ActionClick, X: 5, Y: 5, WindowTitle: "My Bank"}, ""},
		{Input{Kind: "launch"}, ""},
	} {
		rule, ok := p.Match(c.in)
		if rule != c.rule || ok != (c.rule != "") {
			t.Errorf("%+v: %q %v, want %q", c.in, rule, ok, c.rule)
		}
	}
	// A policy not parsed compiles itself.
	if rule, ok := (Policy{Exec: []string{"^ls"}}).Match(Input{Kind: ActionExec, Command: "ls -l"}); !ok || rule != "exec[0]: ^ls" {
		t.Fatalf("unparsed: %q %v", rule, ok)
	}
	if _, ok := (Policy{}).Match(Input{Kind: ActionFileDelete}); ok {
		t.Fatal("the zero policy gates")
	}
}

func TestNormKey(t *testing.T) {
	for in, want := range map[string]string{
		"Return": "return", "Enter": "return", "KP_Enter": "kp_enter", "Control+S": "ctrl+s",
		"shift+ctrl+T": "ctrl+shift+t", "ctrl+shift+t": "ctrl+shift+t", "Esc": "escape", "super+l": "super+l",
	} {
		if got := normKey(in); got != want {
			t.Errorf("normKey(%q) = %q, want %q", in, got, want)
		}
	}
}
