package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// svcName is what a service may be called (a directory name, too).
var svcName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// svcTable supervises the desktop's services. Each lives in dir/<name>/:
// spec.json (the spec, whether it should run, its restarts), run.json
// (the process running now: pid, boot, start time — so an agent that
// restarts adopts it rather than starting a second one), log and log.1.
// Secret values are held in memory only: bureau sends them whenever it
// connects, and a service that names one the agent lacks waits for it.
type svcTable struct {
	dir     string
	runDir  string // tmpfs: secrets as files
	log     *slog.Logger
	mu      sync.Mutex
	all     map[string]*svc
	secrets map[string]string
}

type svc struct {
	spec    wire.ServiceSpec
	enabled bool
	st      wire.ServiceStatus // State, Reason, PID, Restarts, ExitCode, times
	stop    chan struct{}      // closed to end the supervisor
	done    chan struct{}      // closed when it has ended
	wake    chan struct{}      // secrets arrived
}

// svcFile is spec.json.
type svcFile struct {
	Spec     wire.ServiceSpec `json:"spec"`
	Enabled  bool             `json:"enabled"`
	Restarts int              `json:"restarts"`
}

// runFile is run.json.
type runFile struct {
	PID       int    `json:"pid"`
	BootID    string `json:"boot_id"`
	Start     string `json:"start"` // the process's start time in clock ticks since boot
	StartedAt int64  `json:"started_at"`
}

func openServices(dir, runDir string, log *slog.Logger) (*svcTable, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("services directory: %w", err)
	}
	t := &svcTable{dir: dir, runDir: runDir, log: log, all: map[string]*svc{}, secrets: map[string]string{}}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "spec.json"))
		if err != nil {
			continue
		}
		var f svcFile
		if json.Unmarshal(b, &f) != nil || f.Spec.Name != e.Name() {
			continue
		}
		sv := &svc{spec: f.Spec, enabled: f.Enabled, wake: make(chan struct{}, 1)}
		sv.st.Restarts = f.Restarts
		sv.st.State = wire.SvcStopped
		t.all[sv.spec.Name] = sv
		if f.Enabled {
			t.launch(sv, t.adoptable(sv.spec.Name))
		}
	}
	go t.rotateLoop()
	return t, nil
}

func (t *svcTable) path(name, file string) string { return filepath.Join(t.dir, name, file) }

