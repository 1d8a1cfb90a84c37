package guest

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/agent/client"
)

// LaunchRequest starts an app in the desktop's session, as its user, and
// waits for its window. Give one of DesktopFile (an application's
// .desktop file by name: "mousepad", "org.xfce.mousepad" or the Name=
// the menu shows), Command (a shell command line) or Argv.
type LaunchRequest struct {
	DesktopFile string   `json:"desktop_file,omitempty"`
	Command     string   `json:"command,omitempty"`
	Argv        []string `json:"argv,omitempty"`
	// WaitS is how long to wait for a new window (nil: DefaultAppWait;
	// 0: do not wait).
	WaitS *int `json:"wait_s,omitempty"`
}

// LaunchResult is the app's process and the window it opened: nil when
// none did in time (TimedOut), or when the process failed first (its
// exit code says so).
type LaunchResult struct {
	Process  *Process `json:"process"`
	Window   *Window  `json:"window"`
	TimedOut bool     `json:"timed_out"`
}

// Bounds of the wait for an app's window.
const (
	DefaultAppWait = 20 * time.Second
	MaxAppWait     = 120 * time.Second
	appPoll        = 250 * time.Millisecond
	// appTitleWait: a new window without a title yet gets this long to
	// get one.
	appTitleWait = time.Second
)

// appDirs are where .desktop files are looked for, the user's first.
var appDirs = []string{"~/.local/share/applications", "/usr/local/share/applications", "/usr/share/applications"}

// Validate checks a request without running it.
func (r *LaunchRequest) Validate() error {
	given := 0
	for _, set := range []bool{r.DesktopFile != "", r.Command != "", len(r.Argv) > 0} {
		if set {
			given++
		}
	}
	switch {
	case given != 1:
		return invalid("desktop_file", "give one of desktop_file, command (a shell command line) or argv")
	case strings.ContainsAny(r.DesktopFile, "/\x00\n") || len(r.DesktopFile) > 255:
		return invalid("desktop_file", "a .desktop file's name (\"mousepad\", \"org.xfce.mousepad\"), not a path")
	case strings.ContainsRune(r.Command, 0):
		return invalid("command", "contains a NUL byte")
	case len(r.Argv) > 0 && r.Argv[0] == "":
		return invalid("argv", "argv[0] is empty")
	case r.WaitS != nil && (*r.WaitS < 0 || time.Duration(*r.WaitS)*time.Second > MaxAppWait):
		return invalid("wait_s", fmt.Sprintf("must be 0..%d seconds", int(MaxAppWait.Seconds())))
	}
	return nil
}

// LaunchApp starts an app in the background (a process like exec's with
// "background": true, in the session: its display, its D-Bus) and waits
// for a window that was not open before, preferring one of the app's
// process or its children.
func (s *Session) LaunchApp(ctx context.Context, domain string, r LaunchRequest) (*LaunchResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	wait := DefaultAppWait
	if r.WaitS != nil {
		wait = time.Duration(*r.WaitS) * time.Second
	}
	wa, err := s.windowAgent("launching an app")
	if err != nil {
		return nil, err
	}
	before, _, err := wa.Windows(ctx, domain)
	if err != nil {
		return nil, needAgent("launching an app", err)
	}
	pr, err := s.probeApps(ctx, domain, strings.TrimSuffix(r.DesktopFile, ".desktop"))
	if err != nil {
		return nil, err
	}
	argv, name, err := s.appCommand(r, pr)
	if err != nil {
		return nil, err
	}
	p, err := s.procs.Start(ctx, domain, ExecRequest{Argv: argv, Env: pr.env, Name: name})
	if err != nil {
		return nil, err
	}
	res := &LaunchResult{Process: p}
	if wait == 0 {
		return res, nil
	}
	open := map[string]bool{}
	for _, w := range before {
		open[w.ID] = true
	}
	return res, s.awaitWindow(ctx, domain, wa, open, res, wait)
}

// appCommand is what runs for r, and the process's name.
func (s *Session) appCommand(r LaunchRequest, pr *appProbe) ([]string, string, error) {
	switch {
	case r.Command != "":
		return []string{"/bin/bash", "-c", r.Command}, label(strings.Fields(r.Command)), nil
	case len(r.Argv) > 0:
		return r.Argv, label(r.Argv), nil
	}
	e := pr.entry
	name := "app: " + e.id
	if pr.gtkLaunch && pr.standard {
		return []string{"gtk-launch", e.id}, name, nil
	}
	argv, err := e.argv()
	if err != nil {
		return nil, "", invalid("desktop_file", fmt.Sprintf("%s: %v", e.path, err))
	}
	return argv, name, nil
}

func label(argv []string) string {
	if len(argv) == 0 {
		return "app"
	}
	n := "app: " + path.Base(argv[0])
	return n[:min(len(n), 64)]
}

// awaitWindow polls the windows until one that was not open appears (it
// goes in res), the wait is up (res.TimedOut) or the process failed.
func (s *Session) awaitWindow(ctx context.Context, domain string, wa WindowAgent, open map[string]bool, res *LaunchResult, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	var seen time.Time // when a new window was first seen
	var failed time.Time
	for i := 1; ; i++ {
		list, _, err := wa.Windows(ctx, domain)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fresh []client.Window
		for _, w := range list {
			if err == nil && !open[w.ID] {
				fresh = append(fresh, w)
			}
		}
		if len(fresh) > 0 {
			w := pickWindow(fresh, res.Process.PID, func(pid int) int { return s.parentPID(ctx, domain, pid) })
			if seen.IsZero() {
				seen = time.Now()
			}
			if w.Title != "" || time.Since(seen) >= appTitleWait || time.Now().After(deadline) {
				res.Window = window(w)
				return nil
			}
		}
		if len(fresh) == 0 && time.Now().After(deadline) {
			res.TimedOut = true
			return nil
		}
		if i%4 == 0 && failed.IsZero() {
			// A process that ended in failure opens no window: stop a
			// moment after it (another process of the app may still).
			if p, err := s.procs.Process(ctx, domain, res.Process.ID); err == nil {
				res.Process = p
				if !p.Running && p.ExitCode != nil && *p.ExitCode != 0 {
					failed = time.Now()
				}
			}
		}
		if !failed.IsZero() && time.Since(failed) > 2*appPoll && len(fresh) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(appPoll):
		}
	}
}

// pickWindow prefers a window of the process pid or of a process under
// it; else the oldest new one.
func pickWindow(fresh []client.Window, pid int, parent func(int) int) client.Window {
	for _, w := range fresh {
		for p, depth := w.PID, 0; p > 1 && depth < 8; p, depth = parent(p), depth+1 {
			if p == pid {
				return w
			}
		}
	}
	return fresh[0]
}

// parentPID reads a guest process's parent from /proc (0 if it cannot).
func (s *Session) parentPID(ctx context.Context, domain string, pid int) int {
	var b bytes.Buffer
	if _, err := s.x.ch.ReadFile(ctx, domain, fmt.Sprintf("/proc/%d/stat", pid), &b); err != nil {
		return 0
	}
	// pid (comm) state ppid …: comm may hold spaces and parentheses.
	rest := b.String()[strings.LastIndexByte(b.String(), ')')+1:]
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
