package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// How the CLI waits for a desktop to be ready: the API waits (GET
// …?wait=ready) in short calls, so a change of what the desktop waits for
// is shown soon after it happens.
var (
	readySlice = 5 * time.Second
	// readyPace is the least time between two calls: a server that
	// answers before its time is not asked in a busy loop.
	readyPace = time.Second
)

// waitCmd is "bureau desktop wait".
func waitCmd(cfg *config.Config) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait ID|NAME",
		Short: "Wait until a desktop is ready (running, its session up), then show it as JSON",
		Long: `Wait until a desktop is ready: it runs and its desktop session is up, so
exec, files, computer use, the clipboard and terminals work (before, they
answer 409 not_ready). A desktop asleep is woken, one starting is waited
for; a stopped or failed one is an error at once. What it waits for is
shown on stderr as it changes; past --timeout the command fails.`,
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		if err := waitReady(ctx, c, d, timeout, newReadyWatcher(cmd.ErrOrStderr(), time.Now)); err != nil {
			return err
		}
		return printJSONTo(cmd.OutOrStdout(), d)
	})
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait at most")
	return cmd
}

// waitReady waits up to limit for desktop d to be ready, telling w each
// change of what it waits for; d is kept up to date. A desktop that will
// not get there by itself is the API's error (409 invalid_state).
func waitReady(ctx context.Context, c *client, d *apiv1.Desktop, limit time.Duration, w *readyWatcher) error {
	deadline := time.Now().Add(limit)
	for {
		n := min(max(time.Until(deadline), 0), readySlice).Round(time.Second)
		asked := time.Now()
		var now apiv1.Desktop
		path := "/api/v1/desktops/" + url.PathEscape(d.ID) + "?wait=ready&timeout_s=" + strconv.Itoa(int(n.Seconds()))
		if err := c.do(ctx, "GET", path, nil, &now); err != nil {
			return err
		}
		*d = now
		w.show(d)
		if d.Ready {
			return nil
		}
		if time.Until(deadline) < time.Second/2 {
			return fmt.Errorf("desktop %s is not ready after %s (%s); bureau desktop wait %s waits on",
				d.Name, shortDuration(w.now().Sub(w.begun)), notReadyWhy(d), d.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(readyPace-time.Since(asked), time.Until(deadline))):
		}
	}
}

// notReadyWhy says what a desktop that is not ready waits for.
func notReadyWhy(d *apiv1.Desktop) string {
	if d.State != "running" {
		return "it is " + phase(d)
	}
	switch d.WaitingFor {
	case "agent":
		return "waiting for its guest to boot: no agent in it answers yet"
	case "user":
		return "waiting for its user, made by its first-boot setup"
	case "cloud-init":
		return "waiting for its first-boot setup (cloud-init) to finish"
	case "session":
		return "waiting for its desktop session to start"
	case "":
		return "running, not ready yet"
	}
	return "waiting for " + d.WaitingFor
}

// readyWatcher prints a line each time what a desktop waits for changes,
// with the time since the wait (or the create before it) began.
type readyWatcher struct {
	w     io.Writer
	now   func() time.Time
	begun time.Time
	last  string
}

func newReadyWatcher(w io.Writer, now func() time.Time) *readyWatcher {
	return &readyWatcher{w: w, now: now, begun: now()}
}

func (r *readyWatcher) show(d *apiv1.Desktop) {
	took := shortDuration(r.now().Sub(r.begun))
	if d.Ready {
		fmt.Fprintf(r.w, "ready after %s\n", took)
		return
	}
	if why := notReadyWhy(d); why != r.last {
		fmt.Fprintf(r.w, "%s… (%s)\n", why, took)
		r.last = why
	}
}

// readyMark is a desktop's readiness in a table: yes, no (what it waits
// for), or - when it does not run.
func readyMark(d *apiv1.Desktop) string {
	switch {
	case d.Ready:
		return "yes"
	case d.State != "running":
		return "-"
	case d.WaitingFor != "":
		return "no (" + d.WaitingFor + ")"
	}
	return "no"
}
