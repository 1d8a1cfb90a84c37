package manager

import (
	"context"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// interrupted finishes or undoes the operation d records, which no
// operation of this process runs (a restart cut it short, or it ended
// without recording its result), and reports what it did. vm is the VM's
// state as listed.
func (r *reconciler) interrupted(ctx context.Context, d *desktop.Desktop, vm desktop.VMState) {
	op := d.Operation
	if err := r.ops.lock(d.ID, "recover "+op); err != nil {
		return // an operation began meanwhile: it owns the desktop now
	}
	switch target := desktop.Target(desktop.Op(op)); {
	case strings.HasPrefix(op, "delete"):
		defer r.ops.unlock(d.ID)
		if _, err := r.life.finishDelete(ctx, d, op == "delete+data"); err == nil {
			r.ops.event(ctx, d.ID, "reconciled", "bureau", "finished a delete interrupted by a restart")
		}
	case op == "create":
		r.creates.resumeCreate(ctx, d, vm)
	case op == string(desktop.OpMigrate):
		r.moves.resumeMigrate(ctx, d)
	case target != "":
		r.life.resumePower(ctx, d, vm, target)
	default:
		// revert, reimage, restore_data: half done is not a state to finish from. The
		// desktop is recorded as its VM is (a failure, by the table), and
		// the caller told to retry.
		defer r.ops.unlock(d.ID)
		found, _, _ := desktop.End(desktop.Op(op), false, "", observedAs(vm))
		more := ""
		if op == string(desktop.OpRestoreData) {
			if snaps, err := r.store.ListSnapshots(ctx, d.ID); err == nil {
				more = restoreInterrupted(snaps)
			}
		}
		r.ops.end(ctx, d, desktop.Op(op), false, observedAs(vm),
			fmt.Sprintf("%s was interrupted by a bureau restart before it finished (the desktop is %s as found); run it again%s", op, found, more))
		r.ops.event(ctx, d.ID, op+"_failed", "bureau", "%s", d.LastError)
	}
}

// resumePower drives a desktop whose power operation was cut short to the
// state that operation was asked for: at once when the VM got there anyway,
// else by running the operation again.
func (l *lifecycle) resumePower(ctx context.Context, d *desktop.Desktop, vm desktop.VMState, target desktop.State) {
	op := d.Operation
	if (target == desktop.StateNapping || target == desktop.StateSleeping) && vm != desktop.VMMissing {
		// An idle tier cut short: the desktop is what its VM is (a paused
		// one naps), as the table has it; the idle monitor takes it
		// further down again.
		defer l.ops.unlock(d.ID)
		l.ops.end(ctx, d, desktop.Op(op), false, observedAs(vm), "")
		l.ops.event(ctx, d.ID, "reconciled", "bureau", "the %s interrupted by a restart had finished: the desktop is %s", op, d.State)
		return
	}
	if observedAs(vm) == target {
		defer l.ops.unlock(d.ID)
		l.ops.end(ctx, d, desktop.Op(op), true, "", "")
		l.ops.event(ctx, d.ID, "reconciled", "bureau", "the %s interrupted by a restart had finished: the desktop is %s", op, target)
		return
	}
	if vm == desktop.VMMissing {
		defer l.ops.unlock(d.ID)
		l.ops.fail(ctx, d, op, fmt.Errorf("interrupted by a bureau restart, and the VM is gone from libvirt; files are kept in %s", d.Dir))
		return
	}
	l.ops.event(ctx, d.ID, "reconciled", "bureau", "running again the %s interrupted by a restart (the VM is %s, %s was asked for)", op, vm, target)
	cp := *d
	l.ops.background(d.ID, func(ctx context.Context) {
		switch target {
		case desktop.StateRunning:
			l.start(ctx, &cp)
		case desktop.StateStopped:
			l.stop(ctx, &cp, StopOptions{Force: op == string(desktop.OpForceStop), Timeout: l.stopTimeout})
		case desktop.StateHibernated:
			l.hibernate(ctx, &cp, "bureau")
		case desktop.StatePaused:
			l.pause(ctx, &cp, "bureau")
		}
	})
}
