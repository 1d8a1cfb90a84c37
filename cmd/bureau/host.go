package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

func hostCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "host", Short: "The libvirt hosts desktops run on (admin; more than one needs PostgreSQL)"}
	var labels []string
	var target struct {
		SSHAddress string `json:"ssh_address,omitempty"`
		SSHHostKey string `json:"ssh_host_key,omitempty"`
		Bridge     string `json:"bridge,omitempty"`
		Subnet     string `json:"subnet,omitempty"`
	}
	add := &cobra.Command{
		Use:   "add NAME URI",
		Short: "Add a host once its libvirtd answers and bureau made it ready (URI: qemu+ssh://user@host/system, qemu+tls://host/system)",
		Long: `Add a host once its libvirtd answers and bureau made it ready for desktops:
bureau signs in to it over SSH too (its firewall and consoles do not go
through libvirt), with its own key (see "bureau host key") and the host's
key pinned (--ssh-host-key; left out, the refusal shows the key the host
offered, to check and pass), then puts its desktop network and firewall there.`,
		Args: cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			req := struct {
				Name       string            `json:"name"`
				URI        string            `json:"uri"`
				Labels     map[string]string `json:"labels,omitempty"`
				SSHAddress string            `json:"ssh_address,omitempty"`
				SSHHostKey string            `json:"ssh_host_key,omitempty"`
				Bridge     string            `json:"bridge,omitempty"`
				Subnet     string            `json:"subnet,omitempty"`
			}{Name: args[0], URI: args[1], SSHAddress: target.SSHAddress, SSHHostKey: target.SSHHostKey, Bridge: target.Bridge, Subnet: target.Subnet}
			var err error
			if req.Labels, err = keyValues("--label", "key=value", labels); err != nil {
				return err
			}
			var h apiv1.Host
			if err := c.do(ctx, "POST", "/api/v1/hosts", req, &h); err != nil {
				return err
			}
			return printJSON(h)
		}),
	}
	add.Flags().StringArrayVar(&labels, "label", nil, "a label key=value (repeatable)")
	add.Flags().StringVar(&target.SSHAddress, "ssh", "", "user@host[:port] bureau signs in to (default: from a qemu+ssh URI, root, port 22)")
	add.Flags().StringVar(&target.SSHHostKey, "ssh-host-key", "", `the host's SSH key to pin, e.g. "ssh-ed25519 AAAA…" (its /etc/ssh/ssh_host_ed25519_key.pub)`)
	add.Flags().StringVar(&target.Bridge, "bridge", "", "the bridge of bureau's desktop network on the host (default: the local host's)")
	add.Flags().StringVar(&target.Subnet, "subnet", "", "the desktops' subnet on the host, e.g. 10.121.0.0/16 (default: the local host's)")
	key := &cobra.Command{
		Use:   "key",
		Short: "Print the SSH key bureau signs in to remote hosts with (add it to the host's authorized_keys)",
		Args:  cobra.NoArgs,
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
			var out struct {
				Key string `json:"ssh_public_key"`
			}
			if err := c.do(ctx, "GET", "/api/v1/hosts", nil, &out); err != nil {
				return err
			}
			fmt.Println(out.Key)
			return nil
		}),
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List hosts with their state and capacity",
		Long: `List hosts with their state and capacity: the live desktops placed there,
the memory of those holding RAM now (committed) of the host's total, the
host's free memory as it reports it, and the free space of the filesystem
holding bureau's data directory there ("-": not measured yet).`,
		Args: cobra.NoArgs,
	}
	list.RunE = runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
		var out struct{ Hosts []apiv1.Host }
		if err := c.do(ctx, "GET", "/api/v1/hosts", nil, &out); err != nil {
			return err
		}
		return hostTable(list.OutOrStdout(), out.Hosts)
	})
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one host, every field as JSON",
		Args:  cobra.ExactArgs(1),
	}
	show.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var h apiv1.Host
		if err := c.do(ctx, "GET", "/api/v1/hosts/"+url.PathEscape(args[0]), nil, &h); err != nil {
			return err
		}
		return printJSONTo(show.OutOrStdout(), h)
	})
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Forget a host (the local one stays)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			if err := c.do(ctx, "DELETE", "/api/v1/hosts/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("host %s removed\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(add, list, show, remove, key)
	cmd.AddCommand(drainCmds(cfg)...)
	return cmd
}

// hostTable writes hosts as a table, sizes in GiB.
func hostTable(out io.Writer, hs []apiv1.Host) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATE\tREADY\tACCEL\tCPUS\tDESKTOPS\tCOMMITTED/MEMORY\tFREE-MEMORY\tFREE/DISK\tURI\tLABELS\tERROR")
	for _, h := range hs {
		ready := "yes"
		if !h.Ready {
			ready = "no"
		}
		state := h.State
		if h.Draining {
			state += ",draining"
		}
		free := "-"
		if h.MemoryMiB > 0 {
			free = gib(h.FreeMemoryMiB) + " GiB"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, state, ready, h.Accelerator, h.CPUs, h.Desktops,
			ofTotal(h.CommittedMemoryMiB, h.MemoryMiB), free, ofTotal(h.FreeDiskMiB, h.DiskMiB), h.URI, labelList(h.Labels),
			strings.TrimSpace(h.LastError+" "+h.ReadyError))
	}
	return w.Flush()
}

// ofTotal is "part/total GiB"; "-" for a total not known yet.
func ofTotal(part, total int64) string {
	switch {
	case total > 0:
		return gib(part) + "/" + gib(total) + " GiB"
	case part > 0:
		return gib(part) + "/- GiB"
	}
	return "-"
}

// gib writes MiB as GiB with one decimal.
func gib(mib int64) string { return strconv.FormatFloat(float64(mib)/1024, 'f', 1, 64) }

func labelList(l map[string]string) string {
	var out []string
	for k, v := range l {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
