package main

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

func quotaCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "quota", Short: "Show and set owners' quotas (plans: free, team, unlimited, custom)"}
	get := &cobra.Command{
		Use:   "get [OWNER]",
		Short: "Show a quota and what it is used for (default: yours)",
		Args:  cobra.MaximumNArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			path := "/api/v1/quota"
			if len(args) == 1 {
				path = "/api/v1/quotas/" + args[0]
			}
			var out map[string]any
			if err := c.do(ctx, "GET", path, nil, &out); err != nil {
				return err
			}
			return printJSON(out)
		}),
	}
	var q apiv1.Quota
	set := &cobra.Command{
		Use:   "set OWNER",
		Short: "Give an owner a plan, or custom limits with --plan custom (admin)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			var out apiv1.Quota
			if err := c.do(ctx, "PUT", "/api/v1/quotas/"+args[0], q, &out); err != nil {
				return err
			}
			fmt.Printf("quota of %s: plan %s, %d desktops, %d vCPUs, %d MiB, %d GiB disk, %d snapshots (0 = no limit)\n",
				args[0], out.Plan, out.MaxDesktops, out.MaxVCPUs, out.MaxMemoryMiB, out.MaxDiskGiB, out.MaxSnapshots)
			return nil
		}),
	}
	f := set.Flags()
	f.StringVar(&q.Plan, "plan", "free", "free, team, unlimited or custom")
	f.IntVar(&q.MaxDesktops, "desktops", 0, "custom: most desktops")
	f.IntVar(&q.MaxVCPUs, "vcpus", 0, "custom: most vCPUs in total")
	f.IntVar(&q.MaxMemoryMiB, "memory", 0, "custom: most memory in MiB in total")
	f.IntVar(&q.MaxDiskGiB, "disk", 0, "custom: most disk (data disks and snapshots) in GiB")
	f.IntVar(&q.MaxSnapshots, "snapshots", 0, "custom: most snapshots of all the owner's desktops")
	cmd.AddCommand(get, set)
	return cmd
}
