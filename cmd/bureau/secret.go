package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// secretCmd is `bureau secret`: values kept encrypted by bureau and
// handed to services and commands that name them.
func secretCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "secret", Short: "Set, list and delete secrets (values never shown again)"}
	var on string
	path := func(ctx context.Context, c *client, name string) (string, error) {
		p := "/api/v1/secrets"
		if on != "" {
			d, err := lookup(ctx, c, on)
			if err != nil {
				return "", err
			}
			p = "/api/v1/desktops/" + d.ID + "/secrets"
		}
		if name != "" {
			p += "/" + url.PathEscape(name)
		}
		return p, nil
	}
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret from standard input (never from the command line, where it would stay in the shell's history)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			var value []byte
			var err error
			if term.IsTerminal(int(os.Stdin.Fd())) {
				fmt.Fprintf(os.Stderr, "value of %s (not shown): ", args[0])
				value, err = term.ReadPassword(int(os.Stdin.Fd()))
				fmt.Fprintln(os.Stderr)
			} else {
				value, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
			}
			if err != nil {
				return err
			}
			p, err := path(ctx, c, args[0])
			if err != nil {
				return err
			}
			var sec apiv1.Secret
			// One trailing newline (echo, a file) is not part of the value.
			v := strings.TrimSuffix(strings.TrimSuffix(string(value), "\n"), "\r")
			if err := c.do(ctx, "PUT", p, map[string]string{"value": v}, &sec); err != nil {
				return err
			}
			fmt.Printf("secret %s set (%s)\n", sec.Name, sec.Scope)
			return nil
		}),
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List secrets by name",
		Args:  cobra.NoArgs,
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
			p, err := path(ctx, c, "")
			if err != nil {
				return err
			}
			var out struct{ Secrets []apiv1.Secret }
			if err := c.do(ctx, "GET", p, nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSCOPE\tUPDATED")
			for _, s := range out.Secrets {
				fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, s.Scope, s.UpdatedAt.Local().Format("2006-01-02 15:04"))
			}
			return w.Flush()
		}),
	}
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a secret (services get it no more at their next start)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			p, err := path(ctx, c, args[0])
			if err != nil {
				return err
			}
			return c.do(ctx, "DELETE", p, nil, nil)
		}),
	}
	cmd.PersistentFlags().StringVar(&on, "desktop", "", "a desktop's own secret (name or id) rather than one for all your desktops")
	cmd.AddCommand(set, list, rm)
	return cmd
}
