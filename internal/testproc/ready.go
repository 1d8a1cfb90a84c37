package testproc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Ready runs step (each try bounded by try) every pause until it succeeds,
// the process exits (exited closes) or ctx ends; name and at say which
// server and where, for the error.
func Ready(ctx context.Context, name, at string, exited <-chan struct{}, try, pause time.Duration, step func(context.Context) error) error {
	for {
		sctx, cancel := context.WithTimeout(ctx, try)
		last := step(sctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New(name + " exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w (last: %v)", name, at, ctx.Err(), last)
		case <-time.After(pause):
		}
	}
}
