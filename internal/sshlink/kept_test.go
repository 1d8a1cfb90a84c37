package sshlink

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestKept(t *testing.T) {
	srv := newServer(t)
	k := NewKept(srv.target())
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, _, err := k.Run(ctx, "echo one", nil); err != nil || string(out) != "one\n" {
		t.Fatalf("Kept.Run: %q %v", out, err)
	}
	first, err := k.Link(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := handshakes(srv, 1); n != 1 {
		t.Errorf("%d handshakes, want the one link kept", n)
	}
	srv.drop()
	<-first.Done()
	// Many callers at once: one dial, one new link for all.
	var wg sync.WaitGroup
	links := make([]*Link, 8)
	for i := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if links[i], err = k.Link(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, l := range links {
		if l == nil || l == first || l != links[0] {
			t.Fatalf("links after the drop: %v (first %p)", links, first)
		}
	}
	if n := handshakes(srv, 2); n != 2 {
		t.Errorf("%d handshakes after the drop, want 2", n)
	}
	if out, _, err := k.Run(ctx, "echo two", nil); err != nil || string(out) != "two\n" {
		t.Errorf("Kept.Run after the drop: %q %v", out, err)
	}
	k.Close()
	if _, _, err := k.Run(ctx, "true", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if !errors.Is(links[0].Err(), ErrClosed) {
		t.Errorf("link after Kept.Close: %v", links[0].Err())
	}
}

func TestKeptDialFailure(t *testing.T) {
	srv := newServer(t)
	tg := srv.target()
	tg.Signer = newSigner(t)
	k := NewKept(tg)
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 { // each use dials again
		if _, err := k.DialUnix(ctx, "/nonexistent"); !errors.Is(err, ErrKeyRefused) {
			t.Errorf("Kept with a refused key: %v", err)
		}
	}
	if n := srv.handshakes.Load(); n != 0 {
		t.Errorf("%d handshakes succeeded", n)
	}
}
