package guest

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// ServiceRequest creates (or replaces) a service: a command bureau-agent
// keeps running in the desktop, started again at every boot and, as
// Restart says, when it ends.
type ServiceRequest struct {
	Name string   `json:"name"`
	Cmd  string   `json:"cmd,omitempty"`
	Argv []string `json:"argv,omitempty"`
	// Cwd is relative to the user's home, or absolute.
	Cwd string            `json:"cwd,omitempty"`
	Env map[string]string `json:"env,omitempty"`
	// Secrets are set as environment variables (and as files in
	// $BUREAU_SECRETS_DIR) from bureau's secrets of these names.
	Secrets []string `json:"secrets,omitempty"`
	// Port is where it listens, for its URL (0: none).
	Port int `json:"port,omitempty"`
	// Restart is "on-failure" (the default), "always" or "no".
	Restart string `json:"restart,omitempty"`
	User    string `json:"user,omitempty"`
}

// ServiceInfo is a service and how it is doing.
type ServiceInfo struct {
	Name    string            `json:"name"`
	Command []string          `json:"command"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Secrets []string          `json:"secrets,omitempty"`
	Port    int               `json:"port,omitempty"`
	Restart string            `json:"restart"`
	User    string            `json:"user"`
	// State is running, starting, backoff (ended, starting again soon),
	// waiting (for a secret), exited or stopped.
	State     string     `json:"state"`
	Reason    string     `json:"reason,omitempty"`
	PID       int        `json:"pid,omitempty"`
	Restarts  int        `json:"restarts"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	UptimeS   int64      `json:"uptime_s,omitempty"`
	LogBytes  int64      `json:"log_bytes"`
}

var (
	serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	// SecretName is what a secret may be called (an environment variable).
	SecretName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)
)

// ValidServiceName says whether name may name a service.
func ValidServiceName(name string) bool { return serviceName.MatchString(name) }

// Validate checks a request without running it.
func (r *ServiceRequest) Validate() error {
	if !serviceName.MatchString(r.Name) {
		return invalid("name", "1-32 lower-case letters, digits and '-', starting with a letter or digit")
	}
	switch r.Restart {
	case "":
		r.Restart = wire.RestartOnFailure
	case wire.RestartNo, wire.RestartOnFailure, wire.RestartAlways:
	default:
		return invalid("restart", "one of on-failure (the default), always, no")
	}
	if r.Port < 0 || r.Port > 65535 {
		return invalid("port", "must be 1..65535 (or 0: none)")
	}
	if err := validSecretNames(r.Secrets, r.Env); err != nil {
		return err
	}
	e := ExecRequest{Cmd: r.Cmd, Argv: r.Argv, Env: r.Env, Cwd: r.Cwd, User: r.User}
	return e.Validate()
}

// PutService creates or replaces a service and starts it; values are the
// secrets it names.
func (s *Background) PutService(ctx context.Context, domain string, r ServiceRequest, values map[string]string) (*ServiceInfo, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if s.x.sup == nil {
		return nil, needAgent("a service", client.ErrNoAgent)
	}
	argv := r.Argv
	if r.Cmd != "" {
		argv = []string{"/bin/bash", "-c", r.Cmd}
	}
	user := r.User
	if user == "" {
		user = s.x.User
	}
	spec := client.ServiceSpec{Name: r.Name, Argv: s.x.wrap(user, argv), Env: s.x.env(r.Cwd, r.Env), Secrets: r.Secrets,
		Restart: r.Restart, Port: r.Port, User: user, Command: argv, Cwd: r.Cwd}
	st, err := s.x.sup.PutService(ctx, domain, spec, values)
	if err != nil {
		return nil, needAgent("a service", err)
	}
	return serviceInfo(st, r.Env), nil
}

