//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/guest"
)

// uiNodes is the answer of GET /ui and /ui/find.
type uiNodes struct {
	Nodes []struct {
		guest.UINode
		DisplayBounds *computer.Rect `json:"display_bounds"`
	}
	Truncated bool
	Screen    computer.Size
}

// uiFind polls /ui/find until a node matches (an app's tree fills in as
// it starts) and answers the first.
func (s *server) uiFind(token, id string, q url.Values, timeout time.Duration) *guest.UINode {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var res uiNodes
		code := s.call(token, "GET", "/api/v1/desktops/"+id+"/ui/find?"+q.Encode(), nil, &res)
		if code == http.StatusOK && len(res.Nodes) > 0 {
			return &res.Nodes[0].UINode
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ui/find %s: %d, nothing after %s", q.Encode(), code, timeout)
		}
		time.Sleep(time.Second)
	}
}

// testUI reads and drives the accessibility tree of real applications:
// the bus is on; Mousepad's window and menus are in the tree; a click by
// element opens its File menu (the screen changed, the tree shows the
// menu's items); set_value writes its text, saved and read back from the
// guest's file; Firefox's page exposes a button that a click by element
// presses (the page's title changes); a node of a closed app is gone (410).
func testUI(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	if out, _ := s.guest(d, "runuser -u agent -- env DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$(id -u agent)/bus busctl --user get-property org.a11y.Bus /org/a11y/bus org.a11y.Status IsEnabled"); out != "b true" {
		t.Errorf("the accessibility bus says IsEnabled %q", out)
	}
	s.guest(d, "pkill -x mousepad; printf 'first line\\n' > /tmp/ui-note.txt; chown agent: /tmp/ui-note.txt")
	var launched guest.LaunchResult
	if code := s.call(token, "POST", base+"/apps", map[string]any{"command": "mousepad /tmp/ui-note.txt", "wait_s": 60}, &launched); code != http.StatusOK || launched.Window == nil {
		t.Fatalf("launch mousepad: %d %+v", code, launched)
	}
	// On top of whatever earlier checks left open, so a click at its menu
	// lands on it.
	s.call(token, "POST", base+"/windows/"+launched.Window.ID, map[string]any{"action": "maximize"}, nil)
	s.call(token, "POST", base+"/windows/"+launched.Window.ID, map[string]any{"action": "focus"}, nil)

	// The tree of its window, and how long reading it takes.
	var tree uiNodes
	begun := time.Now()
	if code := s.call(token, "GET", base+"/ui?window=ui-note&display=1280x800", nil, &tree); code != http.StatusOK || len(tree.Nodes) < 5 {
		t.Fatalf("Mousepad's tree: %d, %d nodes", code, len(tree.Nodes))
	}
	t.Logf("Mousepad's tree: %d nodes in %s (truncated %v)", len(tree.Nodes), time.Since(begun).Round(time.Millisecond), tree.Truncated)
	roles := map[string]bool{}
	for _, n := range tree.Nodes {
		roles[n.Role] = true
	}
	if !roles["frame"] || !roles["menu bar"] && !roles["menu"] {
		t.Errorf("Mousepad's tree has roles %v: no frame or menu", roles)
	}

	// Click by element: the File menu opens.
	begun = time.Now()
	res := s.computer(token, d, map[string]any{"action": "left_click", "element": map[string]string{"app": "mousepad", "role": "menu", "name": "File"},
		"expect": "change", "verify_ms": 5000})
	r := res.Results[0]
	if r.Element == nil || r.ScreenChanged == nil || !*r.ScreenChanged {
		t.Errorf("click on File by element: %+v", r)
	} else {
		t.Logf("click by element (File) → screen changed after %d ms; the element changed: %v (request %s)", *r.ChangedAfterMS, r.Element.Changed, time.Since(begun).Round(time.Millisecond))
	}
	// The tree shows the open menu's items (a first click that only raised
	// or focused the window is given a second).
	saveAs := url.Values{"app": {"mousepad"}, "role": {"menu item"}, "name": {"save as"}}
	if !s.uiShows(token, d.ID, saveAs, 15*time.Second) {
		t.Logf("File's menu not open after the first click (%+v): clicking again", r.Element)
		s.computer(token, d, map[string]any{"action": "left_click", "element": map[string]string{"app": "mousepad", "role": "menu", "name": "File"}})
		if !s.uiShows(token, d.ID, saveAs, 15*time.Second) {
			t.Errorf("the File menu's Save As is not showing after a click on File by element")
		}
	}
	s.computer(token, d, map[string]any{"action": "key", "text": "Escape"})

	// set_value on the text view, saved with ctrl+s, read from the file.
	text := s.uiFind(token, d.ID, url.Values{"app": {"mousepad"}, "role": {"text"}, "states": {"editable"}}, 20*time.Second)
	var acted struct {
		Node    guest.UINode
		Changed bool
	}
	if code := s.call(token, "POST", base+"/ui/"+text.ID, map[string]any{"action": "set_value", "value": "written by bureau\n"}, &acted); code != http.StatusOK || !acted.Changed {
		t.Errorf("set_value: %d %+v", code, acted)
	}
	s.computer(token, d, map[string]any{"action": "key", "text": "ctrl+s"})
	s.waitGuest(d, "the text saved", "grep -qx 'written by bureau' /tmp/ui-note.txt", 30*time.Second)

	// Firefox: a page's button, pressed by element.
	s.guest(d, `cat > /tmp/ui-page.html <<'H'
<!doctype html><title>ui page</title><button onclick="document.title='pressed by bureau'">Go ahead</button>
H
chmod 644 /tmp/ui-page.html`)
	begun = time.Now()
	var ff guest.LaunchResult
	if code := s.call(token, "POST", base+"/apps", map[string]any{"command": "firefox-esr --new-instance file:///tmp/ui-page.html", "wait_s": 120}, &ff); code != http.StatusOK || ff.Window == nil {
		t.Fatalf("launch firefox: %d %+v", code, ff)
	}
	button := s.uiFind(token, d.ID, url.Values{"app": {"firefox"}, "role": {"button"}, "name": {"go ahead"}}, 2*time.Minute)
	t.Logf("firefox up and its page's button in the tree: %s", time.Since(begun).Round(time.Second))
	// The button is in the tree as soon as Firefox reads the page, and on
	// the screen once it has laid it out: until then a click by element
	// is a 422 saying the node has no bounds (or is off the screen), and
	// an agent tries again, as here.
	res = nil
	for deadline := time.Now().Add(30 * time.Second); res == nil; {
		var raw json.RawMessage
		code := s.call(token, "POST", base+"/computer", map[string]any{"action": "left_click", "element": button.ID}, &raw)
		switch {
		case code == http.StatusOK:
			res = &computer.Result{}
			if err := json.Unmarshal(raw, res); err != nil {
				t.Fatalf("click on the page's button: %v", err)
			}
		case code == http.StatusUnprocessableEntity && time.Now().Before(deadline):
			t.Logf("click on the page's button not placed yet, tried again: %s", raw)
			time.Sleep(time.Second)
		default:
			t.Fatalf("click on the page's button: %d %s", code, raw)
		}
	}
	if res.Results[0].Element == nil || res.Results[0].Element.ID != button.ID {
		t.Errorf("click on the page's button: %+v", res.Results[0])
	}
	s.waitGuest(d, "the page's title changed", "su agent -c 'DISPLAY=:0 xdotool search --name \"pressed by bureau\"'", 30*time.Second)
	s.guest(d, "pkill -x firefox-esr; true")

	// A node of an app that left is gone.
	s.guest(d, "pkill -x mousepad; sleep 1")
	s.expectError(token, "POST", base+"/ui/"+text.ID, map[string]any{"action": "focus"}, http.StatusGone, "gone")
	var none uiNodes
	if code := s.call(token, "GET", base+"/ui/find?name=no-such-element-anywhere", nil, &none); code != http.StatusOK || len(none.Nodes) != 0 {
		t.Errorf("a find matching nothing: %d %d nodes", code, len(none.Nodes))
	}
}

// uiShows polls /ui/find until a node matches, or timeout passes.
func (s *server) uiShows(token, id string, q url.Values, timeout time.Duration) bool {
	s.t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		var res uiNodes
		if s.call(token, "GET", "/api/v1/desktops/"+id+"/ui/find?"+q.Encode(), nil, &res) == http.StatusOK && len(res.Nodes) > 0 {
			return true
		}
	}
	return false
}
