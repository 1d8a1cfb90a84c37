package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/loop"
	"github.com/spf13/cobra"
)

// People in the loop (docs/people.md): the desktop commands control,
// take, release, help and policy; bureau requests and bureau request.

// requestSlice is the longest one long-poll for a decision is asked to
// wait: under the client's five-minute timeout.
var requestSlice = 4 * time.Minute

// peopleCmds are the desktop commands for people in the loop.
func peopleCmds(cfg *config.Config) []*cobra.Command {
	return []*cobra.Command{controlCmd(cfg), takeCmd(cfg), releaseCmd(cfg), helpCmd(cfg), policyCmd(cfg)}
}

func clock(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// writeControl says who holds a desktop's input, and who watches.
func writeControl(out io.Writer, c *apiv1.ControlView) error {
	if c.Holder != loop.HolderPerson {
		fmt.Fprintln(out, "the agent has control")
	} else {
		fmt.Fprintf(out, "%s has control", c.Person)
		if c.Since != nil {
			fmt.Fprintf(out, " since %s", clock(*c.Since))
		}
		fmt.Fprintf(out, " (%s)", c.By)
		if c.Until != nil {
			fmt.Fprintf(out, "; back to the agent at %s unless they use it (idle %s)", clock(*c.Until), shortDuration(time.Duration(c.IdleTimeoutS)*time.Second))
		}
		fmt.Fprintln(out)
	}
	if len(c.Viewers) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WATCHING\tNAME\tINPUT\tSINCE")
	for _, v := range c.Viewers {
		input := "dropped"
		switch {
		case v.HoldsInput:
			input = "holds it"
		case v.ViewOnly:
			input = "view only"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", v.Session, orDash(v.Name), input, clock(v.Since))
	}
	return w.Flush()
}

// controlCall is a command that calls method on a desktop's control
// (rest: "", "/take", "/release") and shows it.
func controlCall(cfg *config.Config, use, short, long, method, rest string, body func(*cobra.Command) any) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.ExactArgs(1)}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		var b any
		if body != nil {
			b = body(cmd)
		}
		var v apiv1.ControlView
		if err := c.do(ctx, method, "/api/v1/desktops/"+d.ID+"/control"+rest, b, &v); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &v)
		}
		return writeControl(cmd.OutOrStdout(), &v)
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

func controlCmd(cfg *config.Config) *cobra.Command {
	return controlCall(cfg, "control ID|NAME", "Show who holds a desktop's mouse and keyboard (the agent or a person) and who is watching",
		`The agent holds a desktop's input unless a person took over (bureau desktop
take, or Take over in the console): then the agent's input calls answer 409
human_in_control until the person hands back or stops using it for their
idle timeout.`, "GET", "", nil)
}

func takeCmd(cfg *config.Config) *cobra.Command {
	var name string
	var idle time.Duration
	cmd := controlCall(cfg, "take ID|NAME", "Take a desktop's mouse and keyboard from the agent (it gets 409 human_in_control until release)",
		`Take over a desktop's input for a person (--name, default the token's
owner): the agent's input calls are refused until "bureau desktop release",
or until --idle passes without the person's input (default 10m). Taking
over from another person is allowed. Not with an agent's token (a desktop
or computer-only token).`, "POST", "/take", func(cmd *cobra.Command) any {
			body := map[string]any{}
			if name != "" {
				body["name"] = name
			}
			if cmd.Flags().Changed("idle") {
				body["idle_timeout_s"] = int(idle.Round(time.Second).Seconds())
			}
			return body
		})
	cmd.Flags().StringVar(&name, "name", "", "who takes it, as the others watching see it (default: the token's owner)")
	cmd.Flags().DurationVar(&idle, "idle", 0, "hand back to the agent after this long without input (default 10m, at most 8h)")
	return cmd
}

func releaseCmd(cfg *config.Config) *cobra.Command {
	return controlCall(cfg, "release ID|NAME", "Hand a desktop's mouse and keyboard back to the agent",
		"Hand a desktop's input back to the agent (nothing to do when it has it).", "POST", "/release", nil)
}

// policyCmd shows, sets or clears a desktop's approval policy.
func policyCmd(cfg *config.Config) *cobra.Command {
	var set string
	var clear bool
	cmd := &cobra.Command{
		Use:   "policy ID|NAME [--set FILE|- | --clear]",
		Short: "Show, set (--set FILE, - for stdin) or clear a desktop's approval policy: which of the agent's calls wait for a person",
		Long: `An approval policy names the agent's calls that wait for a person's
approval: exec command lines and URLs matching patterns (RE2), file deletes,
keys in windows, clicks in screen regions. Shown as JSON, the form --set
takes (docs/people.md):

  {"exec": ["rm\\s+-rf", "^git push"], "file_delete": true,
   "keys": [{"key": "Return", "window_title": "Checkout"}],
   "clicks": [{"name": "Pay", "x": 900, "y": 600, "width": 200, "height": 60}],
   "urls": ["^https://bank\\."], "timeout_s": 300}

A pending gated call shows in "bureau requests"; approve or deny it with
"bureau request approve|deny".`,
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if set != "" && clear {
			return errors.New("--set and --clear: pick one")
		}
		var body json.RawMessage
		if set != "" {
			var err error
			if body, err = readPolicy(cmd.InOrStdin(), set); err != nil {
				return err
			}
		}
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		path := "/api/v1/desktops/" + d.ID + "/approval-policy"
		if clear {
			if err := c.do(ctx, "DELETE", path, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approval policy of %s cleared: nothing waits for approval\n", d.Name)
			return nil
		}
		var p loop.Policy
		method := "GET"
		if body != nil {
			method = "PUT"
		}
		if err := c.do(ctx, method, path, body, &p); err != nil {
			return err
		}
		if p.Exec == nil && !p.FileDelete && p.Keys == nil && p.Clicks == nil && p.URLs == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s has no approval policy: nothing waits for approval\n", d.Name)
		}
		return printJSONTo(cmd.OutOrStdout(), &p)
	})
	cmd.Flags().StringVar(&set, "set", "", "set the policy, whole, from this JSON file (- reads stdin)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the policy")
	return cmd
}

// readPolicy reads a policy's JSON from file (- is stdin).
func readPolicy(stdin io.Reader, file string) (json.RawMessage, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("policy %s: not a JSON object: %w", file, err)
	}
	return json.RawMessage(b), nil
}
