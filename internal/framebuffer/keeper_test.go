package framebuffer

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

type fakeDisplay struct{ calls int }

func (d *fakeDisplay) Screenshot(context.Context, string) ([]byte, string, error) {
	d.calls++
	return []byte("dump"), "image/png", nil
}

func newTestKeeper(t *testing.T, socket string, idle time.Duration) (*Keeper, *fakeDisplay) {
	d := &fakeDisplay{}
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		if socket == "" {
			return nil, errors.New("no display")
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	k := NewKeeper(dial, d, idle, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(k.Close)
	return k, d
}

func TestKeeperScreenshotFromTheFramebuffer(t *testing.T) {
	s := newFakeServer(t, 40, 30)
	s.paint(image.Rect(0, 0, 40, 10), red)
	k, d := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	b, mime, err := k.Screenshot(ctx, "bureau-x")
	if err != nil || mime != "image/png" || d.calls != 0 {
		t.Fatalf("screenshot: %v %s, hypervisor asked %d times", err, mime, d.calls)
	}
	m, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, bl, _ := m.At(5, 5).RGBA(); r>>8 != uint32(red.R) || g>>8 != uint32(red.G) || bl>>8 != uint32(red.B) {
		t.Fatalf("pixel %v, want %v", m.At(5, 5), red)
	}
	// Unchanged: the same encoding is handed out again.
	b2, _, _ := k.Screenshot(ctx, "bureau-x")
	if &b2[0] != &b[0] {
		t.Fatal("an unchanged screen was encoded again")
	}
	// Changed: the new pixels, without waiting for anything else.
	s.paint(image.Rect(0, 20, 40, 30), blue)
	b3, _, _ := k.Screenshot(ctx, "bureau-x")
	m3, _ := png.Decode(bytes.NewReader(b3))
	if r, g, bl, _ := m3.At(5, 25).RGBA(); r>>8 != uint32(blue.R) || g>>8 != uint32(blue.G) || bl>>8 != uint32(blue.B) {
		t.Fatalf("after a change pixel %v, want %v", m3.At(5, 25), blue)
	}
	if k.Count() != 1 {
		t.Fatalf("%d framebuffers open, want 1", k.Count())
	}
}

func TestKeeperFallsBackToTheHypervisor(t *testing.T) {
	k, d := newTestKeeper(t, "", time.Minute)
	b, _, err := k.Screenshot(context.Background(), "bureau-x")
	if err != nil || string(b) != "dump" || d.calls != 1 {
		t.Fatalf("no socket: %q %v, hypervisor asked %d times", b, err, d.calls)
	}
	k2, d2 := newTestKeeper(t, t.TempDir()+"/none.sock", time.Minute)
	for range 2 {
		if b, _, err := k2.Screenshot(context.Background(), "bureau-x"); err != nil || string(b) != "dump" {
			t.Fatalf("missing socket: %q %v", b, err)
		}
	}
	if d2.calls != 2 {
		t.Fatalf("hypervisor asked %d times, want 2", d2.calls)
	}
	if _, _, err := k2.Settle(context.Background(), "bureau-x", 10*time.Millisecond, time.Second); !errors.Is(err, ErrNotLive) {
		t.Fatalf("settle without a framebuffer: %v", err)
	}
}

// painter draws changes on a fake server and notes when each began (the
// keeper cannot see a change before that).
type painter struct {
	s     *fakeServer
	mu    sync.Mutex
	began []time.Time
}

func (p *painter) paint(r image.Rectangle, col color.RGBA) {
	p.mu.Lock()
	p.began = append(p.began, time.Now())
	p.mu.Unlock()
	p.s.paint(r, col)
}

// times are when the changes so far began.
func (p *painter) times() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.began)
}

// stillFor says whether the screen stood still for quiet somewhere between
// from and to (no change began in a stretch that long).
func stillFor(began []time.Time, from, to time.Time, quiet time.Duration) bool {
	last := from
	for _, b := range began {
		if b.After(to) {
			break
		}
		if b.Sub(last) >= quiet {
			return true
		}
		last = later(b, last)
	}
	return to.Sub(last) >= quiet
}

