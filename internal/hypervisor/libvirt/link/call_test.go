package link

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCallHonoursDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Call(ctx, func() (int, error) { time.Sleep(2 * time.Second); return 1, nil })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("call returned %v after %s", err, time.Since(start))
	}
}
