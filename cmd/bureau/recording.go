package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/recording"
	"github.com/spf13/cobra"
)

// recordingCmd is `bureau recording`: recordings of a desktop's screen
// (WebM, made from the hypervisor's side).
func recordingCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "recording", Aliases: []string{"recordings", "rec"},
		Short: "Record a desktop's screen (WebM): start, stop, list, keep, download and delete its recordings"}
	cmd.AddCommand(recordingStartCmd(cfg), recordingStopCmd(cfg), recordingListCmd(cfg), recordingGetCmd(cfg),
		recordingDownloadCmd(cfg), recordingRmCmd(cfg), recordingKeepCmd(cfg, true), recordingKeepCmd(cfg, false))
	return cmd
}

// recordingView is a recording as the API shows it.
type recordingView struct {
	recording.Recording
	DurationMS int64  `json:"duration_ms"`
	VideoURL   string `json:"video_url,omitempty"`
}

// recordingsBase is the path of a desktop's recordings (the desktop by id
// or name).
func recordingsBase(ctx context.Context, c *client, ref string) (string, error) {
	d, err := lookup(ctx, c, ref)
	if err != nil {
		return "", err
	}
	return "/api/v1/desktops/" + d.ID + "/recordings", nil
}

// printRaw prints a JSON answer as it came, indented.
func printRaw(w io.Writer, raw json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

func recordingStartCmd(cfg *config.Config) *cobra.Command {
	var req struct {
		FPS        int `json:"fps,omitempty"`
		MaxSeconds int `json:"max_seconds,omitempty"`
	}
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "start DESKTOP",
		Short: "Start recording a desktop's screen, until stopped, --max-seconds, or the desktop stops running",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			base, err := recordingsBase(ctx, c, args[0])
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(ctx, "POST", base, req, &raw); err != nil {
				return err
			}
			return printRaw(cmd.OutOrStdout(), raw)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&req.FPS, "fps", 0, "how often the screen is looked at, 1 to 10 times a second (default: the server's, 2)")
	f.IntVar(&req.MaxSeconds, "max-seconds", 0, "end it after this many seconds (default and most: BUREAU_RECORDING_MAX_SECONDS)")
	return cmd
}

func recordingStopCmd(cfg *config.Config) *cobra.Command {
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "stop DESKTOP [RID]",
		Short: "Stop a recording (by default the one under way) and print it once its file is complete",
		Args:  cobra.RangeArgs(1, 2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			base, err := recordingsBase(ctx, c, args[0])
			if err != nil {
				return err
			}
			var rid string
			if len(args) == 2 {
				rid = args[1]
			} else if rid, err = recordingUnderWay(ctx, c, base, args[0]); err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(ctx, "POST", base+"/"+url.PathEscape(rid)+"/stop", nil, &raw); err != nil {
				return err
			}
			return printRaw(cmd.OutOrStdout(), raw)
		}),
	}
	return cmd
}

