package framebuffer

import (
	"context"
	"errors"
	"image"
	"testing"
	"time"
)

// TestKeeperChangedSeesTheFirstChange: Changed returns at the first change
// past the mark, never before it was drawn; it answers at once when the
// screen had already changed; and it keeps the server scanning while it
// waits.
func TestKeeperChangedSeesTheFirstChange(t *testing.T) {
	s := newFakeServer(t, 40, 30)
	k, _ := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	mark, err := k.Version(ctx, "bureau-x")
	if err != nil {
		t.Fatal(err)
	}
	nudges, _ := s.counts()
	start := time.Now()
	// The change is drawn 60 ms after Changed has begun watching, which
	// the server sees as its first nudge: Changed measures from its own
	// start, which lies between this test's start and that nudge, so the
	// nudge is the earliest instant its report can be held against.
	watching, drawn := make(chan time.Time, 1), make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if n, _ := s.counts(); n > nudges {
				break
			}
		}
		watching <- time.Now()
		time.Sleep(60 * time.Millisecond)
		drawn <- time.Now()
		s.paint(image.Rect(0, 0, 4, 4), red)
	}()
	changed, after, err := k.Changed(ctx, "bureau-x", mark, hangGuard)
	returned := time.Now()
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v, want the change drawn meanwhile", changed, err)
	}
	nudged, began := <-watching, <-drawn
	if nudged.Add(after).Before(began) {
		t.Errorf("change reported %v after the call, before it was drawn (%v after the call began watching)", after, began.Sub(nudged))
	}
	if after > returned.Sub(start) {
		t.Errorf("change reported %v after the call, but the call returned after %v", after, returned.Sub(start))
	}
	if n, _ := s.counts(); n <= nudges {
		t.Errorf("the server was nudged %d times while Changed watched, want more than %d", n, nudges)
	}

	// Already changed when asked: true at once.
	s.paint(image.Rect(0, 0, 4, 4), blue)
	if _, err := k.Live(ctx, "bureau-x"); err != nil {
		t.Fatal(err)
	}
	changed, after, err = k.Changed(ctx, "bureau-x", mark, hangGuard)
	if err != nil || !changed || after != 0 {
		t.Fatalf("a change before the call: changed=%v after=%v err=%v, want true at 0", changed, after, err)
	}
}

// TestKeeperChangedWatchesTheWholeWindow: with nothing drawn, Changed says
// so once its window has passed, not before; a pixel painted again in the
// colour it had is no change.
func TestKeeperChangedWatchesTheWholeWindow(t *testing.T) {
	s := newFakeServer(t, 40, 30)
	s.paint(image.Rect(0, 0, 40, 30), red)
	k, _ := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	mark, err := k.Version(ctx, "bureau-x")
	if err != nil {
		t.Fatal(err)
	}
	s.paint(image.Rect(0, 0, 10, 10), red) // sent again, but the same pixels
	const window = 150 * time.Millisecond
	start := time.Now()
	changed, after, err := k.Changed(ctx, "bureau-x", mark, window)
	if took := time.Since(start); took < window {
		t.Errorf("gave up after %v, before the %v window", took, window)
	}
	if err != nil || changed || after != 0 {
		t.Fatalf("unchanged screen: changed=%v after=%v err=%v", changed, after, err)
	}
	// The mark still holds: a later change is seen against it.
	s.paint(image.Rect(0, 0, 10, 10), blue)
	if changed, _, err := k.Changed(ctx, "bureau-x", mark, hangGuard); err != nil || !changed {
		t.Fatalf("after a real change: changed=%v err=%v", changed, err)
	}
}

// TestKeeperChangedAcrossAFramebufferRemade: a mark from a framebuffer
// that has since been remade counts as changed (the display went away and
// came back), not compared with the new one's versions.
func TestKeeperChangedAcrossAFramebufferRemade(t *testing.T) {
	s := newFakeServer(t, 8, 8)
	k, _ := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	mark, err := k.Version(ctx, "bureau-x")
	if err != nil {
		t.Fatal(err)
	}
	k.Forget("bureau-x")
	changed, after, err := k.Changed(ctx, "bureau-x", mark, hangGuard)
	if err != nil || !changed || after != 0 {
		t.Fatalf("remade framebuffer: changed=%v after=%v err=%v", changed, after, err)
	}
	again, err := k.Version(ctx, "bureau-x")
	if err != nil || again == mark {
		t.Fatalf("the new framebuffer's mark %d equals the old one's %d (err %v)", again, mark, err)
	}
}

func TestKeeperVersionWithoutAFramebuffer(t *testing.T) {
	k, d := newTestKeeper(t, "", time.Minute)
	if _, err := k.Version(context.Background(), "bureau-x"); !errors.Is(err, ErrNotLive) {
		t.Fatalf("version without a display: %v, want ErrNotLive", err)
	}
	if _, _, err := k.Changed(context.Background(), "bureau-x", 0, time.Second); !errors.Is(err, ErrNotLive) {
		t.Fatalf("changed without a display: %v, want ErrNotLive", err)
	}
	if d.calls != 0 {
		t.Fatalf("the hypervisor was asked for %d screen dumps; a watch has no fallback", d.calls)
	}
}

// TestKeeperChangedWhenTheDisplayGoes: a framebuffer whose server goes away
// mid-watch is ErrNotLive, not "no change".
func TestKeeperChangedWhenTheDisplayGoes(t *testing.T) {
	s := newFakeServer(t, 8, 8)
	k, _ := newTestKeeper(t, s.path, time.Minute)
	ctx := context.Background()
	mark, err := k.Version(ctx, "bureau-x")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	}()
	changed, _, err := k.Changed(ctx, "bureau-x", mark, hangGuard)
	if changed || !errors.Is(err, ErrNotLive) {
		t.Fatalf("display gone: changed=%v err=%v, want ErrNotLive", changed, err)
	}
}
