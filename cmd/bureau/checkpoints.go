package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/steps"
	"github.com/spf13/cobra"
)

// checkpointsCmd shows or sets a desktop's automatic checkpoint policy:
// the flags given change the policy as it is, the rest stay.
func checkpointsCmd(cfg *config.Config) *cobra.Command {
	var every, keep int
	var before []string
	var memory, off, asJSON bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "checkpoints DESKTOP",
		Short: "Show or set when bureau snapshots the desktop by itself before steps (e.g. --every 10 --before exec,file_delete --keep 5; --off)",
		Long: "Automatic checkpoints are snapshots named auto-<unix ms> taken just before a step of the step log, so\n" +
			"`bureau steps revert DESKTOP N` goes back to exactly before step N: before the next step and then every\n" +
			"--every steps, and before every step of a kind in --before (" + strings.Join(steps.Kinds, ", ") + ").\n" +
			"The newest --keep of them are kept; older ones are deleted, never other snapshots. Without flags: the policy as it is.",
		Args: cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			path := "/api/v1/desktops/" + d.ID + "/checkpoints"
			var p steps.CheckpointPolicy
			if err := c.do(ctx, "GET", path, nil, &p); err != nil {
				return err
			}
			fl := cmd.Flags()
			if off && (fl.Changed("every") || fl.Changed("before")) {
				return fmt.Errorf("--off and --every or --before: pick one")
			}
			set := false
			for _, f := range []string{"every", "before", "memory", "keep", "off"} {
				set = set || fl.Changed(f)
			}
			if set {
				if off {
					p.EverySteps, p.Before = 0, []string{}
				}
				if fl.Changed("every") {
					p.EverySteps = every
				}
				if fl.Changed("before") {
					p.Before = nonEmpty(before)
				}
				if fl.Changed("memory") {
					p.Memory = memory
				}
				if fl.Changed("keep") {
					p.Keep = keep
				}
				if err := c.do(ctx, "PUT", path, p, &p); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(p)
			}
			return printPolicy(cmd.OutOrStdout(), p)
		}),
	}
	cmd.Flags().IntVar(&every, "every", 0, "a checkpoint before the next step and then every N steps (0: none by count)")
	cmd.Flags().StringSliceVar(&before, "before", nil, "step kinds always checkpointed, comma-separated ("+strings.Join(steps.Kinds, ",")+"; \"\": none)")
	cmd.Flags().BoolVar(&memory, "memory", false, "snapshot the RAM too (running programs come back on revert); --memory=false: the disks only")
	cmd.Flags().IntVar(&keep, "keep", steps.DefaultKeep, "how many automatic checkpoints are kept (1 to 50)")
	cmd.Flags().BoolVar(&off, "off", false, "take no automatic checkpoints")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the policy as JSON")
	return cmd
}

func nonEmpty(list []string) []string {
	out := []string{}
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// printPolicy says a checkpoint policy in a line.
func printPolicy(w io.Writer, p steps.CheckpointPolicy) error {
	if !p.On() {
		_, err := fmt.Fprintf(w, "automatic checkpoints: off (keep %d)\n", p.Keep)
		return err
	}
	var when []string
	if p.EverySteps > 0 {
		when = append(when, fmt.Sprintf("every %d steps", p.EverySteps))
	}
	if len(p.Before) > 0 {
		when = append(when, "before each "+strings.Join(p.Before, ", "))
	}
	what := "the disks"
	if p.Memory {
		what = "the disks and RAM"
	}
	_, err := fmt.Fprintf(w, "automatic checkpoints: %s; %s; the newest %d kept\n", strings.Join(when, " and "), what, p.Keep)
	return err
}
