package main

import (
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// Waiting for a create prints each phase once, timed from the operation's
// start as the server recorded it, and how long it took to settle.
func TestPhaseWatcher(t *testing.T) {
	var out strings.Builder
	now := time.Unix(1000, 0)
	w := newPhaseWatcher(&out, func() time.Time { return now })
	started := now.Add(-2 * time.Second) // the create began before the wait
	d := &apiv1.Desktop{State: string(desktop.StateCreating), Operation: "create", OperationStartedAt: &started}
	for _, step := range []string{"", "disks", "disks", "define", "start", "start", "something-new"} {
		d.OperationStep = step
		w.show(d)
		now = now.Add(time.Second)
	}
	d.State, d.Operation, d.OperationStep, d.OperationStartedAt = string(desktop.StateRunning), "", "", nil
	w.show(d)
	want := `creating (2s)
creating — making the disks (3s)
creating — defining the VM (5s)
creating — starting the VM (6s)
creating — something-new (8s)
running after 9s
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestPhaseOfABaseImageCopy(t *testing.T) {
	d := &apiv1.Desktop{State: string(desktop.StateCreating), Operation: "create", OperationStep: "image 42%"}
	if got := phase(d); got != "creating — copying the base image to its host (42%)" {
		t.Errorf("phase %q", got)
	}
}
