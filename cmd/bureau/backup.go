package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// restoreWait bounds "backup restore --wait": a restore copies the whole
// disk back before the desktop boots.
const restoreWait = 24 * time.Hour

// backupCmd is "bureau backup": desktops' data disks copied off the host.
func backupCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "backup", Aliases: []string{"backups"},
		Short: "Back up desktops' data disks to a backup target, on a schedule or not; verify, restore and delete them"}

	var target string
	var wait bool
	create := &cobra.Command{
		Use:   "create DESKTOP",
		Short: "Back up a desktop's data disk (/home); --wait follows it to the end",
		Long: `Back up a desktop's data disk (/home) to a backup target (--target; may be
left out when there is one). The desktop stays usable. The first backup
to a target is full, the next ones incremental. --wait follows it,
showing its progress, and prints how it went; a failed backup is an error.`,
		Args: cobra.ExactArgs(1),
	}
	create.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		var b apiv1.Backup
		if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/backups", apiv1.BackupRequest{Target: target}, &b); err != nil {
			return err
		}
		if !wait {
			return printJSONTo(create.OutOrStdout(), b)
		}
		return followBackup(ctx, c, &b, create.OutOrStdout(), create.ErrOrStderr())
	})
	create.Flags().StringVar(&target, "target", "", "the backup target's name or id (default: the only one)")
	create.Flags().BoolVar(&wait, "wait", false, "follow the backup to its end, showing its progress")

	var desktopRef, targetRef string
	list := &cobra.Command{
		Use:   "list",
		Short: "List backups, newest first (those of deleted desktops too)",
		Args:  cobra.NoArgs,
	}
	list.RunE = runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
		bs, err := listBackups(ctx, c, desktopRef, targetRef)
		if err != nil {
			return err
		}
		return backupTable(list.OutOrStdout(), bs)
	})
	list.Flags().StringVar(&desktopRef, "desktop", "", "only this desktop's (name or id; a deleted one's too)")
	list.Flags().StringVar(&targetRef, "target", "", "only those in this backup target (name or id)")

	show := &cobra.Command{Use: "show ID", Short: "Show a backup, every field as JSON", Args: cobra.ExactArgs(1)}
	show.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var b apiv1.Backup
		if err := c.do(ctx, "GET", "/api/v1/backups/"+url.PathEscape(args[0]), nil, &b); err != nil {
			return err
		}
		return printJSONTo(show.OutOrStdout(), b)
	})

	verify := &cobra.Command{
		Use:   "verify ID",
		Short: "Read back every chunk of a backup and check it; exits 1 when one is missing or corrupt",
		Args:  cobra.ExactArgs(1),
	}
	verify.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var check apiv1.BackupCheck
		if err := c.do(ctx, "POST", "/api/v1/backups/"+url.PathEscape(args[0])+"/verify", nil, &check); err != nil {
			return err
		}
		return checkReport(verify.OutOrStdout(), check)
	})

	var name, onto string
	var restoreUntilUp, replaceData bool
	restore := &cobra.Command{
		Use:   "restore ID (--name NAME | --onto DESKTOP --replace-data-disk)",
		Short: "Make a new desktop from a backup, or write it over a stopped desktop's data disk",
		Long: `With --name, make a new desktop from a backup: its data disk is the backup's,
its OS disk a fresh one of the backup's image.

With --onto DESKTOP --replace-data-disk, write the backup over that stopped
desktop's data disk (its /home), in place: the desktop keeps its OS disk and
settings. What the disk holds now is kept first as the snapshot
before-restore-<backup id>; "bureau snapshot revert DESKTOP before-restore-…"
undoes the restore.`,
		Args: cobra.ExactArgs(1),
	}
	restore.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if (name == "") == (onto == "") {
			return fmt.Errorf("give --name (a new desktop) or --onto (a stopped desktop whose data disk the backup replaces)")
		}
		var d apiv1.Desktop
		req := apiv1.RestoreRequest{Name: name, Desktop: onto, ReplaceDataDisk: replaceData}
		if err := c.do(ctx, "POST", "/api/v1/backups/"+url.PathEscape(args[0])+"/restore", req, &d); err != nil {
			return err
		}
		if restoreUntilUp {
			if err := settle(ctx, c, &d, restoreWait, restore.ErrOrStderr()); err != nil {
				return err
			}
			if onto != "" && d.LastError != "" {
				// A restore that fails leaves the desktop stopped, its disk
				// put back as it was.
				return fmt.Errorf("desktop %s: %s", d.Name, d.LastError)
			}
		}
		return printJSONTo(restore.OutOrStdout(), d)
	})
	restore.Flags().StringVar(&name, "name", "", "the new desktop's name")
	restore.Flags().StringVar(&onto, "onto", "", "a stopped desktop (name or id) whose data disk the backup replaces")
	restore.Flags().BoolVar(&replaceData, "replace-data-disk", false, "with --onto: yes, replace its data disk (kept as a snapshot first)")
	restore.Flags().BoolVar(&restoreUntilUp, "wait", false, "wait until the new desktop runs, or the restore over a desktop is done (or fails)")

	rm := &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove", "delete"},
		Short:   "Delete a backup from its target (chunks no other backup uses are swept after)",
		Args:    cobra.ExactArgs(1),
	}
	rm.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "DELETE", "/api/v1/backups/"+url.PathEscape(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(rm.OutOrStdout(), "backup %s deleted; the chunks no other backup uses are swept from its target in the background\n", args[0])
		return nil
	})

	cmd.AddCommand(create, list, show, verify, restore, rm, backupScheduleCmd(cfg))
	cmd.AddCommand(backupFilesCmds(cfg)...)
	return cmd
}

