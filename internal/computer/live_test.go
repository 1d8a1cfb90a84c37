package computer

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"testing"
	"time"
)

// fakeLive is a live framebuffer in front of a fakeVM's screen dumps.
type fakeLive struct {
	*fakeVM
	frame   image.Image
	still   image.Image // what Settle answers
	down    bool        // no live framebuffer now
	settles int
	frames  int

	// Watching for changes: effects[i] is when the screen changes after
	// the i-th watch began (negative or missing: it does not); lostAt is
	// the watch (counted from 1) at which the framebuffer goes away.
	effects []time.Duration
	lostAt  int
	marks   []int // input calls sent when each mark was taken
	watches []watch
}

// watch is one call to Changed: its window, the mark it compared with
// and how many input calls had been sent.
type watch struct {
	window time.Duration
	since  uint64
	calls  int
}

var _ LiveScreen = (*fakeLive)(nil)

func (l *fakeLive) Settle(_ context.Context, _ string, quiet, _ time.Duration) (image.Image, bool, error) {
	if l.down {
		return nil, false, errors.New("no live framebuffer")
	}
	l.settles++
	time.Sleep(quiet)
	return l.still, true, nil
}

func (l *fakeLive) Frame(context.Context, string) (image.Image, error) {
	if l.down {
		return nil, errors.New("no live framebuffer")
	}
	l.frames++
	return l.frame, nil
}

func (l *fakeLive) Version(context.Context, string) (uint64, error) {
	if l.down {
		return 0, errors.New("no live framebuffer")
	}
	l.fakeVM.mu.Lock()
	defer l.fakeVM.mu.Unlock()
	l.marks = append(l.marks, len(l.fakeVM.calls))
	return uint64(len(l.marks)), nil
}

// Changed answers what effects scripts, as a framebuffer watched for
// within would see it.
func (l *fakeLive) Changed(_ context.Context, _ string, since uint64, within time.Duration) (bool, time.Duration, error) {
	l.fakeVM.mu.Lock()
	defer l.fakeVM.mu.Unlock()
	l.watches = append(l.watches, watch{within, since, len(l.fakeVM.calls)})
	n := len(l.watches)
	if l.down || n == l.lostAt {
		l.down = true
		return false, 0, errors.New("no live framebuffer")
	}
	if n <= len(l.effects) && l.effects[n-1] >= 0 && l.effects[n-1] <= within {
		return true, l.effects[n-1], nil
	}
	return false, 0, nil
}

func newLive(t *testing.T) (*Computer, *fakeLive) {
	f := &fakeVM{frames: [][]byte{pngFrame(t, 1280, 800, color.White)}}
	m := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	still := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	draw.Draw(still, still.Bounds(), image.NewUniform(color.RGBA{200, 10, 20, 255}), image.Point{}, draw.Src)
	l := &fakeLive{fakeVM: f, frame: m, still: still}
	c := New(f, l, f)
	c.Display = f
	c.SettleFor, c.SettleMax = 20*time.Millisecond, 500*time.Millisecond
	return c, l
}

func TestSettleWaitsOnTheLiveScreen(t *testing.T) {
	c, l := newLive(t)
	img, err := c.Screenshot(context.Background(), "d", ShotOptions{Settle: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.settles != 1 || l.shots != 0 {
		t.Fatalf("settled through the live screen %d times, %d dumps taken", l.settles, l.shots)
	}
	// The live screen's pixels, encoded once here.
	m, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil || m.Bounds().Dx() != 1280 {
		t.Fatalf("settled screenshot: %v, want the live screen's 1280x800", err)
	}
	if r, g, b, _ := m.At(9, 9).RGBA(); r>>8 != 200 || g>>8 != 10 || b>>8 != 20 {
		t.Fatalf("settled screenshot pixel %v, want the live screen's red", m.At(9, 9))
	}
	// Scaled to a display: from the same pixels, no dump taken.
	small, err := c.Screenshot(context.Background(), "d", ShotOptions{Settle: true, Width: 640})
	if err != nil || small.Width != 640 || small.Height != 400 || l.settles != 2 || l.shots != 0 {
		t.Fatalf("settled and scaled: %v %dx%d, live settles %d, dumps %d", err, small.Width, small.Height, l.settles, l.shots)
	}
	if img.Settled == nil || !*img.Settled || img.SettleMS == nil || *img.SettleMS < 20 {
		t.Fatalf("settled=%v settle_ms=%v, want true and at least the 20 ms asked", img.Settled, img.SettleMS)
	}
	// source=display: the dumps are compared instead.
	img, err = c.Screenshot(context.Background(), "d", ShotOptions{Settle: true, Source: SourceDisplay})
	if err != nil || l.settles != 2 || l.shots < 2 || !*img.Settled {
		t.Fatalf("display settle: err %v, live settles %d, dumps %d", err, l.settles, l.shots)
	}
	// No live screen: dumps, as before.
	l.down = true
	shots := l.shots
	if _, err := c.Screenshot(context.Background(), "d", ShotOptions{Settle: true}); err != nil || l.shots < shots+2 {
		t.Fatalf("settle without a live screen: err %v, %d dumps", err, l.shots-shots)
	}
}

func TestScaledAndJPEGShotsStartFromLivePixels(t *testing.T) {
	c, l := newLive(t)
	img, err := c.Screenshot(context.Background(), "d", ShotOptions{Format: "jpeg", Width: 320})
	if err != nil {
		t.Fatal(err)
	}
	if l.frames != 1 || l.shots != 0 || img.Width != 320 || img.Height != 200 {
		t.Fatalf("frames %d, dumps %d, %dx%d", l.frames, l.shots, img.Width, img.Height)
	}
	if _, err := jpeg.Decode(bytes.NewReader(img.Data)); err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	// A plain PNG is the screen's own encoding, not re-encoded here.
	if img, err := c.Screenshot(context.Background(), "d", ShotOptions{}); err != nil || l.frames != 1 || l.shots != 1 || img.MediaType != "image/png" {
		t.Fatalf("plain shot: err %v, frames %d, shots %d", err, l.frames, l.shots)
	}
	if err := ValidateShot(ShotOptions{Source: "elsewhere"}); err == nil {
		t.Fatal("an unknown source was accepted")
	}
}
