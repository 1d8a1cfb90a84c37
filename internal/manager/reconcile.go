package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// Run reconciles the store with the hypervisor, then follows lifecycle
// events until Close. Running VMs are never stopped by a bureau restart.
func (m *Manager) Run() error {
	m.ensureReserve()
	m.abandonTemplateBuilds(m.ctx)
	if err := m.loadNetwork(m.ctx); err != nil {
		return fmt.Errorf("desktop network: %w", err)
	}
	if err := m.Reconcile(m.ctx); err != nil {
		return err
	}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		m.watchIdle(m.cfg.IdleCheck)
	}()
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-m.ctx.Done():
				return
			case ev := <-m.hv.Events():
				m.onEvent(m.ctx, ev)
			}
		}
	}()
	return nil
}

// Reconcile compares every live desktop with its VM and finishes or undoes
// operations a previous bureau process left half done. It never guesses
// that a desktop is gone: a VM missing without a recorded intent is an
// error with a reason, and the desktop's files stay.
func (m *Manager) Reconcile(ctx context.Context) error {
	desktops, err := m.store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	vms, err := m.hv.List(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	for _, d := range desktops {
		if m.isBusy(d.ID) {
			continue
		}
		vm, ok := vms[d.DomainName()]
		if !ok {
			vm = desktop.VMMissing
		}
		// A reimage cut short leaves its unfinished OS disk; the desktop
		// still has its old one.
		if err := os.Remove(filepath.Join(d.Dir, "os.qcow2.new")); err == nil {
			m.event(ctx, d.ID, "reconciled", "bureau", "removed the unfinished OS disk of an interrupted reimage")
		}
		m.reconcileOne(ctx, d, vm)
	}
	return nil
}

func (m *Manager) reconcileOne(ctx context.Context, d *desktop.Desktop, vm desktop.VMState) {
	set := func(state desktop.State, lastErr, why string) {
		if d.State == state && d.Operation == "" && d.LastError == lastErr {
			return
		}
		d.State, d.Operation, d.LastError = state, "", lastErr
		if state != desktop.StateError {
			d.DesiredState = state
		}
		m.save(ctx, d)
		m.event(ctx, d.ID, "reconciled", "bureau", "%s", why)
	}
	switch op := d.Operation; {
	case strings.HasPrefix(op, "delete"):
		if err := m.lock(d.ID, "delete"); err == nil {
			defer m.unlock(d.ID)
			if _, err := m.finishDelete(ctx, d, op == "delete+data"); err == nil {
				m.event(ctx, d.ID, "reconciled", "bureau", "finished a delete interrupted by a restart")
			}
		}
		return
	case op == "create" && vm == desktop.VMMissing:
		// The VM never got defined: the files made so far stay (the data disk
		// may be reused), the desktop says what happened.
		set(desktop.StateError, "create was interrupted by a bureau restart before the VM was defined", "create interrupted before the VM existed")
		return
	case op == "create" && vm == desktop.VMShutoff:
		// Everything was made: finish the create by starting the VM.
		if err := m.hv.Start(ctx, d.DomainName()); err != nil {
			set(desktop.StateError, "create was interrupted by a bureau restart before the VM started, and starting it failed: "+err.Error(), "create interrupted before the VM started")
			return
		}
		set(desktop.StateRunning, "", "finished a create interrupted by a restart: VM started")
		return
	}
	switch vm {
	case desktop.VMRunning, desktop.VMShutdown:
		set(desktop.StateRunning, "", "VM found running")
	case desktop.VMPaused:
		set(desktop.StatePaused, "", "VM found paused")
	case desktop.VMSaved:
		set(desktop.StateHibernated, "", "VM found hibernated")
	case desktop.VMShutoff:
		set(desktop.StateStopped, "", "VM found shut off")
	case desktop.VMCrashed:
		set(desktop.StateCrashed, "the VM crashed while bureau was not running", "VM found crashed")
	case desktop.VMMissing:
		set(desktop.StateError, "its VM disappeared from libvirt without bureau deleting it; files are kept in "+d.Dir, "VM missing without a recorded intent")
	}
}

// IOErrorPause is a desktop's last error while QEMU holds it paused after
// a failed disk write. Nothing is lost: the write is retried on resume.
const IOErrorPause = "paused by a disk write error: the host's disk is probably full. Nothing is lost; free space on the host, then resume the desktop"

// onEvent applies a lifecycle change no bureau operation is waiting for,
// such as the guest powering itself off or QEMU crashing.
func (m *Manager) onEvent(ctx context.Context, ev desktop.VMEvent) {
	id, ok := strings.CutPrefix(ev.Domain, "bureau-")
	if !ok {
		return
	}
	if m.isBusy(id) {
		if ev.IOError {
			// No operation expects this pause: apply it when the one
			// running now ends, if the VM is still paused then.
			m.mu.Lock()
			m.ioPaused[id] = ev
			m.mu.Unlock()
		}
		return
	}
	d, err := m.store.GetDesktop(ctx, id)
	if errors.Is(err, desktop.ErrNotFound) || err == nil && d.DeletedAt != nil {
		return
	}
	if err != nil {
		m.log.Error("event for unknown desktop", "domain", ev.Domain, "err", err)
		return
	}
	var want desktop.State
	var lastErr string
	switch ev.State {
	case desktop.VMRunning:
		want = desktop.StateRunning
	case desktop.VMShutoff:
		want = desktop.StateStopped
	case desktop.VMPaused:
		want = desktop.StatePaused
		if ev.IOError {
			lastErr = IOErrorPause
		}
	case desktop.VMSaved:
		want = desktop.StateHibernated
	case desktop.VMCrashed:
		want, lastErr = desktop.StateCrashed, "its QEMU process died ("+ev.Reason+")"
	default:
		return
	}
	if d.State == want && (!ev.IOError || d.LastError == lastErr) {
		return
	}
	d.State, d.LastError = want, lastErr
	if want != desktop.StateCrashed {
		d.DesiredState = want
	}
	m.save(ctx, d)
	m.event(ctx, d.ID, "vm_"+string(ev.State), "libvirt", "VM is now %s (%s)", ev.State, ev.Reason)
	if want == desktop.StateCrashed && d.RestartOnCrash {
		if _, err := m.Start(ctx, d.ID, "bureau (restart on crash)"); err != nil {
			m.log.Warn("restart after crash", "desktop", d.ID, "err", err)
		}
	}
}
