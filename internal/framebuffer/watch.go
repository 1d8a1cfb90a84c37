package framebuffer

import (
	"context"
	"fmt"
	"time"
)

// Watching for the effect of one input: Version marks the screen before
// it, Changed waits briefly after it for the first change past the mark.
// Only pixels count: this client asks for raw pixels and desktop resizes,
// not for QEMU's cursor pseudo-encodings, and QEMU draws no pointer into
// the pixels it sends without them, so a pointer that moved over an
// unchanged desktop is no change.

// genShift puts a framebuffer's number above its screen versions in a
// mark, so a mark from a framebuffer since remade (the display went away
// and came back) is told apart from the new one's versions.
const genShift = 48

// Version is a mark of the screen as it is now (the copy brought up to
// date with the server first), for Changed. ErrNotLive: no live
// framebuffer.
func (k *Keeper) Version(ctx context.Context, domain string) (uint64, error) {
	l, err := k.synced(ctx, domain)
	if err != nil {
		return 0, err
	}
	v, _ := l.conn.State()
	return l.gen<<genShift | v, nil
}

// Changed watches the screen for up to within for a change past the mark
// since (from Version), and returns at the first one with how long after
// the call it was seen: 0 when the screen had already changed. While it
// watches it keeps the server scanning every 30 ms, as Settle does, so a
// change is seen within a scan of being drawn. A framebuffer remade since
// the mark counts as changed (the display went away and came back).
// ErrNotLive: the framebuffer is gone or its server stopped answering.
func (k *Keeper) Changed(ctx context.Context, domain string, since uint64, within time.Duration) (bool, time.Duration, error) {
	start := time.Now()
	l, err := k.get(ctx, domain)
	if err != nil {
		return false, 0, err
	}
	if since>>genShift != l.gen&(1<<(64-genShift)-1) {
		return true, 0, nil
	}
	since &= 1<<genShift - 1
	if v, _ := l.conn.State(); v > since {
		return true, 0, nil
	}
	wctx, cancel := context.WithDeadline(ctx, start.Add(within))
	defer cancel()
	watch, stop := context.WithCancel(wctx)
	defer stop()
	var scanErr error
	scanning := make(chan struct{})
	go func() {
		defer close(scanning)
		if scanErr = l.scan(watch); scanErr != nil {
			stop()
		}
	}()
	err = l.conn.WaitChange(watch, since)
	seen := time.Since(start)
	stop()
	<-scanning
	switch {
	case err == nil:
		return true, seen, nil
	case ctx.Err() != nil:
		return false, 0, ctx.Err()
	case l.conn.Err() != nil:
		return false, 0, fmt.Errorf("%w: %v", ErrNotLive, l.conn.Err())
	case scanErr != nil:
		return false, 0, fmt.Errorf("%w: %v", ErrNotLive, scanErr)
	}
	return false, 0, nil
}

// scan keeps the server scanning often until ctx is done: each sync
// nudges it and waits for its next scan. It returns why a sync failed,
// nil once ctx is done.
func (l *live) scan(ctx context.Context) error {
	for {
		sctx, cancel := context.WithTimeout(ctx, syncWait)
		err := l.conn.Sync(sctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-time.After(syncEvery):
		case <-ctx.Done():
			return nil
		}
	}
}
