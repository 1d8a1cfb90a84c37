package framebuffer

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
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

func TestKeeperSettlesOnDamage(t *testing.T) {
	s := newFakeServer(t, 40, 30)
	k, _ := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	if _, err := k.Live(ctx, "bureau-x"); err != nil {
		t.Fatal(err)
	}
	// Changes for 200 ms, then still.
	start := time.Now()
	go func() {
		for i := range 5 {
			s.paint(image.Rect(i, 0, i+1, 1), red)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	m, settled, err := k.Settle(ctx, "bureau-x", 150*time.Millisecond, 3*time.Second)
	took := time.Since(start)
	if err != nil || !settled {
		t.Fatalf("settle: %v settled=%v", err, settled)
	}
	if took < 350*time.Millisecond || took > time.Second {
		t.Fatalf("settled after %v, want the last change (~200 ms) + 150 ms quiet", took)
	}
	if r, _, _, _ := m.At(4, 0).RGBA(); r>>8 != uint32(red.R) {
		t.Fatal("the settled screen lacks the last change")
	}
	// A screen that keeps changing does not settle within the limit.
	stop := make(chan struct{})
	go func() {
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
			s.paint(image.Rect(0, 0, 2, 2), col)
		}
	}()
	defer close(stop)
	start = time.Now()
	_, settled, err = k.Settle(ctx, "bureau-x", 150*time.Millisecond, 400*time.Millisecond)
	if err != nil || settled || time.Since(start) > 800*time.Millisecond {
		t.Fatalf("changing screen: settled=%v err=%v after %v", settled, err, time.Since(start))
	}
}

func TestKeeperDropsIdleFramebuffers(t *testing.T) {
	s := newFakeServer(t, 8, 8)
	k, _ := newTestKeeper(t, s.path, 200*time.Millisecond)
	if _, err := k.Live(context.Background(), "bureau-x"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
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
