package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

func templateCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "template", Short: "Warm templates: desktops saved with their RAM so new ones start in seconds"}
	var req struct {
		Image     string `json:"image,omitempty"`
		VCPUs     int    `json:"vcpus"`
		MemoryMiB int    `json:"memory_mib"`
	}
	var wait time.Duration
	build := &cobra.Command{
		Use:   "build",
		Short: "Boot a desktop of an image and size once and save it (admin)",
		Args:  cobra.NoArgs,
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
			var t apiv1.Template
			if err := c.do(ctx, "POST", "/api/v1/templates", req, &t); err != nil {
				return err
			}
			deadline := time.Now().Add(wait)
			for t.State == "building" && time.Now().Before(deadline) {
				time.Sleep(5 * time.Second)
				var list struct{ Templates []apiv1.Template }
				if err := c.do(ctx, "GET", "/api/v1/templates", nil, &list); err != nil {
					return err
				}
				for _, x := range list.Templates {
					if x.Key == t.Key {
						t = x
					}
				}
			}
			if t.State == "failed" {
				return fmt.Errorf("template %s: %s", t.Key, t.Error)
			}
			return printJSON(t)
		}),
	}
	build.Flags().StringVar(&req.Image, "image", "", "image (default: the server's default)")
	build.Flags().IntVar(&req.VCPUs, "vcpus", 2, "vCPUs of the desktops it serves")
	build.Flags().IntVar(&req.MemoryMiB, "memory", 4096, "memory in MiB of the desktops it serves")
	build.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until it is ready (e.g. 15m)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List templates",
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
			var out struct{ Templates []apiv1.Template }
			if err := c.do(ctx, "GET", "/api/v1/templates", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tIMAGE\tVCPUS\tMEMORY\tSTATE\tBUILT IN\tSPARES")
			for _, t := range out.Templates {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d MiB\t%s\t%s\t%d\n", t.Key, t.Image, t.VCPUs, t.MemoryMiB, t.State, t.BuildTime, t.Spares)
			}
			return w.Flush()
		}),
	}
	cmd.AddCommand(build, list)
	return cmd
}
