package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/spf13/cobra"
)

func desktopCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "desktop", Aliases: []string{"desktops", "d"}, Short: "Create and manage desktops (through the API)"}
	var wait time.Duration
	withClient := func(run func(ctx context.Context, c *client, args []string) error) func(*cobra.Command, []string) error {
		return runWithClient(cfg, run)
	}
	addWait := func(cc *cobra.Command) {
		cc.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the operation to finish (e.g. 10m)")
	}

	var body struct {
		Name        string   `json:"name"`
		Image       string   `json:"image,omitempty"`
		VCPUs       int      `json:"vcpus"`
		MemoryMiB   int      `json:"memory_mib"`
		DataDiskGiB int      `json:"data_disk_gib"`
		SSHKeys     []string `json:"ssh_authorized_keys,omitempty"`
		IdleTimeout *int     `json:"idle_timeout_seconds,omitempty"`
		NapAfter    *int     `json:"nap_after_seconds,omitempty"`
		SleepAfter  *int     `json:"sleep_after_seconds,omitempty"`
		Keyboard    string   `json:"keyboard_layout,omitempty"`
		Host        string   `json:"host,omitempty"`
		// Placement lets bureau pick the host by its labels.
		Placement *apiv1.PlacementRequest `json:"placement,omitempty"`
		Network   struct {
			AllowOut []string `json:"allow_out,omitempty"`
			DenyOut  []string `json:"deny_out,omitempty"`
		} `json:"network"`
	}
	var idle, nap, sleep time.Duration
	var placeLabels []string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a desktop",
		Args:  cobra.ExactArgs(1),
	}
	create.RunE = withClient(func(ctx context.Context, c *client, args []string) error {
		body.Name = args[0]
		var err error
		if body.Placement, err = placement(body.Host, placeLabels); err != nil {
			return err
		}
		for _, f := range []struct {
			v  time.Duration
			to **int
		}{{idle, &body.IdleTimeout}, {nap, &body.NapAfter}, {sleep, &body.SleepAfter}} {
			if f.v >= 0 {
				*f.to = new(int(f.v.Seconds()))
			}
		}
		ready := newReadyWatcher(create.ErrOrStderr(), time.Now) // its clock runs from the create
		var d apiv1.Desktop
		if err := c.do(ctx, "POST", "/api/v1/desktops", body, &d); err != nil {
			return err
		}
		if err := settle(ctx, c, &d, wait, create.ErrOrStderr()); err != nil {
			return err
		}
		if wait > 0 {
			if err := waitReady(ctx, c, &d, wait-time.Since(ready.begun), ready); err != nil {
				return err
			}
		}
		return printJSONTo(create.OutOrStdout(), &d)
	})
	create.Flags().StringVar(&body.Image, "image", "", "image name (default: the server's default image)")
	create.Flags().IntVar(&body.VCPUs, "vcpus", 2, "virtual CPUs")
	create.Flags().IntVar(&body.MemoryMiB, "memory", 4096, "memory in MiB")
	create.Flags().IntVar(&body.DataDiskGiB, "disk", 20, "data disk (the user's /home) in GiB")
	create.Flags().StringArrayVar(&body.SSHKeys, "ssh-key", nil, "authorized SSH public key (repeatable)")
	create.Flags().StringArrayVar(&body.Network.AllowOut, "allow-out", nil, "CIDR, address or host name the desktop may reach beyond the default (repeatable)")
	create.Flags().StringArrayVar(&body.Network.DenyOut, "deny-out", nil, "CIDR, address or host name the desktop may not reach (repeatable)")
	create.Flags().StringVar(&body.Keyboard, "keyboard-layout", "", "the guest's XKB keyboard layout (us, de, fr, gb…; default us)")
	create.Flags().StringVar(&body.Host, "host", "", "run it on this host (admins; see bureau host list; default: bureau's own)")
	create.Flags().StringArrayVar(&placeLabels, "place-label", nil,
		"let bureau pick a host carrying this label key=value (repeatable: all of them; not with --host)")
	create.Flags().DurationVar(&idle, "idle-timeout", -1, "hibernate after this long unused (e.g. 30m; 0 = never; default 30m)")
	create.Flags().DurationVar(&nap, "nap-after", -1, "pause, memory resident, after this long unused (0 = skip; default the server's)")
	create.Flags().DurationVar(&sleep, "sleep-after", -1, "pause and push memory to compressed swap after this long unused (0 = skip; default the server's)")
	create.Flags().DurationVar(&wait, "wait", 0, "wait up to this long (e.g. 15m) for the desktop to be made and then ready (running, its session up)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List desktops",
		RunE: withClient(func(ctx context.Context, c *client, _ []string) error {
			var out struct {
				Desktops []*apiv1.Desktop `json:"desktops"`
			}
			if err := c.do(ctx, "GET", "/api/v1/desktops", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tSTATE\tREADY\tVCPUS\tMEMORY\tDISK\tIMAGE\tCREATED")
			for _, d := range out.Desktops {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d MiB\t%d GiB\t%s\t%s\n", d.ID, d.Name, phase(d), readyMark(d), d.VCPUs, d.MemoryMiB, d.DataDiskGiB, d.Image, d.CreatedAt.Format(time.RFC3339))
			}
			return w.Flush()
		}),
	}
	get := &cobra.Command{
		Use:   "get ID|NAME",
		Short: "Show a desktop as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: withClient(func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			return printJSON(d)
		}),
	}
	op := func(name, short string, query func() url.Values) *cobra.Command {
		cc := &cobra.Command{
			Use:   name + " ID|NAME",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: withClient(func(ctx context.Context, c *client, args []string) error {
				d, err := lookup(ctx, c, args[0])
				if err != nil {
					return err
				}
				path := "/api/v1/desktops/" + d.ID + "/" + name
				if q := query(); len(q) > 0 {
					path += "?" + q.Encode()
				}
				if err := c.do(ctx, "POST", path, nil, d); err != nil {
					return err
				}
				return finish(ctx, c, d, wait)
			}),
		}
		addWait(cc)
		return cc
	}
	none := func() url.Values { return nil }
	var force bool
	var timeout int
	stop := op("stop", "Shut a desktop down (ACPI, forced after --timeout)", func() url.Values {
		q := url.Values{}
		if force {
			q.Set("force", "true")
		}
		if timeout > 0 {
			q.Set("timeout", fmt.Sprint(timeout))
		}
		return q
	})
	stop.Flags().BoolVar(&force, "force", false, "power off at once")
	stop.Flags().IntVar(&timeout, "timeout", 0, "seconds to wait for the guest before forcing (default 90)")

	var deleteData, keepRecordings bool
	del := &cobra.Command{
		Use:     "delete ID|NAME",
		Aliases: []string{"rm"},
		Short:   "Delete a desktop (its data disk is kept unless --delete-data; its recordings go but the kept ones unless --keep-recordings)",
		Args:    cobra.ExactArgs(1),
		RunE: withClient(func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var res apiv1.DeleteResult
			path := fmt.Sprintf("/api/v1/desktops/%s?delete_data=%t", d.ID, deleteData)
			if keepRecordings {
				path += "&keep_recordings=true"
			}
			if err := c.do(ctx, "DELETE", path, nil, &res); err != nil {
				return err
			}
			if res.DataDiskKept != "" {
				fmt.Printf("desktop %s deleted; its data disk is kept at %s\n", d.Name, res.DataDiskKept)
			} else {
				fmt.Printf("desktop %s deleted with its data disk\n", d.Name)
			}
			return nil
		}),
	}
	del.Flags().BoolVar(&deleteData, "delete-data", false, "also delete the data disk (the user's /home)")
	del.Flags().BoolVar(&keepRecordings, "keep-recordings", false, "keep all its screen recordings (bureau recording list --all reaches them)")

	events := &cobra.Command{
		Use:   "events ID|NAME",
		Short: "Show a desktop's history",
		Args:  cobra.ExactArgs(1),
		RunE: withClient(func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var out struct {
				Events []*apiv1.Event `json:"events"`
			}
			if err := c.do(ctx, "GET", "/api/v1/desktops/"+d.ID+"/events", nil, &out); err != nil {
				return err
			}
			for _, e := range out.Events {
				fmt.Printf("%s  %-18s %s  (%s)\n", e.CreatedAt.Local().Format("2006-01-02 15:04:05"), e.Type, e.Message, e.Actor)
			}
			return nil
		}),
	}
	cmd.AddCommand(create, list, get, waitCmd(cfg), op("start", "Start a stopped desktop", none), stop,
		op("reboot", "Reboot a running desktop", none), del, events,
		op("pause", "Freeze a running desktop (RAM stays in host memory)", none),
		op("resume", "Resume a paused or hibernated desktop", none),
		op("hibernate", "Save a desktop's RAM to disk and free its CPU and memory", none),
		snapshotCmd(cfg), reimageCmd(cfg), moveCmd(cfg), resizeCmd(cfg), idleCmd(cfg), idleTiersCmd(cfg), keyboardCmd(cfg), networkCmd(cfg), checkpointsCmd(cfg))
	cmd.AddCommand(guestCmds(cfg)...)
	cmd.AddCommand(windowCmds(cfg)...)
	cmd.AddCommand(peopleCmds(cfg)...)
	return cmd
}