// listRecordings returns a desktop's recordings, oldest first, and the
// answer as it came.
func listRecordings(ctx context.Context, c *client, base string) ([]recordingView, json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.do(ctx, "GET", base, nil, &raw); err != nil {
		return nil, nil, err
	}
	var out struct {
		Recordings []recordingView `json:"recordings"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, err
	}
	return out.Recordings, raw, nil
}

// recordingUnderWay is the id of the desktop's recording under way.
func recordingUnderWay(ctx context.Context, c *client, base, ref string) (string, error) {
	list, _, err := listRecordings(ctx, c, base)
	if err != nil {
		return "", err
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].State == recording.StateRecording {
			return list[i].ID, nil
		}
	}
	return "", fmt.Errorf("no recording of %s is under way (bureau recording list %s)", ref, ref)
}

func recordingListCmd(cfg *config.Config) *cobra.Command {
	var asJSON, all bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "list DESKTOP | --all",
		Short: "List a desktop's recordings, or with --all every one of yours (deleted desktops' kept ones included), oldest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			if all == (len(args) == 1) {
				return fmt.Errorf("give a desktop, or --all for every recording of yours")
			}
			base := ownedRecordings
			if !all {
				var err error
				if base, err = recordingsBase(ctx, c, args[0]); err != nil {
					return err
				}
			}
			list, raw, err := listRecordings(ctx, c, base)
			if err != nil {
				return err
			}
			if asJSON {
				return printRaw(cmd.OutOrStdout(), raw)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			desk := func(*recordingView) string { return "" }
			if all {
				fmt.Fprint(w, "DESKTOP\t")
				desk = func(r *recordingView) string { return recordingDesktop(r) + "\t" }
			}
			fmt.Fprintln(w, "ID\tSTATE\tSTARTED\tDURATION\tFRAMES\tSIZE\tKEPT\tWHY")
			for _, r := range list {
				fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", desk(&r), r.ID, r.State, r.StartedAt.Local().Format(time.DateTime),
					recordingDuration(r.DurationMS), r.Frames, recordingSize(&r), yesOrNot(r.Kept), recordingWhy(&r))
			}
			return w.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer ({\"recordings\": […]}) as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "every recording of yours (an admin's: everyone's), those of deleted desktops included")
	return cmd
}

// recordingDuration reads e.g. 4.2s, 1m23s, 1h0m5s.
func recordingDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// recordingSize is the file's size (- while it is being written).
func recordingSize(r *recordingView) string {
	if r.State == recording.StateRecording {
		return "-"
	}
	return byteSize(r.SizeBytes)
}

// byteSize reads e.g. 512 B, 3.4 KiB, 12.0 MiB, 1.5 GiB.
func byteSize(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n)/(1<<10), "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1<<10 {
			break
		}
		f, unit = f/(1<<10), u
	}
	return fmt.Sprintf("%.1f %s", f, unit)
}

// recordingWhy is what ended a recording, and why it failed.
func recordingWhy(r *recordingView) string {
	s := shorten(oneLine(r.EndedWhy), 60)
	if r.Error != "" {
		e := "error: " + shorten(oneLine(r.Error), 100)
		if s == "" {
			return e
		}
		return s + " — " + e
	}
	return s
}

func recordingGetCmd(cfg *config.Config) *cobra.Command {
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "get [DESKTOP] RID",
		Short: "Print a recording (JSON); by RID alone, one of a deleted desktop too",
		Args:  cobra.RangeArgs(1, 2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := recordingPath(ctx, c, args)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(ctx, "GET", path, nil, &raw); err != nil {
				return err
			}
			return printRaw(cmd.OutOrStdout(), raw)
		}),
	}
	return cmd
}

func recordingDownloadCmd(cfg *config.Config) *cobra.Command {
	var out string
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "download [DESKTOP] RID -o FILE",
		Short: "Save a finished recording's video (WebM); by RID alone, one of a deleted desktop too",
		Args:  cobra.RangeArgs(1, 2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			if out == "" {
				return fmt.Errorf("say where to write it: -o FILE (- for standard output)")
			}
			path, err := recordingPath(ctx, c, args)
			if err != nil {
				return err
			}
			return download(ctx, c, path+"/video", out, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the video to this file (- for standard output)")
	return cmd
}

// download writes what a GET of path answers to the file out, whole or not
// at all (writeFileAtomic), or to stdout when out is "-".
func download(ctx context.Context, c *client, path, out string, stdout io.Writer) error {
	body, err := c.stream(ctx, "GET", path)
	if err != nil {
		return err
	}
	defer body.Close()
	if out == "-" {
		_, err = io.Copy(stdout, body)
		return err
	}
	return writeFileAtomic(out, body)
}

// writeFileAtomic writes r to a temporary file beside path and renames it
// to path once complete, so a download that fails leaves nothing
// half-written (and an older file at path as it was).
func writeFileAtomic(path string, r io.Reader) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = io.Copy(f, r); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func recordingRmCmd(cfg *config.Config) *cobra.Command {
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:     "rm [DESKTOP] RID",
		Aliases: []string{"delete"},
		Short:   "Delete a recording (stopping it first if under way) and its video; by RID alone, one of a deleted desktop too",
		Args:    cobra.RangeArgs(1, 2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path, err := recordingPath(ctx, c, args)
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", path, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recording %s deleted\n", args[len(args)-1])
			return nil
		}),
	}
	return cmd
}
