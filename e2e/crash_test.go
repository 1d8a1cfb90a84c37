//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// TestCrashSafety kills bureau (as kill -9 would: failpoints exit at once)
// at each step of create, delete, hibernate and snapshot, restarts it, and
// checks that the database, libvirt and the files agree and no data disk
// is lost. The VMs only need to start, not to finish booting.
func TestCrashSafety(t *testing.T) {
	s := newServer(t)
	spec := map[string]any{"vcpus": 1, "memory_mib": 1024, "data_disk_gib": 2}
	create := func(name string) apiv1.Desktop {
		body := map[string]any{"name": name}
		for k, v := range spec {
			body[k] = v
		}
		var d apiv1.Desktop
		if code := s.call(adminToken, "POST", "/api/v1/desktops", body, &d); code != http.StatusAccepted {
			t.Fatalf("create %s: %d", name, code)
		}
		return d
	}
	crashAt := s.crashAt
	cleanup := func(d apiv1.Desktop) {
		s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"?delete_data=true", nil, nil)
	}

	for _, tc := range []struct {
		fp   string
		want desktop.State
	}{
		{"create:after-data-disk", desktop.StateError},
		{"create:after-os-disk", desktop.StateError},
		{"create:after-define", desktop.StateRunning}, // finished on restart
		{"create:after-start", desktop.StateRunning},
	} {
		var d apiv1.Desktop
		crashAt(tc.fp, func() { d = create("crash-" + strings.ReplaceAll(strings.TrimPrefix(tc.fp, "create:"), ":", "-")) })
		got := s.waitSettled(d.ID)
		if got.State != string(tc.want) {
			t.Errorf("%s: desktop is %s (%s), want %s", tc.fp, got.State, got.LastError, tc.want)
		}
		s.checkConsistent(got)
		cleanup(d)
		s.checkGone(got, false)
	}

	// Operations on an existing desktop.
	d := create("crash-ops")
	s.waitState(adminToken, d.ID, desktop.StateRunning, 3*time.Minute)
	crashAt("snapshot:after-create", func() {
		s.send("POST", "/api/v1/desktops/"+d.ID+"/snapshots", `{"name":"half"}`)
	})
	var list struct{ Snapshots []apiv1.Snapshot }
	s.call(adminToken, "GET", "/api/v1/desktops/"+d.ID+"/snapshots", nil, &list)
	if len(list.Snapshots) != 1 || list.Snapshots[0].Name != "half" {
		t.Errorf("snapshot interrupted after it was taken: listed %+v", list.Snapshots)
	}
	if code := s.call(adminToken, "DELETE", "/api/v1/desktops/"+d.ID+"/snapshots/half", nil, nil); code != http.StatusNoContent {
		t.Errorf("delete the interrupted snapshot: %d", code)
	}

	crashAt("hibernate:after-save", func() { s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/hibernate", nil, nil) })
	got := s.waitSettled(d.ID)
	if got.State != string(desktop.StateHibernated) {
		t.Errorf("hibernate interrupted after the save: %s (%s)", got.State, got.LastError)
	}
	s.checkConsistent(got)
	s.call(adminToken, "POST", "/api/v1/desktops/"+d.ID+"/resume", nil, nil)
	s.checkConsistent(s.waitSettled(d.ID))

	for _, fp := range []string{"delete:after-destroy", "delete:after-undefine"} {
		victim := d
		if fp == "delete:after-undefine" {
			victim = create("crash-delete")
			s.waitState(adminToken, victim.ID, desktop.StateRunning, 3*time.Minute)
		}
		crashAt(fp, func() { s.send("DELETE", "/api/v1/desktops/"+victim.ID, "") })
		// The restart finishes the delete and keeps the data disk.
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) && s.vmState(&victim) != desktop.VMMissing {
			time.Sleep(time.Second)
		}
		s.expectError(adminToken, "GET", "/api/v1/desktops/"+victim.ID, nil, 404, "not_found")
		s.checkGone(&victim, true)
		os.Remove(victim.DataDiskPath)
	}
}

// send makes an admin request the server may die in the middle of: the
// answer, if any, does not matter.
func (s *server) send(method, path, body string) {
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// waitSettled waits until no operation moves the desktop.
// crashAt restarts the server with a failpoint, runs op, waits for the
// server to die at it (as kill -9 would) and starts a normal server again.
func (s *server) crashAt(fp string, op func()) {
	s.t.Helper()
	s.stop()
	s.env = []string{"BUREAU_FAILPOINTS=" + fp}
	s.start()
	op()
	select {
	case <-s.exited:
	case <-time.After(2 * time.Minute):
		s.t.Fatalf("bureau did not die at %s", fp)
	}
	s.cmd, s.env = nil, nil
	s.start()
}

func (s *server) waitSettled(id string) *apiv1.Desktop {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var d apiv1.Desktop
	for time.Now().Before(deadline) {
		s.call(adminToken, "GET", "/api/v1/desktops/"+id, nil, &d)
		if desktop.State(d.State).Settled() {
			return &d
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("desktop %s still %s", id, d.State)
	return nil
}

// checkConsistent: what the database says is what libvirt and the files say.
func (s *server) checkConsistent(d *apiv1.Desktop) {
	s.t.Helper()
	vm := s.vmState(d)
	want := map[desktop.State][]desktop.VMState{
		desktop.StateRunning:    {desktop.VMRunning},
		desktop.StatePaused:     {desktop.VMPaused},
		desktop.StateHibernated: {desktop.VMSaved},
		desktop.StateStopped:    {desktop.VMShutoff},
		desktop.StateError:      {desktop.VMMissing, desktop.VMShutoff},
	}[desktop.State(d.State)]
	ok := false
	for _, w := range want {
		ok = ok || vm == w
	}
	if !ok {
		s.t.Errorf("desktop %s is %s but its VM is %s", d.Name, d.State, vm)
	}
	if !exists(d.DataDiskPath) {
		s.t.Errorf("desktop %s lost its data disk %s", d.Name, d.DataDiskPath)
	}
	if d.State != string(desktop.StateError) && !exists(filepath.Join(filepath.Dir(d.DataDiskPath), "os.qcow2")) {
		s.t.Errorf("desktop %s is %s without an OS disk", d.Name, d.State)
	}
}

// checkGone: a deleted desktop left no VM and no files but, when kept, its
// data disk.
func (s *server) checkGone(d *apiv1.Desktop, dataKept bool) {
	s.t.Helper()
	if st := s.vmState(d); st != desktop.VMMissing {
		s.t.Errorf("desktop %s deleted, VM %s", d.Name, st)
	}
	dir := filepath.Dir(d.DataDiskPath)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "data.qcow2" || !dataKept {
			s.t.Errorf("desktop %s deleted, %s left", d.Name, filepath.Join(dir, e.Name()))
		}
	}
	if dataKept && !exists(d.DataDiskPath) {
		s.t.Errorf("desktop %s: data disk not kept", d.Name)
	}
}