// TestKeeperSettlesOnDamage checks what a settle waits for by the order of
// events, not by how long the machine took: it settles only once the
// screen has been still for the quiet time, with every change drawn
// before that, and a screen that keeps changing does not settle but is
// given up on at the limit. Changes come far more often than the quiet
// time; should the test's own goroutines stall that long, the screen
// really was still and the settle is judged on what it saw.
func TestKeeperSettlesOnDamage(t *testing.T) {
	s := newFakeServer(t, 40, 30)
	k, _ := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	if _, err := k.Live(ctx, "bureau-x"); err != nil {
		t.Fatal(err)
	}
	// Five changes 20 ms apart, then still.
	const quiet = 300 * time.Millisecond
	p := &painter{s: s}
	start := time.Now()
	painted := make(chan struct{})
	go func() {
		defer close(painted)
		for i := range 5 {
			p.paint(image.Rect(i, 0, i+1, 1), red)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// The limit only guards against a hang.
	m, settled, err := k.Settle(ctx, "bureau-x", quiet, hangGuard)
	returned := time.Now()
	<-painted
	if err != nil || !settled {
		t.Fatalf("settle: %v settled=%v", err, settled)
	}
	// The last change the settled screen shows, and when it began.
	seen, seenAt := -1, start
	began := p.times()
	for i := range 5 {
		if r, _, _, _ := m.At(i, 0).RGBA(); r>>8 == uint32(red.R) {
			if seen != i-1 {
				t.Fatalf("the settled screen shows change %d but not %d", i, seen+1)
			}
			seen, seenAt = i, began[i]
		}
	}
	if still := returned.Sub(seenAt); still < quiet {
		t.Errorf("settled %v after the last change it shows, want at least the quiet time %v", still, quiet)
	}
	for i, b := range began {
		if returned.Sub(b) >= quiet && i > seen {
			t.Errorf("change %d, drawn %v before the settle returned, is not in the settled screen (last seen: %d)", i, returned.Sub(b), seen)
		}
	}
	if seen < 4 {
		t.Logf("the painter stalled for the quiet time: settled after change %d of 5", seen+1)
	}

	// A screen that keeps changing does not settle: it is given up on at
	// the limit, while it still changes.
	p = &painter{s: s}
	stop := make(chan struct{})
	changing := make(chan struct{})
	go func() {
		defer close(changing)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			col := red
			if i%2 == 0 {
				col = blue
			}
			p.paint(image.Rect(0, 0, 2, 2), col)
		}
	}()
	const limit = 800 * time.Millisecond
	start = time.Now()
	_, settled, err = k.Settle(ctx, "bureau-x", quiet, limit)
	returned = time.Now()
	close(stop)
	<-changing
	if err != nil {
		t.Fatalf("changing screen: %v", err)
	}
	if took := returned.Sub(start); took < limit {
		t.Errorf("changing screen: given up on after %v, before the limit %v", took, limit)
	}
	if settled && !stillFor(p.times(), start, returned, quiet) {
		t.Errorf("a screen that kept changing settled (changes began at %v)", p.times())
	}
}

func TestKeeperDropsIdleFramebuffers(t *testing.T) {
	s := newFakeServer(t, 8, 8)
	k, _ := newTestKeeper(t, s.path, 200*time.Millisecond)
	if _, err := k.Live(context.Background(), "bureau-x"); err != nil {
		t.Fatal(err)
	}
	// The deadline only guards against a hang.
	deadline := time.Now().Add(hangGuard)
	for k.Count() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("an unused framebuffer was kept past its idle time")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Used again: dialed again.
	if _, err := k.Live(context.Background(), "bureau-x"); err != nil || k.Count() != 1 {
		t.Fatalf("after idle: %v, %d open", err, k.Count())
	}
	k.Forget("bureau-x")
	if k.Count() != 0 {
		t.Fatal("Forget kept the framebuffer")
	}
}
