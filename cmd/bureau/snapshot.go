package main

import (
	"context"
	"fmt"
	"github.com/bureau/bureau/internal/api/apiv1"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// runWithClient adapts a command body that talks to the API.
func runWithClient(cfg *config.Config, run func(ctx context.Context, c *client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := newClient(cfg)
		if err != nil {
			return err
		}
		return run(cmd.Context(), c, args)
	}
}

func snapshotCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot", Aliases: []string{"snapshots", "snap"}, Short: "Take, list, revert to and delete a desktop's snapshots"}
	base := func(ctx context.Context, c *client, ref string) (string, error) {
		d, err := lookup(ctx, c, ref)
		if err != nil {
			return "", err
		}
		return "/api/v1/desktops/" + d.ID + "/snapshots", nil
	}

	var req struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Scope       string `json:"scope,omitempty"`
		Memory      *bool  `json:"memory,omitempty"`
	}
	var memory, noMemory bool
	create := &cobra.Command{
		Use:   "create DESKTOP NAME",
		Short: "Take a snapshot (with RAM when the desktop runs, unless --no-memory)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := base(ctx, c, args[0])
			if err != nil {
				return err
			}
			req.Name = args[1]
			if memory {
				req.Memory = &memory
			} else if noMemory {
				f := false
				req.Memory = &f
			}
			var sn apiv1.Snapshot
			if err := c.do(ctx, "POST", path, req, &sn); err != nil {
				return err
			}
			return printJSON(sn)
		}),
	}
	create.Flags().StringVar(&req.Description, "description", "", "what this snapshot is")
	create.Flags().StringVar(&req.Scope, "scope", "all", "all, data (the user's /home only) or os")
	create.Flags().BoolVar(&memory, "memory", false, "include RAM (running desktop, scope all)")
	create.Flags().BoolVar(&noMemory, "no-memory", false, "disks only, even for a running desktop")

	list := &cobra.Command{
		Use:   "list DESKTOP",
		Short: "List a desktop's snapshots",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := base(ctx, c, args[0])
			if err != nil {
				return err
			}
			var out struct{ Snapshots []apiv1.Snapshot }
			if err := c.do(ctx, "GET", path, nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSCOPE\tMEMORY\tPARENT\tSIZE\tCREATED\tDESCRIPTION")
			for _, s := range out.Snapshots {
				fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%d MiB\t%s\t%s\n", s.Name, s.Scope, s.Memory, s.Parent,
					s.SizeBytes>>20, s.CreatedAt.Local().Format(time.DateTime), s.Description)
			}
			return w.Flush()
		}),
	}

	var wait time.Duration
	revert := &cobra.Command{
		Use:   "revert DESKTOP NAME",
		Short: "Return a desktop to a snapshot",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := base(ctx, c, args[0])
			if err != nil {
				return err
			}
			var d apiv1.Desktop
			if err := c.do(ctx, "POST", path+"/"+url.PathEscape(args[1])+"/revert", nil, &d); err != nil {
				return err
			}
			return finish(ctx, c, &d, wait)
		}),
	}
	revert.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the revert to finish")

	del := &cobra.Command{
		Use:   "delete DESKTOP NAME",
		Short: "Delete a snapshot",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := base(ctx, c, args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", path+"/"+url.PathEscape(args[1]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("snapshot %s deleted\n", args[1])
			return nil
		}),
	}
	cmd.AddCommand(create, list, revert, del)
	return cmd
}

func reimageCmd(cfg *config.Config) *cobra.Command {
	var image string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "reimage DESKTOP",
		Short: "Replace the OS disk with a fresh copy of an image; the data disk (/home) is kept",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/reimage", map[string]string{"image": image}, d); err != nil {
				return err
			}
			return finish(ctx, c, d, wait)
		}),
	}
	cmd.Flags().StringVar(&image, "image", "", "image to use (default: the desktop's current image)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the reimage to finish")
	return cmd
}

func resizeCmd(cfg *config.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "grow-disk DESKTOP SIZE_GIB",
		Short: "Grow a desktop's data disk (live when running); shrinking is refused",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var size int
			if _, err := fmt.Sscan(args[1], &size); err != nil {
				return fmt.Errorf("size %q: want whole GiB", args[1])
			}
			if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/data-disk", map[string]int{"size_gib": size}, d); err != nil {
				return err
			}
			return printJSON(d)
		}),
	}
}

func idleCmd(cfg *config.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "idle-timeout DESKTOP DURATION",
		Short: "Hibernate the desktop after DURATION unused (e.g. 45m; 0 = never)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			dur, err := time.ParseDuration(args[1])
			if err != nil {
				return fmt.Errorf("duration %q: %w", args[1], err)
			}
			body := map[string]int{"idle_timeout_seconds": int(dur.Seconds())}
			if err := c.do(ctx, "PATCH", "/api/v1/desktops/"+d.ID, body, d); err != nil {
				return err
			}
			return printJSON(d)
		}),
	}
}

// idleTiersCmd sets when a quiet desktop naps, sleeps and hibernates.
func idleTiersCmd(cfg *config.Config) *cobra.Command {
	var nap, sleep, hibernate time.Duration
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "idle DESKTOP",
		Short: "Set when the desktop naps, sleeps and hibernates once unused (e.g. --nap 2m --sleep 10m --hibernate 30m; 0 skips a tier)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			body := map[string]int{}
			for _, f := range []struct {
				flag, field string
				v           time.Duration
			}{{"nap", "nap_after_seconds", nap}, {"sleep", "sleep_after_seconds", sleep}, {"hibernate", "idle_timeout_seconds", hibernate}} {
				if cmd.Flags().Changed(f.flag) {
					body[f.field] = int(f.v.Seconds())
				}
			}
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: give --nap, --sleep or --hibernate")
			}
			if err := c.do(ctx, "PATCH", "/api/v1/desktops/"+d.ID, body, d); err != nil {
				return err
			}
			return printJSON(d)
		}),
	}
	cmd.Flags().DurationVar(&nap, "nap", 0, "pause (memory resident) after this long unused; 0 = skip")
	cmd.Flags().DurationVar(&sleep, "sleep", 0, "pause and push memory to the host's compressed swap after this long unused; 0 = skip")
	cmd.Flags().DurationVar(&hibernate, "hibernate", 0, "save memory to disk after this long unused; 0 = never")
	return cmd
}

func keyboardCmd(cfg *config.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "keyboard DESKTOP LAYOUT",
		Short: "Set a running desktop's keyboard layout (an XKB name: us, de, fr, gb…); typing follows it",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "PATCH", "/api/v1/desktops/"+d.ID, map[string]string{"keyboard_layout": args[1]}, d); err != nil {
				return err
			}
			return printJSON(d)
		}),
	}
}
