package computer

import (
	"context"
	"errors"
	"image/color"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// fakeTablet is a desktop's virtio tablet: the guest driver has posted
// free buffers, a report takes one per event and one for its sync and is
// dropped whole when they do not fit (as QEMU does). Each look lets the
// guest take drain buffers' events, except for the first starve looks.
type fakeTablet struct {
	free, drain, starve int
	ring                []raw.InputEvent // nil stands for a sync
	dropped             int
	got                 []raw.InputEvent // what reached the guest's input stack
}

func (t *fakeTablet) step() {
	if t.starve > 0 {
		t.starve--
		return
	}
	n := min(t.drain, len(t.ring))
	for _, e := range t.ring[:n] {
		if e != nil {
			t.got = append(t.got, e)
		}
	}
	t.ring, t.free = t.ring[n:], t.free+n
}

// send queues a report; false when it is dropped.
func (t *fakeTablet) send(ev []raw.InputEvent) bool {
	if len(ev)+1 > t.free {
		t.dropped++
		return false
	}
	t.free -= len(ev) + 1
	t.ring = append(append(t.ring, ev...), nil)
	return true
}

// A guest that stops taking pointer events for a while loses none: each
// report waits for room, and each call returns once the guest has taken
// its report (so the pointer is where the call said).
func TestPointerStarvedGuest(t *testing.T) {
	f := &fakeVM{frames: [][]byte{pngFrame(t, 100, 50, color.White)}}
	f.tablet = &fakeTablet{free: 4, drain: 1, starve: 20}
	c := New(f, f, f)
	ctx := context.Background()
	for i := range 10 {
		if err := c.move(ctx, "vm", Point{X: i * 10, Y: i * 5}); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		waiting := len(f.tablet.ring)
		f.mu.Unlock()
		if waiting != 0 {
			t.Fatalf("move %d returned with %d events not taken by the guest", i, waiting)
		}
	}
	if err := c.button(ctx, "vm", raw.InputButtonLeft, true); err != nil {
		t.Fatal(err)
	}
	if f.tablet.dropped != 0 {
		t.Errorf("%d reports dropped", f.tablet.dropped)
	}
	if len(f.tablet.got) != 21 {
		t.Fatalf("the guest got %d events, want 10 moves of 2 and a button", len(f.tablet.got))
	}
	last := f.tablet.got[18].(raw.InputEventAbs)
	if want := absAxis(90, 100); last.Value != want {
		t.Errorf("last x %d, want %d", last.Value, want)
	}
}

// A guest that never takes a pointer event is reported as unavailable
// instead of the move being lost.
func TestPointerHungGuest(t *testing.T) {
	f := &fakeVM{frames: [][]byte{pngFrame(t, 100, 50, color.White)}}
	f.tablet = &fakeTablet{free: 2, drain: 1, starve: 1 << 30}
	c := New(f, f, f)
	c.KeyStall = 100 * time.Millisecond
	err := c.move(context.Background(), "vm", Point{X: 1, Y: 1})
	if !errors.Is(err, desktop.ErrUnavailable) {
		t.Fatalf("move on a hung guest: %v", err)
	}
	if f.tablet.dropped != 0 || len(f.calls) != 0 {
		t.Errorf("sent %d reports (%d dropped) to a guest with no room", len(f.calls), f.tablet.dropped)
	}
}
