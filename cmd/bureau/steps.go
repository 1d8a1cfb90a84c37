package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/steps"
	"github.com/spf13/cobra"
)

// stepsCmd is `bureau steps`: a desktop's step log (every computer-use
// action, exec, file change and clipboard write made in it).
func stepsCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "steps", Aliases: []string{"step"},
		Short: "A desktop's step log: list or follow it, export it for replay, see its thumbnails, revert to before a step"}
	cmd.AddCommand(stepsListCmd(cfg), stepsExportCmd(cfg), stepsThumbnailCmd(cfg), stepsRevertCmd(cfg))
	return cmd
}

// stepsBase is the path of a desktop's step log (the desktop by id or name).
func stepsBase(ctx context.Context, c *client, ref string) (string, *apiv1.Desktop, error) {
	d, err := lookup(ctx, c, ref)
	if err != nil {
		return "", nil, err
	}
	return "/api/v1/desktops/" + d.ID + "/steps", d, nil
}

func parseSeq(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("step %q: want a step number (1 or more)", s)
	}
	return n, nil
}

func stepsListCmd(cfg *config.Config) *cobra.Command {
	var after int64
	var limit int
	var follow, asJSON, last bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "list DESKTOP",
		Short: "List a desktop's steps, oldest first (--follow: and each new one as it is recorded)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			base, _, err := stepsBase(ctx, c, args[0])
			if err != nil {
				return err
			}
			p := newStepPrinter(cmd.OutOrStdout(), asJSON)
			if follow && last {
				return fmt.Errorf("--last and --follow: pick one")
			}
			if follow {
				return followSteps(ctx, c, base, after, p, cmd.ErrOrStderr())
			}
			q := url.Values{"after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(limit)}}
			if last {
				q.Set("newest", "true")
			}
			var out struct {
				Steps []*steps.Step `json:"steps"`
			}
			if err := c.do(ctx, "GET", base+"?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			for _, st := range out.Steps {
				if err := p.print(st); err != nil {
					return err
				}
			}
			if len(out.Steps) == limit && !last {
				fmt.Fprintf(cmd.ErrOrStderr(), "(there may be more: --after %d)\n", out.Steps[len(out.Steps)-1].Seq)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.Int64Var(&after, "after", 0, "only the steps numbered above this")
	f.IntVar(&limit, "limit", 100, "at most this many steps (1 to 1000; not with --follow)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing each new step as it is recorded, until interrupted")
	f.BoolVar(&asJSON, "json", false, "print each step as a line of JSON")
	f.BoolVar(&last, "last", false, "the newest --limit steps (what was done last), still oldest first")
	return cmd
}

func stepsExportCmd(cfg *config.Config) *cobra.Command {
	var format, out string
	var noImages bool
	var after int64
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "export DESKTOP",
		Short: "Export the step log for replay and evaluation: as it is, or as an Anthropic or OpenAI conversation",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			base, _, err := stepsBase(ctx, c, args[0])
			if err != nil {
				return err
			}
			doc, err := exportSteps(ctx, c, base, format, !noImages, after)
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "bureau", "bureau (the steps as they are), anthropic (Messages) or openai (Responses input items)")
	f.BoolVar(&noImages, "no-images", false, "leave the screens after each step out")
	f.Int64Var(&after, "after", 0, "only the steps numbered above this")
	f.StringVarP(&out, "output", "o", "", "write to this file (default: standard output)")
	return cmd
}

// exportLists are the lists of an export that go on from page to page.
var exportLists = []string{"steps", "messages", "input"}

// exportSteps fetches the whole export, page after page (next_after),
// joining the pages' lists into one document.
func exportSteps(ctx context.Context, c *client, base, format string, images bool, after int64) (map[string]json.RawMessage, error) {
	var doc map[string]json.RawMessage
	lists := map[string][]json.RawMessage{}
	for {
		q := url.Values{"format": {format}, "after": {strconv.FormatInt(after, 10)}}
		if !images {
			q.Set("images", "false")
		}
		var page map[string]json.RawMessage
		if err := c.do(ctx, "GET", base+"/export?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		if doc == nil {
			doc = page // format, desktop_id and tools: the same on every page
		}
		for _, k := range exportLists {
			raw, ok := page[k]
			if !ok {
				continue
			}
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("export %s: %w", k, err)
			}
			lists[k] = append(lists[k], items...)
		}
		var next int64
		if raw, ok := page["next_after"]; !ok || json.Unmarshal(raw, &next) != nil || next <= after {
			break
		}
		after = next
	}
	delete(doc, "next_after")
	for k, items := range lists {
		if items == nil {
			items = []json.RawMessage{}
		}
		b, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		doc[k] = b
	}
	return doc, nil
}

func stepsThumbnailCmd(cfg *config.Config) *cobra.Command {
	var out string
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "thumbnail DESKTOP SEQ before|after -o FILE",
		Short: "Save the screen just before or just after a step (a 320-pixel-wide JPEG)",
		Args:  cobra.ExactArgs(3),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			seq, err := parseSeq(args[1])
			if err != nil {
				return err
			}
			which, err := steps.ParseWhich(args[2])
			if err != nil {
				return err
			}
			if out == "" {
				return fmt.Errorf("say where to write it: -o FILE (- for standard output)")
			}
			base, _, err := stepsBase(ctx, c, args[0])
			if err != nil {
				return err
			}
			return download(ctx, c, fmt.Sprintf("%s/%d/thumbnails/%s", base, seq, which), out, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the JPEG to this file (- for standard output)")
	return cmd
}

func stepsRevertCmd(cfg *config.Config) *cobra.Command {
	var wait time.Duration
	var asJSON bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "revert DESKTOP SEQ",
		Short: "Put a desktop back as it was before a step: revert it to the step's checkpoint, or else the newest snapshot taken before the step began",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			seq, err := parseSeq(args[1])
			if err != nil {
				return err
			}
			base, d, err := stepsBase(ctx, c, args[0])
			if err != nil {
				return err
			}
			var res struct {
				Desktop          apiv1.Desktop  `json:"desktop"`
				Snapshot         apiv1.Snapshot `json:"snapshot"`
				HoldsThroughStep int64          `json:"holds_through_step"`
				Note             string         `json:"note,omitempty"`
			}
			if err := c.do(ctx, "POST", fmt.Sprintf("%s/%d/revert", base, seq), nil, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !asJSON {
				fmt.Fprintln(w, revertLine(d.Name, seq, res.Snapshot, res.HoldsThroughStep))
				if res.Note != "" {
					fmt.Fprintln(w, res.Note)
				}
			}
			if err := settle(ctx, c, &res.Desktop, wait, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			if wait > 0 {
				fmt.Fprintf(w, "desktop %s is %s\n", res.Desktop.Name, res.Desktop.State)
			}
			return nil
		}),
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the revert to finish")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer (the desktop, the snapshot and the last step it holds) as JSON")
	return cmd
}

// revertLine says what a revert to before step seq does.
func revertLine(desktopName string, seq int64, sn apiv1.Snapshot, holds int64) string {
	s := fmt.Sprintf("desktop %s reverting to snapshot %q (taken %s), from before step %d: ",
		desktopName, sn.Name, sn.CreatedAt.Local().Format(time.DateTime), seq)
	if holds == 0 {
		return s + "it was taken before any step, so every step is undone"
	}
	return s + fmt.Sprintf("it holds the steps through %d; the steps after %d are undone", holds, holds)
}
