package computer

import "testing"

func TestDisplayRect(t *testing.T) {
	screen := Size{1920, 1080}
	for _, c := range []struct {
		r       Rect
		display *Size
		want    Rect
		ok      bool
	}{
		{Rect{100, 50, 640, 480}, nil, Rect{100, 50, 640, 480}, true},
		{Rect{100, 50, 640, 480}, &Size{1920, 1080}, Rect{100, 50, 640, 480}, true},
		{Rect{0, 0, 1920, 1080}, &Size{1280, 720}, Rect{0, 0, 1280, 720}, true},
		{Rect{960, 540, 960, 540}, &Size{1280, 720}, Rect{640, 360, 640, 360}, true},
		// Off the screen's edges: the part on it.
		{Rect{-100, -30, 400, 300}, nil, Rect{0, 0, 300, 270}, true},
		{Rect{1800, 1000, 400, 300}, &Size{960, 540}, Rect{900, 500, 60, 40}, true},
		{Rect{2000, 0, 100, 100}, nil, Rect{}, false},
	} {
		got, ok, err := DisplayRect(c.r, screen, c.display)
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("%+v in %v: %+v %v %v, want %+v", c.r, c.display, got, ok, err, c.want)
		}
	}
	if _, _, err := DisplayRect(Rect{0, 0, 1, 1}, screen, &Size{0, 10}); err == nil {
		t.Error("a display of width 0 passed")
	}
	// Every display pixel of the answer maps back into the rectangle.
	for _, d := range []Size{{1366, 768}, {1024, 576}, {3840, 2160}, {1280, 800}} {
		sc, _ := newScaler(&d, 1920, 1080)
		for x := 300; x < 340; x += 3 {
			win := Rect{x, x / 2, 101 + x%7, 57 + x%5}
			r, _, _ := DisplayRect(win, screen, &d)
			for _, p := range []Point{{r.X, r.Y}, {r.X + r.Width - 1, r.Y + r.Height - 1}} {
				if q := sc.real(p); q.X < win.X || q.X >= win.X+win.Width || q.Y < win.Y || q.Y >= win.Y+win.Height {
					t.Errorf("%+v in %v: %+v maps to %+v, outside it", win, d, p, q)
				}
			}
		}
	}
}
