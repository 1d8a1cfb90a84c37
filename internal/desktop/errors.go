package desktop

import (
	"errors"
	"fmt"
)

// Sentinel errors; the API maps each to one HTTP status.
var (
	ErrNotFound     = errors.New("not found")
	ErrNameTaken    = errors.New("name already in use")
	ErrBusy         = errors.New("another operation is in progress on this desktop")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrUnavailable  = errors.New("unavailable")
	ErrCapacity     = errors.New("not enough capacity on the host")
	// ErrConflict is a state write based on a row another writer changed
	// since it was read: a lost update caught, never applied.
	ErrConflict = errors.New("the desktop was changed by another writer")
	// ErrNoSnapshot is a snapshot the disks or the hypervisor do not have.
	ErrNoSnapshot = errors.New("no such snapshot")
	// ErrHostLost: the connection to the host's libvirtd broke during the
	// call (libvirtd restarted, the link dropped), so what the call did is
	// not known: it is for reconcile to see, not a failure of the desktop.
	ErrHostLost = errors.New("lost the connection to the host's libvirtd")
)

// ValidationError names the field a request got wrong.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Message }

// TransitionError says an operation is not allowed in the desktop's current state.
type TransitionError struct {
	Op    Op
	State State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot %s a desktop that is %s", e.Op, e.State)
}

// ConflictError is a request that clashes with what exists (a directory
// where a file was meant, say): 409.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

var (
	// ErrHostGone: the host a desktop was placed on is no longer one of
	// bureau's hosts.
	ErrHostGone = errors.New("the desktop's host is not one of bureau's hosts")
	// ErrNotOnRemoteHost: an operation bureau does not do yet for a
	// desktop on a remote host.
	ErrNotOnRemoteHost = errors.New("not available yet for a desktop on a remote host")
)

// UnreachableError: some hosts did not answer, so what runs there is not
// known; nothing about their desktops may be concluded from silence.
type UnreachableError struct {
	Hosts []string
	Err   error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("hosts %v did not answer: %v", e.Hosts, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }
