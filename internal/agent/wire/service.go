package wire

// ServiceSpec is a service bureau-agent supervises: started at once, again
// at every boot, and after it ends as Restart says.
type ServiceSpec struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	// Env is the whole environment but for secrets, which the agent adds
	// (by the names in Secrets) from the values bureau sent.
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// Restart is "no", "on-failure" or "always".
	Restart string `json:"restart"`
	// Port is where the service listens (0: none said).
	Port int `json:"port,omitempty"`
	// User runs the service (informational: Argv already switches).
	User string `json:"user,omitempty"`
	// Command is the user's command, as given.
	Command []string `json:"command,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
}

// Service states.
const (
	SvcRunning  = "running"  // the process runs
	SvcBackoff  = "backoff"  // it ended and starts again shortly
	SvcWaiting  = "waiting"  // it needs a secret the agent does not hold yet
	SvcExited   = "exited"   // it ended and its restart policy says no more
	SvcStopped  = "stopped"  // stopped on request
	SvcStarting = "starting" // being started
)

// Restart policies.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// ServiceStatus is a service and how it is doing.
type ServiceStatus struct {
	ServiceSpec
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Restarts  int    `json:"restarts"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	StartedAt int64  `json:"started_at,omitempty"` // Unix ms, of the running process
	EndedAt   int64  `json:"ended_at,omitempty"`
	LogBytes  int64  `json:"log_bytes"`
}
