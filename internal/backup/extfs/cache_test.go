package extfs

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// TestCache: one materialization however many ask at once, at most
// max open (the oldest unused closed first), Forget closes, and an unused
// one expires.
func TestCache(t *testing.T) {
	img := image(t, "gpt")
	data, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(filepath.Join(t.TempDir(), "backup-files"), 10*time.Minute, 2, slog.New(slog.DiscardHandler))
	var fills atomic.Int32
	fill := func(ctx context.Context, disk Disk) error {
		fills.Add(1)
		time.Sleep(20 * time.Millisecond)
		if err := disk.Truncate(int64(len(data))); err != nil {
			return err
		}
		_, err := disk.WriteAt(data, 0)
		return err
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			fsys, release, err := c.Acquire(ctx, "b1", fill)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			if _, err := fsys.Stat(ctx, "/agent/notes.txt"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if fills.Load() != 1 {
		t.Errorf("%d materializations of one backup", fills.Load())
	}
	if _, err := os.Stat(filepath.Join(c.dir, "b1.raw")); err != nil {
		t.Errorf("b1 not kept: %v", err)
	}
	_, r2, err := c.Acquire(ctx, "b2", fill)
	if err != nil {
		t.Fatal(err)
	}
	// Both open and b2 in use: a third is refused until one is free.
	_, r1, _ := c.Acquire(ctx, "b1", fill)
	if _, _, err := c.Acquire(ctx, "b3", fill); !errors.Is(err, desktop.ErrUnavailable) {
		t.Errorf("a third while two are in use: %v", err)
	}
	r1()
	_, r3, err := c.Acquire(ctx, "b3", fill)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Opened(); slices.Contains(got, "b1") || len(got) != 2 {
		t.Errorf("open after the oldest unused was closed: %v", got)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "b1.raw")); !os.IsNotExist(err) {
		t.Errorf("b1's file stays: %v", err)
	}
	// Forgetting one in use: its file goes when it is released.
	c.Forget("b2")
	if _, err := os.Stat(filepath.Join(c.dir, "b2.raw")); err != nil {
		t.Errorf("b2 removed while in use: %v", err)
	}
	r2()
	if _, err := os.Stat(filepath.Join(c.dir, "b2.raw")); !os.IsNotExist(err) {
		t.Errorf("b2 kept after its release: %v", err)
	}
	c.mu.Lock()
	c.keep = 10 * time.Millisecond
	c.mu.Unlock()
	r3()
	deadline := time.Now().Add(5 * time.Second)
	for len(c.Opened()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := c.Opened(); len(got) != 0 {
		t.Errorf("still open after keep: %v", got)
	}
	// A failed materialization is not kept (nor its file): the next call
	// tries again.
	boom := errors.New("boom")
	if _, _, err := c.Acquire(ctx, "b4", func(context.Context, Disk) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("failed open: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "b4.raw")); !os.IsNotExist(err) {
		t.Errorf("b4's file stays after a failed open: %v", err)
	}
	if _, release, err := c.Acquire(ctx, "b4", fill); err != nil {
		t.Errorf("retry: %v", err)
	} else {
		release()
	}
	if err := c.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("folder not cleared: %v", err)
	}
}