// lookup finds a desktop by id, or else by name.
func lookup(ctx context.Context, c *client, ref string) (*apiv1.Desktop, error) {
	var d apiv1.Desktop
	err := c.do(ctx, "GET", "/api/v1/desktops/"+url.PathEscape(ref), nil, &d)
	if err == nil {
		return &d, nil
	}
	var out struct {
		Desktops []*apiv1.Desktop `json:"desktops"`
	}
	if lerr := c.do(ctx, "GET", "/api/v1/desktops", nil, &out); lerr != nil {
		return nil, err
	}
	for _, d := range out.Desktops {
		if d.Name == ref {
			return d, nil
		}
	}
	return nil, err
}

// finish prints the desktop, after waiting for its operation if asked
// (telling on stderr each phase it goes through).
func finish(ctx context.Context, c *client, d *apiv1.Desktop, wait time.Duration) error {
	if err := settle(ctx, c, d, wait, os.Stderr); err != nil {
		return err
	}
	return printJSON(d)
}

// settle waits up to wait (none when 0) for the desktop's operation to
// end, telling phasesTo each phase it goes through; d is kept up to date.
func settle(ctx context.Context, c *client, d *apiv1.Desktop, wait time.Duration, phasesTo io.Writer) error {
	return settleEvery(ctx, c, d, wait, 500*time.Millisecond, phasesTo)
}

