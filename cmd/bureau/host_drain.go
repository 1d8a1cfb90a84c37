package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// drainPoll is how often a drain followed with --wait is read again.
var drainPoll = 2 * time.Second

// drainCmds are "bureau host drain" and "bureau host undrain".
func drainCmds(cfg *config.Config) []*cobra.Command {
	var wait time.Duration
	drain := &cobra.Command{
		Use:   "drain NAME",
		Short: "Move every desktop off a host, each to the host placement chooses (admin)",
		Long: `Move every desktop off a host (admin), one at a time, each to the host
placement chooses among the others. The host is marked draining at once:
nothing new is placed there. Running desktops move live (cold when they
have snapshots), stopped and hibernated ones cold (see bureau desktop
migrate). Desktops that cannot move (no other host has room, a move failed,
a desktop in error) stay and are listed with why. "bureau host undrain"
ends it.`,
		Args: cobra.ExactArgs(1),
	}
	drain.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		path := "/api/v1/hosts/" + url.PathEscape(args[0])
		var h apiv1.Host
		if err := c.do(ctx, "POST", path+"/drain", nil, &h); err != nil {
			return err
		}
		out := drain.OutOrStdout()
		if wait <= 0 {
			return printJSONTo(out, h)
		}
		deadline := time.Now().Add(wait)
		last := ""
		for h.Drain == nil || !h.Drain.Done {
			if time.Now().After(deadline) {
				return fmt.Errorf("host %s: the drain is still under way after %s (bureau host show %s follows it)", h.Name, wait, h.Name)
			}
			if h.Drain != nil && h.Drain.Moving != "" && h.Drain.Moving != last {
				last = h.Drain.Moving
				fmt.Fprintf(drain.ErrOrStderr(), "moving desktop %s (%d moved, %d desktops left on the host)\n", last, h.Drain.Moved, h.Desktops)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(drainPoll):
			}
			h = apiv1.Host{}
			if err := c.do(ctx, "GET", path, nil, &h); err != nil {
				return err
			}
		}
		return drainReport(out, h)
	})
	drain.Flags().DurationVar(&wait, "wait", 0, "follow the drain up to this long (e.g. 30m) and print how it went")
	undrain := &cobra.Command{
		Use:   "undrain NAME",
		Short: "End a host's drain: placement uses it again (a move under way finishes)",
		Args:  cobra.ExactArgs(1),
	}
	undrain.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var h apiv1.Host
		if err := c.do(ctx, "DELETE", "/api/v1/hosts/"+url.PathEscape(args[0])+"/drain", nil, &h); err != nil {
			return err
		}
		fmt.Fprintf(undrain.OutOrStdout(), "host %s is no longer draining\n", h.Name)
		return nil
	})
	return []*cobra.Command{drain, undrain}
}

// drainReport says how a finished drain went; desktops left make it an
// error.
func drainReport(out io.Writer, h apiv1.Host) error {
	d := h.Drain
	fmt.Fprintf(out, "host %s drained: %d desktops moved off", h.Name, d.Moved)
	if d.EndedAt != nil {
		fmt.Fprintf(out, " in %s", d.EndedAt.Sub(d.StartedAt).Round(time.Second))
	}
	fmt.Fprintln(out)
	if len(d.Left) == 0 {
		return nil
	}
	ids := make([]string, 0, len(d.Left))
	for id := range d.Left {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(out, "  left: desktop %s: %s\n", id, d.Left[id])
	}
	return fmt.Errorf("host %s: %d desktops could not be moved off", h.Name, len(d.Left))
}
