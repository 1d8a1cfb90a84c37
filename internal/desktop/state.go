package desktop

import "slices"

// State is the observed state of a desktop.
type State string

const (
	StateCreating  State = "creating"
	StateStarting  State = "starting"
	StateRunning   State = "running"
	StateStopping  State = "stopping"
	StateStopped   State = "stopped"
	StateRebooting State = "rebooting"
	StateDeleting  State = "deleting"
	StateDeleted   State = "deleted"
	StateError     State = "error"
)

// Op names a lifecycle operation a caller can ask for.
type Op string

const (
	OpStart  Op = "start"
	OpStop   Op = "stop"
	OpReboot Op = "reboot"
	OpDelete Op = "delete"
)

// transitions is the one table of which operation may begin from which state
// and the transient state it moves the desktop into.
var transitions = map[Op]struct {
	from    []State
	through State
}{
	OpStart:  {[]State{StateStopped, StateError}, StateStarting},
	OpStop:   {[]State{StateRunning, StateError}, StateStopping},
	OpReboot: {[]State{StateRunning}, StateRebooting},
	OpDelete: {[]State{StateCreating, StateRunning, StateStopped, StateError}, StateDeleting},
}

// Begin checks that op may start from the current state and returns the
// transient state to record. A refused transition is a *TransitionError.
func Begin(op Op, current State) (State, error) {
	t, ok := transitions[op]
	if !ok || !slices.Contains(t.from, current) {
		return "", &TransitionError{Op: op, State: current}
	}
	return t.through, nil
}

// Settled reports whether no operation is moving the desktop.
func (s State) Settled() bool {
	switch s {
	case StateRunning, StateStopped, StateError, StateDeleted:
		return true
	}
	return false
}
