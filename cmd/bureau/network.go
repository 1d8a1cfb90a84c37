package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// networkCmd shows or replaces a desktop's egress policy.
func networkCmd(cfg *config.Config) *cobra.Command {
	var allow, deny []string
	var reset, noDNS bool
	cmd := &cobra.Command{
		Use:   "network DESKTOP [--allow-out X]… [--deny-out X]… [--deny-dns] [--default]",
		Short: "Show or set what a desktop may reach outside (IPv4 CIDRs, addresses, host names)",
		Long: `Without flags, shows the desktop's network policy. With flags, replaces it
(on a running desktop too, at once). A desktop never reaches the host or other
desktops; by default it reaches the internet and nothing private. An allow wins
over a deny: --deny-out 0.0.0.0/0 --allow-out api.example.com is an allow-list
(add --deny-dns so it cannot be tunnelled through DNS). Private ranges are an
admin's to open; cloud metadata (link-local) nobody's.`,
		Args: cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			if reset || len(allow) > 0 || len(deny) > 0 || noDNS {
				p := apiv1.NetworkPolicy{AllowOut: allow, DenyOut: deny, DenyDNS: noDNS}
				if err := c.do(ctx, "PATCH", "/api/v1/desktops/"+d.ID, map[string]any{"network": p}, d); err != nil {
					return err
				}
			}
			fmt.Printf("allow out: %s\ndeny out:  %s\ndns:       %s\n", orNone(d.Network.AllowOut), orNone(d.Network.DenyOut),
				map[bool]string{false: "the gateway's", true: "denied"}[d.Network.DenyDNS])
			return nil
		}),
	}
	cmd.Flags().StringArrayVar(&allow, "allow-out", nil, "CIDR, address or host name the desktop may reach (repeatable)")
	cmd.Flags().StringArrayVar(&deny, "deny-out", nil, "CIDR, address or host name the desktop may not reach (repeatable)")
	cmd.Flags().BoolVar(&noDNS, "deny-dns", false, "drop the desktop's DNS too (for allow-lists)")
	cmd.Flags().BoolVar(&reset, "default", false, "back to the default policy (the internet, nothing private)")
	return cmd
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, ", ")
}
