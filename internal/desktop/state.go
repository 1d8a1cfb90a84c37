package desktop

import (
	"fmt"
	"slices"
	"strings"
)

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

// StateNone is no state yet: a desktop create is recording.
const StateNone State = ""

// allStates is every state, in the order the table of operations lists
// them.
var allStates = []State{StateCreating, StateStarting, StateRunning, StateStopping, StateStopped, StateRebooting,
	StatePausing, StatePaused, StateNapping, StateSleeping, StateHibernating, StateHibernated, StateResuming, StateReverting, StateReimaging,
	StateMigrating, StateDeleting, StateDeleted, StateError, StateCrashed}

// Op names a lifecycle operation a caller can ask for.
type Op string

const (
	// OpCreate records a new desktop, makes its files and VM and boots it.
	OpCreate    Op = "create"
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
	// OpRestoreData writes a backup over a stopped desktop's data disk
	// (its content before is kept as a snapshot first).
	OpRestoreData Op = "restore_data"
)

// OpOf is the operation a desktop's recorded Operation names: a delete
// that takes the data disk too is recorded "delete+data".
func OpOf(operation string) Op {
	if operation == "delete+data" {
		return OpDelete
	}
	return Op(operation)
}

// anyState is every state but deleted: delete may begin from it, stuck
// transient states included.
var anyState = slices.DeleteFunc(slices.Clone(allStates), func(s State) bool { return s == StateDeleted })

// Transition is one row of the table of operations: the states an operation
// may begin from, the transient state it records while it runs, where it
// ends when it succeeds and where when it fails.
//
// DesiredState is set as the operation begins to what it asks for (its
// success state). When it ends, DesiredState becomes the state it ends in,
// except on an end in error, which keeps it, and on an end that says
// KeepDesired: what was asked for is still wanted, as after a fault.
type Transition struct {
	From    []State
	Through State
	Success Ending
	Failure Ending
}

// Ending is where an operation ends (on success or on failure): one
// state, or, with AsVM, the state its VM is in then.
type Ending struct {
	// States is the one state it ends in; with AsVM, those its VM may be
	// in (none listed: any).
	States []State
	// AsVM: it ends as its VM is (see the function End): running if it
	// runs, stopped if it is off, and so on. A VM state it does not list,
	// or one not known, ends it in error.
	AsVM bool
	// KeepDesired: DesiredState stays what the operation asked for.
	KeepDesired bool
}

// to ends in state s.
func to(s State) Ending { return Ending{States: []State{s}} }

// asVM ends as its VM is, one of states (none: any).
func asVM(states ...State) Ending { return Ending{States: states, AsVM: true} }

// asVMKeep ends as its VM is, one of states (none: any), and keeps the
// desired state.
func asVMKeep(states ...State) Ending { return Ending{States: states, AsVM: true, KeepDesired: true} }

// transitions is the one table of operations: which may begin from which
// state, the transient state each records while it runs, and where each
// ends. docs/state.md shows it (TestStateDocMatchesTable checks).
var transitions = map[Op]Transition{
	OpCreate:    {[]State{StateNone}, StateCreating, to(StateRunning), to(StateError)},
	OpStart:     {[]State{StateStopped, StateHibernated, StateCrashed, StateError}, StateStarting, to(StateRunning), to(StateError)},
	OpStop:      {[]State{StateRunning, StatePaused, StateNapping, StateSleeping, StateHibernated, StateError}, StateStopping, to(StateStopped), to(StateError)},
	OpForceStop: {slices.DeleteFunc(slices.Clone(anyState), func(s State) bool { return s == StateDeleting }), StateStopping, to(StateStopped), to(StateError)},
	OpReboot:    {[]State{StateRunning}, StateRebooting, to(StateRunning), to(StateError)},
	OpDelete:    {anyState, StateDeleting, to(StateDeleted), to(StateError)},
	// A pause, nap or sleep whose pause fails leaves the VM running; a
	// sleep that cannot push memory out leaves it napping. An idle tier
	// a restart cut short is as its VM is found.
	OpPause: {[]State{StateRunning}, StatePausing, to(StatePaused), asVM(StateRunning)},
	OpNap:   {[]State{StateRunning}, StatePausing, to(StateNapping), asVM()},
	OpSleep: {[]State{StateRunning, StateNapping}, StatePausing, to(StateSleeping), asVM()},
	// A frozen desktop whose VM does not resume stays as it was; a
	// restore from hibernation that fails is an error.
	OpResume: {[]State{StatePaused, StateNapping, StateSleeping, StateHibernated}, StateResuming, to(StateRunning), asVM(StatePaused, StateNapping, StateSleeping)},
	// A prewake whose restore fails with the RAM still saved stays
	// hibernated; any other failure is an error.
	OpPrewake: {[]State{StateHibernated}, StateResuming, to(StateNapping), asVM()},
	// libvirt stops the VM only once its RAM is saved: a save that fails
	// leaves it running or paused as it was.
	OpHibernate: {[]State{StateRunning, StatePaused, StateNapping, StateSleeping}, StateHibernating, to(StateHibernated), asVM(StateRunning, StatePaused, StateNapping, StateSleeping)},
	// A revert ends running when the snapshot has the RAM or the desktop
	// was not stopped, else stopped; a reimage as the desktop was. A
	// failure is an error; one a restart cut short is as its VM is found
	// (crashed: error), and the caller is told to run it again.
	OpRevert:  {[]State{StateRunning, StatePaused, StateNapping, StateSleeping, StateStopped}, StateReverting, asVM(StateRunning, StateStopped), asVMKeep(StateRunning, StatePaused, StateHibernated, StateStopped)},
	OpReimage: {[]State{StateRunning, StateStopped, StateCrashed, StateError}, StateReimaging, asVM(StateRunning, StateStopped), asVMKeep(StateRunning, StatePaused, StateHibernated, StateStopped)},
	// A running desktop moves live and keeps running; a stopped or
	// hibernated one moves cold and stays so; a frozen one (or one with
	// snapshots, which libvirt will not move live) is hibernated and moved
	// cold (one that ran is woken there). A migration that fails leaves it
	// where it was, as its VM is there. Either way the desired state
	// stays: one that ran and is found hibernated after a restart is still
	// meant to run.
	OpMigrate: {[]State{StateRunning, StatePaused, StateNapping, StateSleeping, StateHibernated, StateStopped}, StateMigrating, asVMKeep(StateRunning, StateHibernated, StateStopped), asVMKeep()},
	// A restore of a backup onto a stopped desktop's data disk leaves it
	// stopped; one that fails too (its disk put back as it was).
	OpRestoreData: {[]State{StateStopped}, StateReverting, to(StateStopped), asVM(StateStopped)},
}

