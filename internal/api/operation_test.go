package api

import (
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// While an operation runs, a desktop says which, at what step and since
// when (clients show it and time it); settled, it says none of that.
func TestDesktopShowsItsOperationInFlight(t *testing.T) {
	e := newEnv(t)
	e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"busy"}`)
	started := time.Date(2026, 11, 24, 17, 30, 0, 0, time.UTC)
	e.desktops.mu.Lock()
	d := e.desktops.desktops["d1"]
	d.Operation, d.Step, d.OperationStartedAt = "create", "define", &started
	e.desktops.mu.Unlock()
	code, body := e.do(t, e.alice, "GET", "/api/v1/desktops/d1", "")
	if code != 200 || body["operation"] != "create" || body["operation_step"] != "define" ||
		body["operation_started_at"] != "2026-11-24T17:30:00Z" {
		t.Errorf("in flight: %d %v", code, body)
	}
	_, list := e.do(t, e.alice, "GET", "/api/v1/desktops", "")
	if ds := list["desktops"].([]any); len(ds) != 1 || ds[0].(map[string]any)["operation_step"] != "define" {
		t.Errorf("list: %v", list)
	}

	e.desktops.mu.Lock()
	d.State, d.Operation, d.Step, d.OperationStartedAt = desktop.StateRunning, "", "", nil
	e.desktops.mu.Unlock()
	_, body = e.do(t, e.alice, "GET", "/api/v1/desktops/d1", "")
	for _, k := range []string{"operation", "operation_step", "operation_started_at"} {
		if _, ok := body[k]; ok {
			t.Errorf("settled desktop has %s: %v", k, body)
		}
	}
}
