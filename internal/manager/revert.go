package manager

import "context"

// reverter undoes the steps of a half-done operation in reverse order
// unless the operation succeeds.
type reverter struct {
	undo []func(context.Context)
}

func (r *reverter) add(f func(context.Context)) { r.undo = append(r.undo, f) }

func (r *reverter) run(ctx context.Context) {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i](ctx)
	}
	r.undo = nil
}
