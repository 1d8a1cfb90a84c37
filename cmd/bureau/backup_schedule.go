package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// backupScheduleCmd is "bureau backup schedule DESKTOP": sets a desktop's
// backup schedule (the flags given change the schedule as it is, the rest
// stay; a desktop without one starts from the defaults), --show shows it,
// --off stops it.
func backupScheduleCmd(cfg *config.Config) *cobra.Command {
	var target string
	var every time.Duration
	var everyMinutes, keepLast, keepHourly, keepDaily, keepWeekly int
	var show, off, asJSON bool
	cmd := &cobra.Command{
		Use:   "schedule DESKTOP [--target T --every 60m --keep-last N --keep-hourly N --keep-daily N --keep-weekly N | --show | --off]",
		Short: "Back a desktop up by itself every so often, thinning its backups out (--show, --off)",
		Long: `Back a desktop's data disk up by itself every --every (default 60m) to a
backup target (--target; may be left out when there is one), the first one
due a period from now. After each, its backups in the target are thinned
out as restic's forget does: the newest always stays, and so do the newest
--keep-last, and the newest backup of each of the newest --keep-hourly
hours (default 24), --keep-daily days (7) and --keep-weekly ISO weeks (4)
that have one; the others are deleted. The flags given change the schedule
as it is and the rest stay (a desktop without one starts from the
defaults). Prints the schedule. --show only prints it; --off stops the
scheduled backups (the backups taken stay).`,
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		fl := cmd.Flags()
		var set []string
		for _, f := range []string{"target", "every", "every-minutes", "keep-last", "keep-hourly", "keep-daily", "keep-weekly"} {
			if fl.Changed(f) {
				set = append(set, "--"+f)
			}
		}
		switch {
		case show && off:
			return errors.New("--show and --off: pick one")
		case (show || off) && len(set) > 0:
			return fmt.Errorf("--show or --off with %s: pick one", strings.Join(set, ", "))
		case fl.Changed("every") && fl.Changed("every-minutes"):
			return errors.New("--every and --every-minutes: give one")
		case fl.Changed("every") && (every < time.Minute || every%time.Minute != 0):
			return fmt.Errorf("--every %s: whole minutes, e.g. 15m, 6h or 24h", every)
		}
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		path := "/api/v1/desktops/" + d.ID + "/backup-schedule"
		out := cmd.OutOrStdout()
		if off {
			if err := c.do(ctx, "DELETE", path, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "scheduled backups of %s stopped; the backups taken stay\n", d.Name)
			return nil
		}
		var s apiv1.BackupSchedule
		err = c.do(ctx, "GET", path, nil, &s)
		var ae *apiError
		had := err == nil
		if !had && !(errors.As(err, &ae) && ae.Status == http.StatusNotFound) {
			return err
		}
		if show {
			if !had {
				return fmt.Errorf("desktop %s has no backup schedule (set one with: bureau backup schedule %s --every 60m)", d.Name, args[0])
			}
			return printSchedule(out, d.Name, s, asJSON)
		}
		var req apiv1.BackupScheduleRequest
		if had { // what is not given stays as it is
			req = apiv1.BackupScheduleRequest{Target: s.TargetID, EveryMinutes: &s.EveryMinutes, KeepLast: &s.KeepLast,
				KeepHourly: &s.KeepHourly, KeepDaily: &s.KeepDaily, KeepWeekly: &s.KeepWeekly}
		}
		if fl.Changed("target") {
			req.Target = target
		}
		if fl.Changed("every") {
			everyMinutes = int(every / time.Minute)
		}
		for _, f := range []struct {
			flag string
			v    *int
			to   **int
		}{{"every", &everyMinutes, &req.EveryMinutes}, {"every-minutes", &everyMinutes, &req.EveryMinutes},
			{"keep-last", &keepLast, &req.KeepLast}, {"keep-hourly", &keepHourly, &req.KeepHourly},
			{"keep-daily", &keepDaily, &req.KeepDaily}, {"keep-weekly", &keepWeekly, &req.KeepWeekly}} {
			if fl.Changed(f.flag) {
				*f.to = f.v
			}
		}
		if err := c.do(ctx, "PUT", path, req, &s); err != nil {
			return err
		}
		return printSchedule(out, d.Name, s, asJSON)
	})
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "the backup target's name or id (default: the only one)")
	f.DurationVar(&every, "every", 0, "a backup every this long, in whole minutes (e.g. 15m, 6h; default 60m; at most 168h)")
	f.IntVar(&everyMinutes, "every-minutes", 0, "a backup every N minutes (1 to 10080), instead of --every")
	f.IntVar(&keepLast, "keep-last", 0, "keep the newest N backups (default 0)")
	f.IntVar(&keepHourly, "keep-hourly", 0, "keep the newest backup of each of the newest N hours (default 24)")
	f.IntVar(&keepDaily, "keep-daily", 0, "keep the newest backup of each of the newest N days (default 7)")
	f.IntVar(&keepWeekly, "keep-weekly", 0, "keep the newest backup of each of the newest N ISO weeks (default 4)")
	f.BoolVar(&show, "show", false, "print the schedule only")
	f.BoolVar(&off, "off", false, "stop the scheduled backups (the backups taken stay)")
	f.BoolVar(&asJSON, "json", false, "print the schedule as JSON")
	return cmd
}

// printSchedule says a backup schedule in three lines (or prints it as JSON).
func printSchedule(w io.Writer, desktopName string, s apiv1.BackupSchedule, asJSON bool) error {
	if asJSON {
		return printJSONTo(w, s)
	}
	kept := []string{"the newest"}
	if s.KeepLast > 0 {
		kept = append(kept, fmt.Sprintf("the last %d", s.KeepLast))
	}
	var each []string
	for _, k := range []struct {
		n    int
		unit string
	}{{s.KeepHourly, "hour"}, {s.KeepDaily, "day"}, {s.KeepWeekly, "week"}} {
		switch {
		case k.n == 1:
			each = append(each, "1 "+k.unit)
		case k.n > 1:
			each = append(each, fmt.Sprintf("%d %ss", k.n, k.unit))
		}
	}
	if len(each) > 0 {
		kept = append(kept, "the newest of each of the last "+andList(each))
	}
	_, err := fmt.Fprintf(w, "backups of %s: every %s to target %s; next at %s\nkept: %s\nset by %s at %s\n",
		desktopName, minutes(s.EveryMinutes), s.TargetID, s.NextAt.Local().Format(time.DateTime),
		strings.Join(kept, ", "), s.UpdatedBy, s.UpdatedAt.Local().Format(time.DateTime))
	return err
}

// minutes reads 45m, 1h, 1h30m or 168h.
func minutes(n int) string {
	switch {
	case n < 60:
		return fmt.Sprintf("%dm", n)
	case n%60 == 0:
		return fmt.Sprintf("%dh", n/60)
	}
	return fmt.Sprintf("%dh%02dm", n/60, n%60)
}

// andList reads "a", "a and b", "a, b and c".
func andList(l []string) string {
	if len(l) < 2 {
		return strings.Join(l, "")
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}
