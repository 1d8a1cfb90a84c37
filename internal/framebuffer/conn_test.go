package framebuffer

import (
	"context"
	"image"
	"image/color"
	"strings"
	"testing"
	"time"
)

var (
	red  = color.RGBA{200, 10, 20, 255}
	blue = color.RGBA{5, 30, 220, 255}
)

// hangGuard bounds waits for what must happen: long enough for a busy
// machine, it only turns a hang into a failure.
const hangGuard = 30 * time.Second

func dial(t *testing.T, s *fakeServer) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, "unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDialCopiesTheWholeScreen(t *testing.T) {
	s := newFakeServer(t, 64, 40)
	s.paint(image.Rect(10, 5, 30, 20), red)
	c := dial(t, s)
	m, _ := c.Snapshot()
	if m.Rect != image.Rect(0, 0, 64, 40) {
		t.Fatalf("screen %v, want 64x40", m.Rect)
	}
	if got := m.RGBAAt(12, 7); got != red {
		t.Fatalf("pixel in the painted area is %v, want %v (BGRX read as RGBA)", got, red)
	}
	if got := m.RGBAAt(0, 0); got != (color.RGBA{0, 0, 0, 255}) {
		t.Fatalf("pixel outside is %v, want opaque black", got)
	}
}

func TestChangesArriveAsTheyAreDrawn(t *testing.T) {
	s := newFakeServer(t, 64, 40)
	c := dial(t, s)
	v0, _ := c.State()
	drawn := time.Now()
	s.paint(image.Rect(0, 30, 64, 40), blue)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.WaitChange(ctx, v0); err != nil {
		t.Fatal(err)
	}
	// The damage is dated when it arrived: after it was drawn, before it
	// was waited for.
	v1, damaged := c.State()
	if v1 <= v0 || damaged.Before(drawn) || damaged.After(time.Now()) {
		t.Fatalf("version %d→%d, damaged %v after it was drawn", v0, v1, damaged.Sub(drawn))
	}
	m, _ := c.Snapshot()
	if got := m.RGBAAt(50, 35); got != blue {
		t.Fatalf("changed pixel is %v, want %v", got, blue)
	}
	// Painting what is already there is no damage.
	s.paint(image.Rect(0, 30, 64, 40), blue)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if v2, _ := c.State(); v2 != v1 {
		t.Fatalf("an unchanged repaint moved the version %d→%d", v1, v2)
	}
}

func TestSyncNudgesAndIsAnswered(t *testing.T) {
	s := newFakeServer(t, 32, 32)
	c := dial(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for range 3 {
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	nudges, keys := s.counts()
	if nudges != 3 || len(keys) != 0 {
		t.Fatalf("server saw %d nudges and other keys %v, want 3 nudges (releases of Help by key number) only", nudges, keys)
	}
}

func TestResize(t *testing.T) {
	s := newFakeServer(t, 32, 32)
	c := dial(t, s)
	v, _ := c.State()
	s.resizeTo(48, 20)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.WaitChange(ctx, v); err != nil {
		t.Fatal(err)
	}
	if m, _ := c.Snapshot(); m.Rect != image.Rect(0, 0, 48, 20) {
		t.Fatalf("screen %v after resize, want 48x20", m.Rect)
	}
}

func TestRectangleOutsideTheScreenEndsTheSession(t *testing.T) {
	s := newFakeServer(t, 32, 32)
	c := dial(t, s)
	s.mu.Lock()
	s.bad = true
	s.mu.Unlock()
	s.paint(image.Rect(0, 0, 4, 4), red)
	select {
	case <-c.Done():
	case <-time.After(hangGuard):
		t.Fatal("session kept going after a bad rectangle")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("err = %v, want the rectangle named", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Sync(ctx); err == nil {
		t.Fatal("Sync on an ended session succeeded")
	}
}

func TestConcurrentSyncsAreAllAnswered(t *testing.T) {
	s := newFakeServer(t, 32, 32)
	c := dial(t, s)
	s.mu.Lock()
	s.scan = 20 * time.Millisecond // requests coalesce as on QEMU
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- c.Sync(ctx) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatalf("a Sync among 8 at once: %v", err)
		}
	}
	// And one after them is answered, not held forever by a lost count.
	one, cancel1 := context.WithTimeout(context.Background(), hangGuard)
	defer cancel1()
	if err := c.Sync(one); err != nil {
		t.Fatalf("a Sync after the burst: %v", err)
	}
}

func TestUnansweredSyncLetsTheNextAsk(t *testing.T) {
	s := newFakeServer(t, 32, 32)
	c := dial(t, s)
	s.mu.Lock()
	s.scan = time.Hour // never answers
	s.mu.Unlock()
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Sync(short); err == nil {
		t.Fatal("a Sync the server never answered succeeded")
	}
	s.mu.Lock()
	s.scan, s.armed = 0, false
	s.mu.Unlock()
	ctx, cancel2 := context.WithTimeout(context.Background(), hangGuard)
	defer cancel2()
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("the Sync after an unanswered one: %v", err)
	}
}
