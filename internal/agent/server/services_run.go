package server

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/agent/wire"
)

// Restart pacing: the first restart after a second, doubling to at most
// maxBackoff; a run longer than steadyAfter starts the count again.
var (
	minBackoff  = time.Second
	maxBackoff  = 30 * time.Second
	steadyAfter = 30 * time.Second
	stopGrace   = 10 * time.Second
)

type exitResult struct {
	code  *int
	clean bool // exit status 0
}

// supervise runs sv until stop is closed or its restart policy says no
// more: adopt is a process an earlier agent started.
func (t *svcTable) supervise(sv *svc, stop, done chan struct{}, adopt *runFile) {
	defer close(done)
	backoff := minBackoff
	for {
		var pid int
		var started time.Time
		var wait func() exitResult
		if adopt != nil {
			pid, started, wait = adopt.PID, time.UnixMilli(adopt.StartedAt), waitPID(adopt.PID)
			adopt = nil
		} else {
			env, missing := t.env(sv)
			if missing != "" {
				t.set(sv, wire.SvcWaiting, "waiting for secret "+missing+" (bureau sends it when it connects, or set it: PUT /secrets/"+missing+")")
				select {
				case <-stop:
					t.set(sv, wire.SvcStopped, "stopped on request")
					return
				case <-sv.wake:
					continue
				}
			}
			cmd, err := t.start(sv, env)
			if err != nil {
				t.set(sv, wire.SvcBackoff, fmt.Sprintf("cannot start: %v; trying again in %s", err, backoff))
				if !pause(stop, backoff) {
					t.set(sv, wire.SvcStopped, "stopped on request")
					return
				}
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			pid, started = cmd.Process.Pid, time.Now()
			wait = func() exitResult {
				werr := cmd.Wait()
				code, _ := exitStatus(cmd.ProcessState, werr)
				return exitResult{code: &code, clean: code == 0}
			}
			b, _ := json.Marshal(runFile{PID: pid, BootID: bootID(), Start: procStart(pid), StartedAt: started.UnixMilli()})
			os.WriteFile(t.path(sv.spec.Name, "run.json"), b, 0o600)
		}
		t.mu.Lock()
		sv.st.State, sv.st.Reason, sv.st.PID, sv.st.StartedAt, sv.st.EndedAt, sv.st.ExitCode = wire.SvcRunning, "", pid, started.UnixMilli(), 0, nil
		t.mu.Unlock()
		exitc := make(chan exitResult, 1)
		go func() { exitc <- wait() }()
		var r exitResult
		select {
		case r = <-exitc:
		case <-stop:
			r = terminate(pid, exitc)
			t.ended(sv, r, wire.SvcStopped, "stopped on request")
			return
		}
		// What the service left running would hold its port against the
		// next start.
		signalSession(pid, syscall.SIGKILL)
		if time.Since(started) > steadyAfter {
			backoff = minBackoff
		}
		policy := sv.spec.Restart
		if policy == wire.RestartNo || (policy == wire.RestartOnFailure && r.clean) {
			t.ended(sv, r, wire.SvcExited, "ended; its restart policy is "+policy)
			return
		}
		t.ended(sv, r, wire.SvcBackoff, fmt.Sprintf("ended; starting again in %s", backoff))
		t.mu.Lock()
		sv.st.Restarts++
		t.save(sv)
		t.mu.Unlock()
		if !pause(stop, backoff) {
			t.set(sv, wire.SvcStopped, "stopped on request")
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func pause(stop chan struct{}, d time.Duration) bool {
	select {
	case <-stop:
		return false
	case <-time.After(d):
		return true
	}
}

func (t *svcTable) set(sv *svc, state, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sv.st.State, sv.st.Reason, sv.st.PID = state, reason, 0
}

func (t *svcTable) ended(sv *svc, r exitResult, state, reason string) {
	os.Remove(t.path(sv.spec.Name, "run.json"))
	t.mu.Lock()
	defer t.mu.Unlock()
	sv.st.State, sv.st.Reason, sv.st.PID, sv.st.ExitCode, sv.st.EndedAt = state, reason, 0, r.code, time.Now().UnixMilli()
	if r.code != nil {
		sv.st.Reason = fmt.Sprintf("%s (exit status %d)", reason, *r.code)
	}
}

// terminate stops a service: TERM to its session, then KILL after
// stopGrace to what is left of it (children included: runuser, a shell or
// an app may leave processes behind that still hold the service's port).
func terminate(pid int, exitc chan exitResult) exitResult {
	signalSession(pid, syscall.SIGTERM)
	deadline := time.After(stopGrace)
	var r exitResult
	select {
	case r = <-exitc:
	case <-deadline:
		signalSession(pid, syscall.SIGKILL)
		r = <-exitc
	}
	for end := time.Now().Add(stopGrace); len(sessionMembers(pid)) > 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	signalSession(pid, syscall.SIGKILL)
	return r
}

// signalSession signals every process of session sid (the service's
// process started it) and its process group.
func signalSession(sid int, sig syscall.Signal) {
	syscall.Kill(-sid, sig)
	for _, p := range sessionMembers(sid) {
		syscall.Kill(p, sig)
	}
}

// sessionMembers lists the processes of session sid (field 6 of
// /proc/PID/stat).
func sessionMembers(sid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 3 && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// env is the service's environment with its secrets, or the name of a
// secret the agent does not hold.
func (t *svcTable) env(sv *svc) ([]string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	env := append([]string(nil), sv.spec.Env...)
	for _, n := range sv.spec.Secrets {
		v, ok := t.secrets[n]
		if !ok {
			return nil, n
		}
		env = append(env, n+"="+v)
	}
	if dir, err := t.secretFiles(sv); err != nil {
		t.log.Warn("secret files", "service", sv.spec.Name, "err", err)
	} else if dir != "" {
		env = append(env, "BUREAU_SECRETS_DIR="+dir)
	}
	return env, ""
}

// secretFiles writes the service's secrets as files on the tmpfs runDir,
// readable by its user only, and returns their directory ("" when it
// names none). Files of secrets it no longer names are gone.
func (t *svcTable) secretFiles(sv *svc) (string, error) {
	dir := filepath.Join(t.runDir, sv.spec.Name)
	os.RemoveAll(dir)
	if len(sv.spec.Secrets) == 0 || t.runDir == "" {
		return "", nil
	}
	uid, gid := 0, 0
	if sv.spec.User != "" {
		u, err := user.Lookup(sv.spec.User)
		if err != nil {
			return "", err
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	if err := os.MkdirAll(dir, 0o500); err != nil {
		return "", err
	}
	for _, n := range sv.spec.Secrets {
		f := filepath.Join(dir, n)
		if err := os.WriteFile(f, []byte(t.secrets[n]), 0o400); err != nil {
			return "", err
		}
		os.Chown(f, uid, gid)
	}
	os.Chmod(t.runDir, 0o711)
	return dir, os.Chown(dir, uid, gid)
}

// start runs the service's command in its own session, both streams
// appended to its log (so it outlives the agent, which may restart).
func (t *svcTable) start(sv *svc, env []string) (*exec.Cmd, error) {
	logPath := t.path(sv.spec.Name, "log")
	rotate(logPath, keepBytes)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(sv.spec.Argv[0], sv.spec.Argv[1:]...)
	cmd.Env, cmd.Dir = env, sv.spec.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// waitPID waits for a process an earlier run of the agent started: a
// child still (the agent restarted in place), or else polled.
func waitPID(pid int) func() exitResult {
	return func() exitResult {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err == nil {
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			return exitResult{code: &code, clean: code == 0}
		}
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(time.Second)
		}
		return exitResult{}
	}
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// procStart is a process's start time (field 22 of /proc/PID/stat), which
// tells it apart from a later process given the same pid.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
