package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// teamCmd is "bureau team": teams, their members and roles, and team
// tokens (docs/teams.md).
func teamCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "team", Aliases: []string{"teams"}, Short: "Teams: members with roles (admin, member, viewer) sharing desktops"}
	path := func(name string, rest ...string) string {
		p := "/api/v1/teams/" + url.PathEscape(name)
		for _, r := range rest {
			p += "/" + url.PathEscape(r)
		}
		return p
	}

	create := &cobra.Command{Use: "create NAME", Short: "Create a team; you become its first admin", Args: cobra.ExactArgs(1)}
	create.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "POST", "/api/v1/teams", map[string]any{"name": args[0]}, nil); err != nil {
			return err
		}
		fmt.Fprintf(create.OutOrStdout(), "team %s created; you are its admin\n", args[0])
		return nil
	})

	list := &cobra.Command{Use: "list", Short: "List your teams and your role in each", Args: cobra.NoArgs}
	list.RunE = runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
		var out struct{ Teams []apiv1.TeamSummary }
		if err := c.do(ctx, "GET", "/api/v1/teams", nil, &out); err != nil {
			return err
		}
		w := tabwriter.NewWriter(list.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TEAM\tYOUR ROLE\tMEMBERS\tCREATED")
		for _, t := range out.Teams {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", t.Name, t.Role, t.Members, t.CreatedAt.Local().Format(time.DateTime))
		}
		return w.Flush()
	})

	show := &cobra.Command{Use: "show TEAM", Short: "Show a team's members and their roles", Args: cobra.ExactArgs(1)}
	show.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var t apiv1.Team
		if err := c.do(ctx, "GET", path(args[0]), nil, &t); err != nil {
			return err
		}
		return teamTable(show.OutOrStdout(), &t)
	})

	var role string
	add := &cobra.Command{Use: "add TEAM MEMBER --role ROLE", Aliases: []string{"set"},
		Short: "Add a member (an owner name, e.g. the email they sign in with) or change their role", Args: cobra.ExactArgs(2)}
	add.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "PUT", path(args[0], "members", args[1]), map[string]any{"role": role}, nil); err != nil {
			return err
		}
		fmt.Fprintf(add.OutOrStdout(), "%s is a %s of %s\n", args[1], role, args[0])
		return nil
	})
	add.Flags().StringVar(&role, "role", "member", "admin, member or viewer")

	remove := &cobra.Command{Use: "remove TEAM MEMBER", Aliases: []string{"rm"},
		Short: "Remove a member (their team tokens are revoked); yourself to leave", Args: cobra.ExactArgs(2)}
	remove.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "DELETE", path(args[0], "members", args[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(remove.OutOrStdout(), "%s removed from %s\n", args[1], args[0])
		return nil
	})

	del := &cobra.Command{Use: "delete TEAM", Short: "Delete a team that owns no desktops (its tokens are revoked)", Args: cobra.ExactArgs(1)}
	del.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "DELETE", path(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(del.OutOrStdout(), "team %s deleted\n", args[0])
		return nil
	})

	var name string
	var ttl time.Duration
	tokenRole := ""
	token := &cobra.Command{Use: "token TEAM", Short: "Mint a team token to act for TEAM (at your role or less); its secret is printed once",
		Args: cobra.ExactArgs(1)}
	token.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		body := map[string]any{"owner": args[0], "name": name, "ttl_seconds": int64(ttl / time.Second)}
		if tokenRole != "" {
			body["role"] = tokenRole
		}
		var out struct {
			Token string
			Info  struct{ ID, Owner, Role string }
		}
		if err := c.do(ctx, "POST", "/api/v1/tokens", body, &out); err != nil {
			return err
		}
		fmt.Fprintf(token.ErrOrStderr(), "token %s acts for %s as %s; the secret is shown only now:\n", out.Info.ID, out.Info.Owner, out.Info.Role)
		fmt.Fprintln(token.OutOrStdout(), out.Token)
		return nil
	})
	token.Flags().StringVar(&name, "name", "", "a label for the token")
	token.Flags().StringVar(&tokenRole, "role", "", "viewer, member or admin (default: your role in the team)")
	token.Flags().DurationVar(&ttl, "ttl", 0, "lifetime, e.g. 720h (0 = no expiry)")

	cmd.AddCommand(create, list, show, add, remove, del, token)
	return cmd
}

func teamTable(out io.Writer, t *apiv1.Team) error {
	fmt.Fprintf(out, "team %s (created %s by %s; your role: %s)\n", t.Name, t.CreatedAt.Local().Format(time.DateTime), t.CreatedBy, t.Role)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MEMBER\tROLE\tADDED\tBY")
	for _, m := range t.Members {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.Member, m.Role, m.AddedAt.Local().Format(time.DateTime), m.AddedBy)
	}
	return w.Flush()
}
