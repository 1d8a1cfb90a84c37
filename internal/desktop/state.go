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
	// Paused: the VM is frozen with its RAM held in host memory.
	StatePausing State = "pausing"
	StatePaused  State = "paused"
	// Hibernated: RAM saved to disk, no CPU or memory used on the host;
	// resuming brings back the running programs.
	StateHibernating State = "hibernating"
	StateHibernated  State = "hibernated"
	StateResuming    State = "resuming"
	StateReverting   State = "reverting"
	StateReimaging   State = "reimaging"
	StateDeleting    State = "deleting"
	StateDeleted     State = "deleted"
	StateError       State = "error"
	// Crashed: the VM's QEMU process died; LastError says why.
	StateCrashed State = "crashed"
)

// Op names a lifecycle operation a caller can ask for.
type Op string

const (
	OpStart     Op = "start"
	OpStop      Op = "stop"
	OpReboot    Op = "reboot"
	OpDelete    Op = "delete"
	OpPause     Op = "pause"
	OpResume    Op = "resume"
	OpHibernate Op = "hibernate"
	OpRevert    Op = "revert"
	OpReimage   Op = "reimage"
)

// transitions is the one table of which operation may begin from which state
// and the transient state it moves the desktop into.
var transitions = map[Op]struct {
	from    []State
	through State
}{
	OpStart:     {[]State{StateStopped, StateHibernated, StateCrashed, StateError}, StateStarting},
	OpStop:      {[]State{StateRunning, StatePaused, StateHibernated, StateError}, StateStopping},
	OpReboot:    {[]State{StateRunning}, StateRebooting},
	OpDelete:    {[]State{StateCreating, StateRunning, StatePaused, StateHibernated, StateStopped, StateCrashed, StateError}, StateDeleting},
	OpPause:     {[]State{StateRunning}, StatePausing},
	OpResume:    {[]State{StatePaused, StateHibernated}, StateResuming},
	OpHibernate: {[]State{StateRunning, StatePaused}, StateHibernating},
	OpRevert:    {[]State{StateRunning, StatePaused, StateStopped}, StateReverting},
	OpReimage:   {[]State{StateRunning, StateStopped, StateCrashed, StateError}, StateReimaging},
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
	case StateRunning, StatePaused, StateHibernated, StateStopped, StateCrashed, StateError, StateDeleted:
		return true
	}
	return false
}
