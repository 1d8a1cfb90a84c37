//go:build e2e

package e2e

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// shot is a GET /screenshot: the image and the settle headers.
type shot struct {
	img      image.Image
	raw      []byte
	settled  string
	settleMS int
}

func (s *server) shot(token, path string) shot {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		s.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	out := shot{raw: b, settled: resp.Header.Get("X-Settled")}
	out.settleMS, _ = strconv.Atoi(resp.Header.Get("X-Settle-Ms"))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "image/png") {
		if out.img, err = png.Decode(bytes.NewReader(b)); err != nil {
			s.t.Fatalf("GET %s: not a PNG: %v", path, err)
		}
	}
	return out
}

// differs is the share of pixels of r that differ between a and b
// (1 when their sizes differ).
func differs(a, b image.Image, r image.Rectangle) float64 {
	if a.Bounds() != b.Bounds() {
		return 1
	}
	r = r.Intersect(a.Bounds())
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, _ := a.At(x, y).RGBA()
			br, bg, bb, _ := b.At(x, y).RGBA()
			if ar != br || ag != bg || ab != bb {
				n++
			}
		}
	}
	return float64(n) / float64(max(1, r.Dx()*r.Dy()))
}

// testLiveFramebuffer: screenshots come from bureau's live copy of the
// screen, which shows what the hypervisor shows, follows a change made
// after the screen sat still (QEMU's scans back off to seconds then), and
// settles on the display's change reports.
func testLiveFramebuffer(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID + "/screenshot"
	s.guest(d, "pkill -x xterm")
	time.Sleep(2 * time.Second)
	live, dump := s.shot(token, base), s.shot(token, base+"?source=display")
	if f := differs(live.img, dump.img, live.img.Bounds()); f > 0.01 {
		t.Errorf("the live screenshot and the hypervisor's dump differ in %.1f%% of pixels", 100*f)
	}

	// A shell in an xterm, then the screen sits still for 6 s.
	s.guest(d, "su agent -c 'cd; DISPLAY=:0 setsid xterm -geometry 60x6+200+200 >/dev/null 2>&1 &'")
	s.waitGuest(d, "xterm", "pgrep -x xterm", time.Minute)
	first := s.shot(token, base+"?settle=true")
	time.Sleep(6 * time.Second)
	s.computer(token, d, map[string]any{"action": "left_click", "coordinate": []int{400, 240}})
	s.computer(token, d, map[string]any{"action": "type", "text": "echo framebuffer-follows"})
	typed := s.shot(token, base+"?settle=true")
	if typed.settled != "true" || typed.settleMS < 300 || typed.settleMS > 3000 {
		t.Errorf("settle after typing: settled=%q in %d ms, want true within 0.3–3 s", typed.settled, typed.settleMS)
	}
	term := image.Rect(200, 200, 700, 320)
	if f := differs(first.img, typed.img, term); f < 0.002 {
		t.Errorf("the settled live screenshot does not show the typed text (%.2f%% of the xterm changed)", 100*f)
	}
	after := s.shot(token, base+"?source=display")
	if f := differs(typed.img, after.img, typed.img.Bounds()); f > 0.01 {
		t.Errorf("after typing, the live screenshot and the hypervisor's dump differ in %.1f%% of pixels", 100*f)
	}
	t.Logf("typed after 6 s still: settled in %d ms; %.2f%% of the xterm changed", typed.settleMS, 100*differs(first.img, typed.img, term))

	// The computer-use screenshot says how long settling took.
	res := s.computer(token, d, map[string]any{"action": "screenshot"})
	if im := res.Results[0].Image; im == nil || im.Settled == nil || im.SettleMS == nil || *im.SettleMS < 300 {
		t.Errorf("computer screenshot: %+v, want settled and settle_ms", res.Results[0].Image)
	}
	var metrics []byte
	s.call(adminToken, "GET", "/metrics", nil, &metrics)
	if !bytes.Contains(metrics, []byte("bureau_framebuffers_live ")) || bytes.Contains(metrics, []byte("bureau_framebuffers_live 0\n")) {
		t.Errorf("/metrics does not count the live framebuffer")
	}
	s.expectError(token, "GET", base+"?source=elsewhere", nil, 422, "invalid")
	s.guest(d, "pkill -x xterm")
}
