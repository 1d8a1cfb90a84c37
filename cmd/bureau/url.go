package main

import (
	"context"
	"fmt"
	"github.com/bureau/bureau/internal/api/apiv1"
	"net/url"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// urlCmd is `bureau url`: desktops' live URLs, share links and public
// ports.
func urlCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "url", Short: "Live URLs of a desktop's ports: list, open, share, make public"}
	list := &cobra.Command{
		Use:   "ls DESKTOP",
		Short: "List a desktop's live URLs (service ports, public and shared ports)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var out struct{ URLs []apiv1.URL }
			if err := c.do(ctx, "GET", "/api/v1/desktops/"+d.ID+"/urls", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "PORT\tSERVICE\tACCESS\tSHARES\tURL")
			for _, u := range out.URLs {
				access := "private"
				if u.Public {
					access = "PUBLIC"
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\n", u.Port, u.Service, access, u.Shares, firstOf(u.URL, u.PathURL))
			}
			return w.Flush()
		}),
	}
	open := &cobra.Command{
		Use:   "open DESKTOP PORT",
		Short: "Print a one-time link (a minute) that signs a browser in to a port's private URL as you",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, port, err := desktopPort(ctx, c, args)
			if err != nil {
				return err
			}
			var out struct{ URL string }
			if err := c.do(ctx, "POST", "/api/v1/desktops/"+d+"/urls/"+port+"/open", nil, &out); err != nil {
				return err
			}
			fmt.Println(out.URL)
			return nil
		}),
	}
	var hours float64
	var readOnly bool
	share := &cobra.Command{
		Use:   "share DESKTOP PORT",
		Short: "Make a share link to a port's URL for someone without an account (shown once)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, port, err := desktopPort(ctx, c, args)
			if err != nil {
				return err
			}
			p, _ := strconv.Atoi(port)
			var out apiv1.ShareCreated
			req := map[string]any{"port": p, "ttl_s": int(hours * 3600), "read_only": readOnly}
			if err := c.do(ctx, "POST", "/api/v1/desktops/"+d+"/shares", req, &out); err != nil {
				return err
			}
			fmt.Println(firstOf(out.URL, out.PathURL))
			fmt.Fprintf(os.Stderr, "share link %s, valid until %s; it is not shown again (revoke: bureau url revoke %s %s)\n",
				out.Share.ID, out.Share.ExpiresAt.Local().Format(time.DateTime), args[0], out.Share.ID)
			return nil
		}),
	}
	share.Flags().Float64Var(&hours, "hours", 24, "how long the link works (at most 720)")
	share.Flags().BoolVar(&readOnly, "read-only", false, "allow only GET and HEAD")
	shares := &cobra.Command{
		Use:   "shares DESKTOP",
		Short: "List a desktop's share links",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var out struct{ Shares []apiv1.Share }
			if err := c.do(ctx, "GET", "/api/v1/desktops/"+d.ID+"/shares", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tPORT\tREAD-ONLY\tSTATE")
			for _, l := range out.Shares {
				state := "until " + l.ExpiresAt.Local().Format(time.DateTime)
				switch {
				case l.RevokedAt != nil:
					state = "revoked"
				case time.Now().After(l.ExpiresAt):
					state = "expired"
				}
				fmt.Fprintf(w, "%s\t%d\t%t\t%s\n", l.ID, l.Port, l.ReadOnly, state)
			}
			return w.Flush()
		}),
	}
	revoke := &cobra.Command{
		Use:   "revoke DESKTOP SHARE",
		Short: "Revoke a share link: browsers it let in lose access at once",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			return c.do(ctx, "DELETE", "/api/v1/desktops/"+d.ID+"/shares/"+url.PathEscape(args[1]), nil, nil)
		}),
	}
	public := &cobra.Command{
		Use:   "public DESKTOP PORT on|off",
		Short: "Make a port's URL public (anyone with the URL) or private again",
		Args:  cobra.ExactArgs(3),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			on := map[string]bool{"on": true, "off": false}
			v, ok := on[args[2]]
			if !ok {
				return fmt.Errorf("say on or off, not %q", args[2])
			}
			d, port, err := desktopPort(ctx, c, args)
			if err != nil {
				return err
			}
			var out struct {
				URL     string `json:"url"`
				PathURL string `json:"path_url"`
			}
			if err := c.do(ctx, "PUT", "/api/v1/desktops/"+d+"/urls/"+port, map[string]bool{"public": v}, &out); err != nil {
				return err
			}
			if v {
				fmt.Printf("public: anyone with %s can open it\n", firstOf(out.URL, out.PathURL))
			} else {
				fmt.Println("private")
			}
			return nil
		}),
	}
	cmd.AddCommand(list, open, share, shares, revoke, public)
	return cmd
}

// desktopPort resolves DESKTOP PORT arguments.
func desktopPort(ctx context.Context, c *client, args []string) (id, port string, err error) {
	p, err := strconv.Atoi(args[1])
	if err != nil || p < 1 || p > 65535 {
		return "", "", fmt.Errorf("port %q: want 1..65535", args[1])
	}
	d, err := lookup(ctx, c, args[0])
	if err != nil {
		return "", "", err
	}
	return d.ID, strconv.Itoa(p), nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