// save writes spec.json; t.mu is held.
func (t *svcTable) save(sv *svc) error {
	b, _ := json.Marshal(svcFile{Spec: sv.spec, Enabled: sv.enabled, Restarts: sv.st.Restarts})
	f := t.path(sv.spec.Name, "spec.json")
	if err := os.WriteFile(f+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(f+".tmp", f)
}

// adoptable returns the process an earlier run of the agent started for a
// service, if it still runs (same boot, same process).
func (t *svcTable) adoptable(name string) *runFile {
	b, err := os.ReadFile(t.path(name, "run.json"))
	if err != nil {
		return nil
	}
	var r runFile
	if json.Unmarshal(b, &r) != nil || r.PID <= 0 || r.BootID != bootID() || procStart(r.PID) != r.Start {
		return nil
	}
	return &r
}

// launch starts sv's supervisor; t.mu is held or sv is not yet shared.
func (t *svcTable) launch(sv *svc, adopt *runFile) {
	sv.stop, sv.done = make(chan struct{}), make(chan struct{})
	sv.st.State, sv.st.Reason = wire.SvcStarting, ""
	go t.supervise(sv, sv.stop, sv.done, adopt)
}

// halt ends sv's supervisor (stopping its process) and waits; t.mu must
// not be held.
func halt(stop, done chan struct{}) {
	if stop == nil {
		return
	}
	select {
	case <-stop:
	default:
		close(stop)
	}
	<-done
}

// put creates or replaces a service and starts it.
func (t *svcTable) put(spec wire.ServiceSpec, values map[string]string) (wire.ServiceStatus, error) {
	if !svcName.MatchString(spec.Name) {
		return wire.ServiceStatus{}, fmt.Errorf("service name %q: lower-case letters, digits and '-', at most 32", spec.Name)
	}
	if len(spec.Argv) == 0 {
		return wire.ServiceStatus{}, fmt.Errorf("service %s: empty command", spec.Name)
	}
	switch spec.Restart {
	case wire.RestartNo, wire.RestartOnFailure, wire.RestartAlways:
	default:
		return wire.ServiceStatus{}, fmt.Errorf("restart %q: want no, on-failure or always", spec.Restart)
	}
	t.mu.Lock()
	for k, v := range values {
		t.secrets[k] = v
	}
	old := t.all[spec.Name]
	t.mu.Unlock()
	if old != nil {
		halt(old.stop, old.done)
	}
	if err := os.MkdirAll(filepath.Join(t.dir, spec.Name), 0o700); err != nil {
		return wire.ServiceStatus{}, err
	}
	sv := &svc{spec: spec, enabled: true, wake: make(chan struct{}, 1)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.save(sv); err != nil {
		return wire.ServiceStatus{}, err
	}
	t.all[spec.Name] = sv
	t.launch(sv, nil)
	return t.status(sv), nil
}

// control starts, stops, restarts or deletes a service.
func (t *svcTable) control(name, action string) (wire.ServiceStatus, error) {
	t.mu.Lock()
	sv := t.all[name]
	t.mu.Unlock()
	if sv == nil {
		return wire.ServiceStatus{}, os.ErrNotExist
	}
	switch action {
	case "start", "stop", "restart", "delete":
	default:
		return wire.ServiceStatus{}, fmt.Errorf("action %q: want start, stop, restart or delete", action)
	}
	t.mu.Lock()
	stop, done := sv.stop, sv.done
	running := stop != nil && !closed(done)
	t.mu.Unlock()
	if action != "start" || !running {
		halt(stop, done)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch action {
	case "delete":
		delete(t.all, name)
		os.RemoveAll(filepath.Join(t.dir, name))
		os.RemoveAll(filepath.Join(t.runDir, name))
		sv.st.State = "deleted"
		return t.status(sv), nil
	case "stop":
		sv.enabled = false
		sv.st.State, sv.st.Reason = wire.SvcStopped, "stopped on request"
	default:
		sv.enabled = true
		if action == "restart" || !running {
			t.launch(sv, nil)
		}
	}
	if err := t.save(sv); err != nil {
		return wire.ServiceStatus{}, err
	}
	return t.status(sv), nil
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// setSecrets replaces the values the agent holds and wakes services that
// were waiting for one.
func (t *svcTable) setSecrets(values map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.secrets = map[string]string{}
	for k, v := range values {
		t.secrets[k] = v
	}
	for _, sv := range t.all {
		select {
		case sv.wake <- struct{}{}:
		default:
		}
	}
}

// status is sv as bureau sees it; t.mu is held.
func (t *svcTable) status(sv *svc) wire.ServiceStatus {
	st := sv.st
	st.ServiceSpec = sv.spec
	if fi, err := os.Stat(t.path(sv.spec.Name, "log")); err == nil {
		st.LogBytes = fi.Size()
	}
	return st
}

func (t *svcTable) list() []wire.ServiceStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]wire.ServiceStatus, 0, len(t.all))
	for _, sv := range t.all {
		out = append(out, t.status(sv))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (t *svcTable) get(name string) (*svc, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sv, ok := t.all[name]
	return sv, ok
}

// Log sizes: a log over rotateAt is moved to log.1 (its last keepBytes)
// and started afresh.
const (
	rotateAt  = 16 << 20
	keepBytes = 8 << 20
)

func (t *svcTable) rotateLoop() {
	for range time.Tick(30 * time.Second) {
		t.mu.Lock()
		names := make([]string, 0, len(t.all))
		for n := range t.all {
			names = append(names, n)
		}
		t.mu.Unlock()
		for _, n := range names {
			rotate(t.path(n, "log"), rotateAt)
		}
	}
}

// rotate keeps the last keepBytes of a log over limit in log.1 and empties
// the log (the service writes with O_APPEND, so it goes on at the start).
func rotate(path string, limit int64) {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= limit {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, keepBytes)
	n, _ := f.ReadAt(buf, max(0, fi.Size()-keepBytes))
	if os.WriteFile(path+".1", buf[:n], 0o600) == nil {
		os.Truncate(path, 0)
	}
}
