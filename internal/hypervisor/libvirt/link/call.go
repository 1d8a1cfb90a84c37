package link

import (
	"context"
	"fmt"

	"libvirt.org/go/libvirt"
)

// Call runs fn with the context's deadline (or DefaultCallTimeout). libvirt's
// C calls cannot be interrupted, so on timeout fn finishes in the background
// and its result is dropped.
func Call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("libvirt call: %w", ctx.Err())
	}
}

// DomainOn is WithDomain on c's own host, whatever Remotes.Where says.
// A domain not there is an error wrapping ErrNoDomain.
func DomainOn[T any](ctx context.Context, c *Conn, name string, fn func(*libvirt.Domain) (T, error)) (T, error) {
	var zero T
	conn, err := c.Connect(ctx)
	if err != nil {
		return zero, err
	}
	return Call(ctx, func() (T, error) {
		dom, err := conn.LookupDomainByName(name)
		if err != nil {
			return zero, Translate(name, err)
		}
		defer dom.Free()
		return fn(dom)
	})
}

// WithDomain looks a domain up on the host it runs on (Remotes.Where) and
// runs fn on it within the deadline.
func WithDomain[T any](ctx context.Context, c *Conn, name string, fn func(*libvirt.Domain) (T, error)) (T, error) {
	c, err := c.On(ctx, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return DomainOn(ctx, c, name, func(d *libvirt.Domain) (T, error) {
		v, err := fn(d)
		return v, Translate(name, err)
	})
}