// Transitions returns the table of operations (for documentation and
// clients).
func Transitions() map[Op]Transition { return transitions }

// Target is the state op ends in when it succeeds ("" = it depends: as its
// VM is then).
func Target(op Op) State {
	if e := transitions[op].Success; !e.AsVM && len(e.States) == 1 {
		return e.States[0]
	}
	return ""
}

// Begin checks that op may start from the current state and returns the
// transient state to record. A refused transition is a *TransitionError.
func Begin(op Op, current State) (State, error) {
	t, ok := transitions[op]
	if !ok || !slices.Contains(t.From, current) {
		return "", &TransitionError{Op: op, State: current}
	}
	return t.Through, nil
}

// End is where op ends, by the table: on success (ok) its Success, else
// its Failure. began is the state the desktop was in when op began (""
// when not known: a restart cut op short). vm is the state its VM is in
// as the operation ends, as a desktop state (what reconcile would record
// it as: a paused VM is StatePaused), where the end is AsVM ("" when not
// known); an operation that knows it left its VM as it was says so (a
// pause that failed: StateRunning).
//
// As its VM is: a paused VM is the frozen state the desktop began in (a
// nap stays a nap), or, after nap, sleep and prewake (bureau paused it
// for an idle tier), napping; else paused. The state must be settled and
// one the end lists, else the end is StateError.
//
// desired is what DesiredState becomes ("" = it stays). err reports an end
// the table does not allow (an unknown op, a success its VM does not
// fit): the state is then StateError.
func End(op Op, ok bool, began, vm State) (state, desired State, err error) {
	t, known := transitions[op]
	if !known {
		return StateError, "", fmt.Errorf("operation %q is not in the table", op)
	}
	e := t.Failure
	if ok {
		e = t.Success
	}
	if !e.AsVM {
		state = e.States[0]
	} else {
		state = vm
		switch {
		case vm == StatePaused && began.Frozen():
			state = began
		case vm == StatePaused && (op == OpNap || op == OpSleep || op == OpPrewake):
			state = StateNapping
		}
		if !state.Settled() || state == StateError || state == StateDeleted || len(e.States) > 0 && !slices.Contains(e.States, state) {
			if ok {
				return StateError, "", fmt.Errorf("%s succeeded with its VM %s, which is not where it may end (%s)", op, orUnknown(vm), e)
			}
			return StateError, "", nil
		}
	}
	if state == StateError || e.KeepDesired {
		return state, "", nil
	}
	return state, state, nil
}

func orUnknown(s State) string {
	if s == StateNone {
		return "not known"
	}
	return string(s)
}

// String is the ending as docs/state.md shows it: "running", "as its VM is:
// running, stopped", "as its VM is, desired kept".
func (e Ending) String() string {
	if !e.AsVM {
		return string(e.States[0])
	}
	s := "as its VM is"
	if e.KeepDesired {
		s += ", desired kept"
	}
	if len(e.States) > 0 {
		s += ": " + joinStates(e.States)
	}
	return s
}

// fromString is the states an operation may begin from as docs/state.md shows them:
// "running, stopped", "any but deleted", "new" (create).
func fromString(from []State) string {
	if slices.Equal(from, []State{StateNone}) {
		return "new"
	}
	if len(from) > len(allStates)/2 {
		var missing []State
		for _, s := range allStates {
			if !slices.Contains(from, s) {
				missing = append(missing, s)
			}
		}
		return "any but " + joinStates(missing)
	}
	return joinStates(from)
}

func joinStates(states []State) string {
	s := make([]string, len(states))
	for i, st := range states {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
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
