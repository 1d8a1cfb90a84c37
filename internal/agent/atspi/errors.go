package atspi

import "github.com/bureau/bureau/internal/agent/wire"

// Error is a failure the caller is told about as it is: Code is one of
// wire's (not_found, gone, invalid, unavailable, failed).
type Error struct {
	Code string
	Msg  string
	// cause is the bus's error it was made from, if any (errSlow, …).
	cause error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.cause }

func invalid(msg string) error { return &Error{Code: wire.CodeInvalid, Msg: msg} }

func gone(msg string) error { return &Error{Code: wire.CodeGone, Msg: msg} }
