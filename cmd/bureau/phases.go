package main

import (
	"fmt"
	"github.com/bureau/bureau/internal/api/apiv1"
	"io"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// stepLabels say what the manager's recorded steps do (internal/manager:
// create, start, resume and delete record them; web/static/js/desktop.js
// has the same list).
var stepLabels = map[string]string{
	"image":         "copying the base image to its host",
	"disks":         "making the disks",
	"define":        "defining the VM",
	"start":         "starting the VM",
	"restore":       "restoring its memory",
	"warm-disks":    "copying the warm template's disks",
	"warm-restore":  "restoring the warm template",
	"warm-identity": "giving it its own identity",
	"destroy":       "stopping the VM",
	"undefine":      "removing the VM",
	"files":         "removing its files",
}

// phase is where a desktop's operation is, e.g. "creating — starting the
// VM"; just the state when no step is recorded.
func phase(d *apiv1.Desktop) string {
	s := string(d.State)
	if d.Operation == "" || d.OperationStep == "" {
		return s
	}
	label := stepLabels[d.OperationStep]
	if pct, ok := strings.CutPrefix(d.OperationStep, "image "); ok {
		label = stepLabels["image"] + " (" + pct + ")"
	}
	if label == "" {
		label = d.OperationStep
	}
	return s + " — " + label
}

// phaseWatcher prints a line each time a desktop's phase changes while a
// caller waits for its operation, with the time since the operation began.
type phaseWatcher struct {
	w     io.Writer
	now   func() time.Time
	begun time.Time // the operation's start: the server's when it says
	last  string
}

func newPhaseWatcher(w io.Writer, now func() time.Time) *phaseWatcher {
	return &phaseWatcher{w: w, now: now, begun: now()}
}

func (p *phaseWatcher) show(d *apiv1.Desktop) {
	if d.OperationStartedAt != nil && d.OperationStartedAt.Before(p.begun) {
		p.begun = *d.OperationStartedAt
	}
	ph := phase(d)
	if desktop.State(d.State).Settled() {
		fmt.Fprintf(p.w, "%s after %s\n", ph, shortDuration(p.now().Sub(p.begun)))
		return
	}
	if ph != p.last {
		fmt.Fprintf(p.w, "%s (%s)\n", ph, shortDuration(p.now().Sub(p.begun)))
		p.last = ph
	}
}
