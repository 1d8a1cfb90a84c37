//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/guest"
)

// benchUI measures what structure costs an agent: the windows list, an
// app's accessibility tree and a find by name, a click by element to a
// settled screenshot, and what verifying an action adds to one that
// changes nothing. With firefox (make bench), also Firefox's tree: its
// start is a minute under TCG, so make test's short run leaves it out.
func benchUI(t *testing.T, s *server, d *apiv1.Desktop, firefox bool, addRow func(name, value string)) {
	n := reps()
	base := "/api/v1/desktops/" + d.ID
	s.guest(d, "pkill -x mousepad; true")
	var app guest.LaunchResult
	begun := time.Now()
	benchCall(t, s, adminToken, "POST", base+"/apps", map[string]any{"desktop_file": "mousepad", "wait_s": 60}, &app)
	if app.Window == nil {
		t.Fatalf("mousepad showed no window: %+v", app)
	}
	addRow("launch an app (Mousepad) → its window", time.Since(begun).Round(time.Millisecond).String())
	list := timeN(n, func() { benchCall(t, s, adminToken, "GET", base+"/windows", nil, nil) })
	addRow(fmt.Sprintf("windows list p50 (%d runs)", n), pct(list, 50).String())
	benchTree(t, s, d, "Mousepad", "window=Mousepad", n, addRow)
	s.uiFind(adminToken, d.ID, url.Values{"app": {"mousepad"}, "role": {"menu"}, "name": {"File"}}, 20*time.Second)
	find := timeN(n, func() { benchCall(t, s, adminToken, "GET", base+"/ui/find?app=mousepad&role=menu&name=File", nil, nil) })
	addRow("find by name (Mousepad's File menu) p50", pct(find, 50).String())
	click := timeN(n, func() {
		benchCall(t, s, adminToken, "POST", base+"/computer", map[string]any{"action": "left_click",
			"element": map[string]string{"app": "mousepad", "role": "menu", "name": "File"}, "screenshot": true}, nil)
		benchCall(t, s, adminToken, "POST", base+"/computer", map[string]any{"action": "key", "text": "Escape", "verify_ms": 0}, nil)
	})
	addRow("click by element (File menu) → settled screenshot, + Escape p50", pct(click, 50).String())
	s.guest(d, "pkill -x mousepad; true") // the clicks below land on empty desktop
	// The same empty point each time, after a first click there has
	// cleared any selection and the screen settled: the clicks timed
	// change nothing (xfdesktop redraws for a click at a new point).
	empty := []int{900, 500}
	benchCall(t, s, adminToken, "POST", base+"/computer", map[string]any{"action": "left_click", "coordinate": empty, "screenshot": true}, nil)
	for _, v := range []int{0, 500} {
		moves := timeN(n, func() {
			benchCall(t, s, adminToken, "POST", base+"/computer", map[string]any{"action": "left_click", "coordinate": empty, "verify_ms": v}, nil)
		})
		addRow(fmt.Sprintf("a click on empty desktop (nothing changes), verify_ms %d, p50", v), pct(moves, 50).String())
	}
	if !firefox {
		return
	}
	s.guest(d, "printf '<!doctype html><title>bench</title><h1>Bench</h1><p>text</p><button>Go</button><a href=#>link</a>' > /tmp/bench-page.html; chmod 644 /tmp/bench-page.html")
	begun = time.Now()
	benchCall(t, s, adminToken, "POST", base+"/apps", map[string]any{"command": "firefox-esr --new-instance file:///tmp/bench-page.html", "wait_s": 180}, nil)
	s.uiFind(adminToken, d.ID, url.Values{"app": {"firefox"}, "role": {"button"}, "name": {"Go"}}, 3*time.Minute)
	addRow("launch Firefox → its page's button in the tree", time.Since(begun).Round(time.Second).String())
	benchTree(t, s, d, "Firefox", "app=firefox&limit=5000&depth=30", n, addRow)
	s.guest(d, "pkill -x firefox-esr; true")
}

// benchTree times an app's tree n times and says how many nodes it has.
func benchTree(t *testing.T, s *server, d *apiv1.Desktop, name, query string, n int, addRow func(name, value string)) {
	var tree uiNodes
	took := timeN(n, func() { benchCall(t, s, adminToken, "GET", "/api/v1/desktops/"+d.ID+"/ui?"+query, nil, &tree) })
	addRow(fmt.Sprintf("accessibility tree of %s (%d nodes) p50", name, len(tree.Nodes)), pct(took, 50).String())
}
