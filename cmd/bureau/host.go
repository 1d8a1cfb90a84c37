package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

func hostCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "host", Short: "The libvirt hosts desktops run on (admin; more than one needs PostgreSQL)"}
	var labels []string
	add := &cobra.Command{
		Use:   "add NAME URI",
		Short: "Add a host once its libvirtd answers (URI: qemu+ssh://user@host/system, qemu+tls://host/system)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			req := struct {
				Name   string            `json:"name"`
				URI    string            `json:"uri"`
				Labels map[string]string `json:"labels,omitempty"`
			}{Name: args[0], URI: args[1]}
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
	list := &cobra.Command{
		Use:   "list",
		Short: "List hosts with their state and capacity",
		Args:  cobra.NoArgs,
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
			var out struct{ Hosts []apiv1.Host }
			if err := c.do(ctx, "GET", "/api/v1/hosts", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tACCEL\tCPUS\tMEMORY\tFREE\tURI\tLABELS\tERROR")
			for _, h := range out.Hosts {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d MiB\t%d MiB\t%s\t%s\t%s\n", h.Name, h.State, h.Accelerator, h.CPUs, h.MemoryMiB, h.FreeMemoryMiB,
					h.URI, labelList(h.Labels), h.LastError)
			}
			return w.Flush()
		}),
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one host",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			var h apiv1.Host
			if err := c.do(ctx, "GET", "/api/v1/hosts/"+url.PathEscape(args[0]), nil, &h); err != nil {
				return err
			}
			return printJSON(h)
		}),
	}
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
	cmd.AddCommand(add, list, show, remove)
	return cmd
}

func labelList(l map[string]string) string {
	var out []string
	for k, v := range l {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