// serviceInfo shows a service; env is the caller's own variables (the
// agent's copy also holds bureau's base environment).
func serviceInfo(st client.ServiceStatus, env map[string]string) *ServiceInfo {
	if env == nil {
		env = userEnv(st.Env)
	}
	out := &ServiceInfo{Name: st.Name, Command: st.Command, Cwd: st.Cwd, Env: env, Secrets: st.Secrets, Port: st.Port,
		Restart: st.Restart, User: st.User, State: st.State, Reason: st.Reason, PID: st.PID, Restarts: st.Restarts,
		ExitCode: st.ExitCode, LogBytes: st.LogBytes}
	if st.StartedAt != 0 {
		t := time.UnixMilli(st.StartedAt).UTC()
		out.StartedAt = &t
		if st.State == wire.SvcRunning {
			out.UptimeS = int64(time.Since(t).Seconds())
		}
	}
	if st.EndedAt != 0 {
		t := time.UnixMilli(st.EndedAt).UTC()
		out.EndedAt = &t
	}
	return out
}

// userEnv drops bureau's base environment from a service's.
func userEnv(env []string) map[string]string {
	base := map[string]bool{"PATH": true, "LANG": true, "DISPLAY": true, "XAUTHORITY": true, "TERM": true, "BUREAU_CWD": true}
	out := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !base[k] {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Services lists the desktop's services by name.
func (s *Background) Services(ctx context.Context, domain string) ([]*ServiceInfo, error) {
	if s.x.sup == nil {
		return nil, needAgent("listing services", client.ErrNoAgent)
	}
	list, err := s.x.sup.Services(ctx, domain)
	if err != nil {
		return nil, needAgent("listing services", err)
	}
	out := make([]*ServiceInfo, 0, len(list))
	for _, st := range list {
		out = append(out, serviceInfo(st, nil))
	}
	return out, nil
}

// ServiceByName returns one service.
func (s *Background) ServiceByName(ctx context.Context, domain, name string) (*ServiceInfo, error) {
	if !serviceName.MatchString(name) {
		return nil, fmt.Errorf("service %q: %w", name, desktop.ErrNotFound)
	}
	list, err := s.Services(ctx, domain)
	if err != nil {
		return nil, err
	}
	for _, sv := range list {
		if sv.Name == name {
			return sv, nil
		}
	}
	return nil, fmt.Errorf("service %s: %w", name, desktop.ErrNotFound)
}

// ControlService starts, stops, restarts or deletes a service.
func (s *Background) ControlService(ctx context.Context, domain, name, action string) (*ServiceInfo, error) {
	if !serviceName.MatchString(name) {
		return nil, fmt.Errorf("service %q: %w", name, desktop.ErrNotFound)
	}
	if s.x.sup == nil {
		return nil, needAgent("a service", client.ErrNoAgent)
	}
	st, err := s.x.sup.ControlService(ctx, domain, name, action)
	if err != nil {
		return nil, needAgent("a service", err)
	}
	return serviceInfo(st, nil), nil
}

// ServiceLog copies a service's log to w: the last tail bytes (0: all of
// it), then with follow what it writes, across restarts, until ctx ends.
func (s *Background) ServiceLog(ctx context.Context, domain, name string, tail int64, follow bool, w io.Writer) error {
	if tail < 0 || tail > MaxLogTail {
		return invalid("tail", fmt.Sprintf("must be 0..%d bytes", MaxLogTail))
	}
	if !serviceName.MatchString(name) {
		return fmt.Errorf("service %q: %w", name, desktop.ErrNotFound)
	}
	if s.x.sup == nil {
		return needAgent("reading a service log", client.ErrNoAgent)
	}
	return needAgent("reading a service log", s.x.sup.ServiceLog(ctx, domain, name, -tail, follow, w))
}

// SyncSecrets hands the desktop's agent the values of every secret its
// services name (resolve looks them up; one it cannot find is left out,
// and its service waits for it). It returns the names it sent.
func (s *Background) SyncSecrets(ctx context.Context, domain string, resolve func(names []string) map[string]string) ([]string, error) {
	if s.x.sup == nil {
		return nil, client.ErrNoAgent
	}
	list, err := s.x.sup.Services(ctx, domain)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, sv := range list {
		for _, n := range sv.Secrets {
			want[n] = true
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	values := map[string]string{}
	if len(names) > 0 {
		values = resolve(names)
	}
	if len(names) == 0 && len(list) == 0 {
		return nil, nil
	}
	if _, err := s.x.sup.SetSecrets(ctx, domain, values); err != nil {
		return nil, err
	}
	sent := make([]string, 0, len(values))
	for n := range values {
		sent = append(sent, n)
	}
	sort.Strings(sent)
	return sent, nil
}
