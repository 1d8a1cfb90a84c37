package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// migratePoll is how often a move followed with --wait is read again.
var migratePoll = time.Second

// moveCmd is "bureau desktop migrate" ("bureau migrate" is the
// database's).
func moveCmd(cfg *config.Config) *cobra.Command {
	var wait time.Duration
	var cancel bool
	cmd := &cobra.Command{
		Use:   "migrate ID|NAME HOST",
		Short: "Move a desktop with its disks to another host (admin): live when it runs; --cancel stops a move under way",
		Long: `Move a desktop with its disks to another host (admin).

A running desktop moves live: it keeps running while its disks and memory
are copied, stops for a moment (the downtime) and runs on on the new host
with a new address on that host's subnet.

A stopped or hibernated desktop moves cold: its disks (with their
snapshots) and its hibernation image are copied, and it stays stopped or
hibernated there. A running desktop with snapshots (which cannot move
live) and a paused one are hibernated first; the running one is woken on
the new host, its programs as they were.

A move that fails, or is cancelled, leaves the desktop where it was.`,
		Args: cobra.RangeArgs(1, 2),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		switch {
		case cancel && len(args) == 2:
			return errors.New("--cancel and a HOST: give one (HOST moves the desktop there; --cancel stops the move under way)")
		case cancel && wait > 0:
			return errors.New("--wait follows a move: give it with a HOST, not with --cancel")
		case !cancel && len(args) == 1:
			return errors.New("name the HOST to move the desktop to (see bureau host list), or --cancel the move under way")
		}
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		path, out := "/api/v1/desktops/"+d.ID+"/migrate", cmd.OutOrStdout()
		if cancel {
			if err := c.do(ctx, "DELETE", path, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "cancelling the move of desktop %s; it stays on host %s\n", d.Name, d.Host)
			return nil
		}
		if err := c.do(ctx, "POST", path, map[string]string{"host": args[1]}, d); err != nil {
			return err
		}
		if wait <= 0 {
			return printJSONTo(out, d)
		}
		return followMigration(ctx, c, d, args[1], wait, out, cmd.ErrOrStderr())
	})
	cmd.Flags().DurationVar(&wait, "wait", 0, "follow the move up to this long (e.g. 10m), printing its progress and how it went")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the move under way (the desktop stays where it was)")
	return cmd
}

// followMigration waits for d's move to host to end, telling errw each
// step, then prints how it went (its migrated event) on out; a move that
// failed is an error saying why.
func followMigration(ctx context.Context, c *client, d *apiv1.Desktop, host string, wait time.Duration, out, errw io.Writer) error {
	began, from := d.OperationStartedAt, d.Host
	if err := settleEvery(ctx, c, d, wait, migratePoll, errw); err != nil {
		return err
	}
	if d.Host != host {
		why := d.LastError
		if why == "" {
			why = "the move did not happen"
		}
		return fmt.Errorf("desktop %s: %s; it is %s on host %s", d.Name, why, d.State, d.Host)
	}
	msg, err := migratedEvent(ctx, c, d.ID, began)
	if err != nil {
		return err
	}
	if msg == "" {
		msg = fmt.Sprintf("moved from host %s to host %s; address now %s", from, host, d.IP)
	}
	fmt.Fprintf(out, "desktop %s %s\n", d.Name, msg)
	return nil
}

// migratedEvent is the message of the desktop's migrated event since
// began ("" when none comes: it is recorded just after the desktop).
func migratedEvent(ctx context.Context, c *client, id string, began *time.Time) (string, error) {
	for try := 1; ; try++ {
		var out struct {
			Events []*apiv1.Event `json:"events"`
		}
		if err := c.do(ctx, "GET", "/api/v1/desktops/"+id+"/events?limit=50", nil, &out); err != nil {
			return "", err
		}
		for _, e := range slices.Backward(out.Events) {
			if e.Type == "migrated" && (began == nil || !e.CreatedAt.Before(*began)) {
				return e.Message, nil
			}
		}
		if try == 5 {
			return "", nil
		}
		time.Sleep(migratePoll)
	}
}