// listBackups lists the caller's backups, narrowed to a desktop (by name or
// id; one no longer there is matched by its id or last name) and a target.
func listBackups(ctx context.Context, c *client, desktopRef, target string) ([]apiv1.Backup, error) {
	q := url.Values{}
	if target != "" {
		q.Set("target", target)
	}
	byName := ""
	if desktopRef != "" {
		d, err := lookup(ctx, c, desktopRef)
		var ae *apiError
		switch {
		case err == nil:
			q.Set("desktop", d.ID)
		case errors.As(err, &ae) && ae.Status == 404:
			byName = desktopRef // a deleted desktop: its backups remain
		default:
			return nil, err
		}
	}
	path := "/api/v1/backups"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out struct{ Backups []apiv1.Backup }
	if err := c.do(ctx, "GET", path, nil, &out); err != nil {
		return nil, err
	}
	if byName == "" {
		return out.Backups, nil
	}
	var mine []apiv1.Backup
	for _, b := range out.Backups {
		if b.DesktopID == byName || b.DesktopName == byName {
			mine = append(mine, b)
		}
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("no desktop %s, and no backup of one by that name or id", byName)
	}
	return mine, nil
}

// backupTable writes backups as a table.
func backupTable(out io.Writer, bs []apiv1.Backup) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tDESKTOP\tSTATE\tKIND\tCONSISTENCY\tDISK\tREAD\tUPLOADED\tTARGET\tSTARTED\tTOOK")
	for _, b := range bs {
		took := "-"
		if b.FinishedAt != nil {
			took = shortDuration(b.FinishedAt.Sub(b.StartedAt))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.ID, b.DesktopName, b.State, b.Kind, orDash(b.Consistency),
			byteSize(b.DiskBytes), byteSize(b.BytesRead), byteSize(b.BytesNew), b.TargetID, b.StartedAt.Local().Format(time.DateTime), took)
	}
	return w.Flush()
}

// checkReport says what a verify found; a chunk missing or corrupt makes
// it an error (exit status 1).
func checkReport(out io.Writer, c apiv1.BackupCheck) error {
	took := time.Duration(c.TookMs) * time.Millisecond
	if c.OK {
		fmt.Fprintf(out, "backup %s is intact: %d chunks read back and checked in %s\n", c.BackupID, c.Chunks, took.Round(100*time.Millisecond))
		return nil
	}
	for _, k := range c.Missing {
		fmt.Fprintf(out, "missing: %s\n", k)
	}
	for _, k := range c.Corrupt {
		fmt.Fprintf(out, "corrupt: %s\n", k)
	}
	return fmt.Errorf("backup %s is damaged: %d chunks missing, %d corrupt of %d; a restore of it would fail",
		c.BackupID, len(c.Missing), len(c.Corrupt), c.Chunks)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
