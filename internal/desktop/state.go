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
	// Napping and sleeping are the idle tiers bureau moves a quiet desktop
	// through before hibernation; any use wakes it. Napping: paused by
	// bureau, RAM resident (wakes in milliseconds). Sleeping: the guest's
	// page cache dropped, then paused and its memory pushed out to the
	// host's compressed swap (wakes in about a second).
	StateNapping  State = "napping"
	StateSleeping State = "sleeping"
	// Hibernated: RAM saved to disk, no CPU or memory used on the host;
	// resuming brings back the running programs.
	StateHibernating State = "hibernating"
	StateHibernated  State = "hibernated"
	StateResuming    State = "resuming"
	StateReverting   State = "reverting"
	StateReimaging   State = "reimaging"
	// Migrating: moving, running, to another host with its disks.
	StateMigrating State = "migrating"
	StateDeleting  State = "deleting"
	StateDeleted   State = "deleted"
	StateError     State = "error"
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
	// OpNap and OpSleep are bureau's idle tiers (see StateNapping).
	OpNap   Op = "nap"
	OpSleep Op = "sleep"
	// OpPrewake restores a hibernated desktop paused, ahead of a likely
	// use (its console link made or opened): it then naps, and the use
	// only resumes it.
	OpPrewake Op = "prewake"
	OpRevert  Op = "revert"
	OpReimage Op = "reimage"
	// OpForceStop powers a desktop off at once, from any state.
	OpForceStop Op = "force_stop"
	// OpMigrate moves a desktop to another host: live when it runs,
	// cold (its files copied) when it does not.
	OpMigrate Op = "migrate"
)

// anyState is every state but deleted: delete may begin from it, stuck
// transient states included.
var anyState = []State{StateCreating, StateStarting, StateRunning, StateStopping, StateStopped, StateRebooting,
	StatePausing, StatePaused, StateNapping, StateSleeping, StateHibernating, StateHibernated, StateResuming, StateReverting, StateReimaging,
	StateMigrating, StateDeleting, StateError, StateCrashed}

// Transition is one row of the table of operations: the states an operation
// may begin from, the transient state it records while it runs, where it
// ends when it succeeds and where when it fails.
type Transition struct {
	From    []State
	Through State
	// To is the state on success ("" = it depends: revert and reimage end
	// running or stopped as the desktop was).
	To State
	// OnFailure is the state on failure ("" = the state it began from: the
	// VM is as it was, and LastError says why).
	OnFailure State
}

// transitions is the one table of which operation may begin from which state
// and the transient state it moves the desktop into.
var transitions = map[Op]Transition{
	OpStart:     {[]State{StateStopped, StateHibernated, StateCrashed, StateError}, StateStarting, StateRunning, StateError},
	OpStop:      {[]State{StateRunning, StatePaused, StateNapping, StateSleeping, StateHibernated, StateError}, StateStopping, StateStopped, StateError},
	OpForceStop: {slices.DeleteFunc(slices.Clone(anyState), func(s State) bool { return s == StateDeleting }), StateStopping, StateStopped, StateError},
	OpReboot:    {[]State{StateRunning}, StateRebooting, StateRunning, StateError},
	OpDelete:    {anyState, StateDeleting, StateDeleted, StateError},
	OpPause:     {[]State{StateRunning}, StatePausing, StatePaused, ""},
	OpNap:       {[]State{StateRunning}, StatePausing, StateNapping, ""},
	OpSleep:     {[]State{StateRunning, StateNapping}, StatePausing, StateSleeping, ""},
	OpResume:    {[]State{StatePaused, StateNapping, StateSleeping, StateHibernated}, StateResuming, StateRunning, StateError},
	OpPrewake:   {[]State{StateHibernated}, StateResuming, StateNapping, ""},
	OpHibernate: {[]State{StateRunning, StatePaused, StateNapping, StateSleeping}, StateHibernating, StateHibernated, ""},
	OpRevert:    {[]State{StateRunning, StatePaused, StateNapping, StateSleeping, StateStopped}, StateReverting, "", StateError},
	OpReimage:   {[]State{StateRunning, StateStopped, StateCrashed, StateError}, StateReimaging, "", StateError},
	// A running desktop moves live and keeps running; a stopped or
	// hibernated one moves cold and stays so; a frozen one (or one with
	// snapshots, which libvirt will not move live) is hibernated and moved
	// cold. A migration that fails leaves it as it was where it was.
	OpMigrate: {[]State{StateRunning, StatePaused, StateNapping, StateSleeping, StateHibernated, StateStopped}, StateMigrating, "", ""},
}

// Transitions returns the table of operations (for documentation and
// clients).
func Transitions() map[Op]Transition { return transitions }

// Target is the state op ends in when it succeeds ("" = it depends).
func Target(op Op) State { return transitions[op].To }

// Begin checks that op may start from the current state and returns the
// transient state to record. A refused transition is a *TransitionError.
func Begin(op Op, current State) (State, error) {
	t, ok := transitions[op]
	if !ok || !slices.Contains(t.From, current) {
		return "", &TransitionError{Op: op, State: current}
	}
	return t.Through, nil
}

// Settled reports whether no operation is moving the desktop.
func (s State) Settled() bool {
	switch s {
	case StateRunning, StatePaused, StateNapping, StateSleeping, StateHibernated, StateStopped, StateCrashed, StateError, StateDeleted:
		return true
	}
	return false
}

// Frozen reports a desktop whose VM is paused with its RAM on the host:
// paused by a caller, or napping or sleeping in an idle tier.
func (s State) Frozen() bool {
	return s == StatePaused || s == StateNapping || s == StateSleeping
}

// Wakeable reports a desktop that use brings back: frozen or hibernated.
func (s State) Wakeable() bool { return s.Frozen() || s == StateHibernated }
