package computer

import (
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// Pointer events go to a virtio tablet once the guest's driver is up (to
// the PS/2 mouse before that). QEMU drops a report that does not fit the
// buffers the guest driver has posted, and a starved guest posts none for
// a while, so bureau sends a report only when it fits, and returns once
// the guest has taken it back out of the queue: a move is in the guest's
// input stack when the call ends, never silently lost.

// sendPointer delivers one pointer report.
func (c *Computer) sendPointer(ctx context.Context, domain string, ev []raw.InputEvent) error {
	need := len(ev) + 1 // a buffer per event and one for the sync
	room, ok, err := c.in.PointerQueue(ctx, domain)
	if err != nil {
		return err
	}
	if !ok {
		return c.in.SendInput(ctx, domain, ev)
	}
	if room < need {
		if room, err = c.awaitPointer(ctx, domain, need); err != nil {
			return err
		}
	}
	if err := c.in.SendInput(ctx, domain, ev); err != nil {
		return err
	}
	// Taken: the guest driver has posted its buffers back.
	_, err = c.awaitPointer(ctx, domain, room)
	return err
}

// awaitPointer re-reads the tablet's queue until it has room for need
// events. A guest that takes nothing for KeyStall is paused or hung; one
// that drops its driver (a reboot) is left to the PS/2 mouse.
func (c *Computer) awaitPointer(ctx context.Context, domain string, need int) (int, error) {
	wait, start := time.Millisecond, time.Now()
	for {
		room, ok, err := c.in.PointerQueue(ctx, domain)
		switch {
		case err != nil:
			return 0, err
		case !ok || room >= need:
			return room, nil
		case time.Since(start) > c.KeyStall:
			return 0, fmt.Errorf("the desktop took no pointer event for %s (is it paused or hung?): %w", c.KeyStall, desktop.ErrUnavailable)
		}
		if err := sleep(ctx, wait); err != nil {
			return 0, err
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}
