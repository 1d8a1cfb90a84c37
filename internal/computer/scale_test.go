package computer

import (
	"context"
	"testing"
)

// TestImagesSayTheirScaleAndCoordinates: every image says how many of its
// pixels make a screen pixel and which coordinates actions take, for
// screenshots of the display, zooms and plain screenshots alike, from
// screen dumps and from the live framebuffer's pixels.
func TestImagesSayTheirScaleAndCoordinates(t *testing.T) {
	type want struct {
		w, h          int
		scale, scaleY float64
		coordinates   string
	}
	check := func(name string, img *Image, w want) {
		t.Helper()
		got := want{img.Width, img.Height, img.Scale, img.ScaleY, img.Coordinates}
		if got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	for _, live := range []bool{false, true} {
		c, _ := newFake(t)
		if live {
			c, _ = newLive(t)
		}
		shot := func(body string) *Image {
			t.Helper()
			res, err := run(t, c, body)
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if res.Screenshot != nil {
				return res.Screenshot
			}
			return res.Results[0].Image
		}
		// The 1280x800 screen, unscaled: the display is the screen.
		check("unscaled", shot(`{"screenshot":true}`), want{1280, 800, 1, 0, CoordinatesDisplay})
		check("step screenshot", shot(`{"action":"screenshot","display":{"width":640,"height":400}}`), want{640, 400, 0.5, 0, CoordinatesDisplay})
		// Another aspect: the vertical scale differs and is said.
		check("4:3 display", shot(`{"screenshot":true,"display":{"width":1024,"height":768}}`), want{1024, 768, 0.8, 0.96, CoordinatesDisplay})
		// A zoom shows a region of the display (0..512 x 0..160 of
		// 1024x640, so 640x200 screen pixels) fitted into 1024x320.
		check("zoom", shot(`{"action":"zoom","region":[0,0,512,160],"display":{"width":1024,"height":640}}`), want{1024, 320, 1.6, 0, CoordinatesRegion})
		check("unscaled zoom", shot(`{"action":"zoom","region":[100,100,420,300]}`), want{1280, 800, 4, 0, CoordinatesRegion})

		// Plain screenshots: screen coordinates.
		ctx := context.Background()
		for _, c2 := range []struct {
			name string
			opts ShotOptions
			want want
		}{
			{"plain", ShotOptions{}, want{1280, 800, 1, 0, CoordinatesScreen}},
			{"width", ShotOptions{Width: 640}, want{640, 400, 0.5, 0, CoordinatesScreen}},
			{"jpeg", ShotOptions{Format: "jpeg"}, want{1280, 800, 1, 0, CoordinatesScreen}},
			{"settled and sized", ShotOptions{Settle: true, Width: 320, Height: 400}, want{320, 400, 0.25, 0.5, CoordinatesScreen}},
		} {
			img, err := c.Screenshot(ctx, "d", c2.opts)
			if err != nil {
				t.Fatal(err)
			}
			check(c2.name, img, c2.want)
		}
	}
}
