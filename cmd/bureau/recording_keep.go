package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// ownedRecordings is the path of the caller's recordings, deleted
// desktops' included.
const ownedRecordings = "/api/v1/recordings"

// recordingPath is the path of the recording [DESKTOP] RID: by RID alone,
// the caller's recording whatever became of its desktop.
func recordingPath(ctx context.Context, c *client, args []string) (string, error) {
	rid := url.PathEscape(args[len(args)-1])
	if len(args) == 1 {
		return ownedRecordings + "/" + rid, nil
	}
	base, err := recordingsBase(ctx, c, args[0])
	if err != nil {
		return "", err
	}
	return base + "/" + rid, nil
}

// recordingKeepCmd is `bureau recording keep` (keep: true) or `unkeep`.
func recordingKeepCmd(cfg *config.Config, keep bool) *cobra.Command {
	use, short := "keep DESKTOP RID", "Keep a recording: it stays when the desktop is deleted, and the size budget never removes it"
	if !keep {
		use, short = "unkeep DESKTOP RID", "Let a recording go with its desktop again (and the size budget remove it)"
	}
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := recordingPath(ctx, c, args)
			if err != nil {
				return err
			}
			var r recordingView
			if err := c.do(ctx, "PATCH", path, map[string]bool{"kept": keep}, &r); err != nil {
				return err
			}
			if r.Kept {
				fmt.Fprintf(cmd.OutOrStdout(), "recording %s is kept\n", r.ID)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "recording %s goes with its desktop\n", r.ID)
			}
			return nil
		}),
	}
	return cmd
}

// recordingDesktop names a recording's desktop, and says if it is gone.
func recordingDesktop(r *recordingView) string {
	name := r.DesktopName
	if name == "" {
		name = r.DesktopID
	}
	if r.DesktopDeleted {
		return name + " (deleted)"
	}
	return name
}

func yesOrNot(b bool) string {
	if b {
		return "yes"
	}
	return ""
}