// settleEvery is settle reading the desktop again every poll.
func settleEvery(ctx context.Context, c *client, d *apiv1.Desktop, wait, poll time.Duration, phasesTo io.Writer) error {
	if wait > 0 {
		deadline := time.Now().Add(wait)
		phases := newPhaseWatcher(phasesTo, time.Now)
		for !desktop.State(d.State).Settled() {
			phases.show(d)
			if time.Now().After(deadline) {
				return fmt.Errorf("desktop %s still %s after %s", d.Name, phase(d), wait)
			}
			time.Sleep(poll)
			// A fresh value: fields the server now leaves out (the
			// operation, once it ended) must not keep their old values.
			var now apiv1.Desktop
			if err := c.do(ctx, "GET", "/api/v1/desktops/"+d.ID, nil, &now); err != nil {
				return err
			}
			*d = now
		}
		phases.show(d)
		if d.State == string(desktop.StateError) {
			return fmt.Errorf("desktop %s: %s", d.Name, d.LastError)
		}
	}
	return nil
}

func printJSON(v any) error { return printJSONTo(os.Stdout, v) }

func printJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// placement is a create request's placement from its --place-label flags
// (nil without any); with --host too it is refused: that picks the host.
func placement(host string, flags []string) (*apiv1.PlacementRequest, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	if host != "" {
		return nil, errors.New("--host and --place-label: give one (--host names the host; --place-label lets bureau pick one by its labels)")
	}
	labels, err := keyValues("--place-label", "key=value", flags)
	if err != nil {
		return nil, err
	}
	for _, kv := range flags {
		if strings.HasPrefix(kv, "=") {
			return nil, fmt.Errorf("--place-label %q: want key=value (the key is empty)", kv)
		}
	}
	return &apiv1.PlacementRequest{Labels: labels}, nil
}
