package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/store"
	"github.com/spf13/cobra"
)

// Token commands work on this host's database directly.
func tokenCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke API tokens"}
	var req auth.CreateRequest
	var ttl time.Duration
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a token; its secret is printed once",
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, _ *slog.Logger, _ []string) error {
			req.TTL = ttl
			if req.DesktopID != "" {
				// A desktop token belongs to its desktop's owner.
				d, err := st.GetDesktop(ctx, req.DesktopID)
				if err != nil || d.DeletedAt != nil {
					return fmt.Errorf("desktop %q: %w", req.DesktopID, desktop.ErrNotFound)
				}
				req.Scope, req.Owner = desktop.ScopeDesktop, d.Owner
			}
			secret, tok, err := auth.New(st).Create(ctx, req)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "token %s for %s (%s) created; the secret is shown only now:\n", tok.ID, tok.Owner, tok.Scope)
			fmt.Println(secret)
			return nil
		}),
	}
	create.Flags().StringVar(&req.Owner, "owner", "", "owner the token acts for (required)")
	create.Flags().StringVar(&req.Name, "name", "", "a label for the token")
	create.Flags().StringVar(&req.Scope, "scope", desktop.ScopeOwner, "owner or admin (--desktop makes a desktop token)")
	create.Flags().StringVar(&req.DesktopID, "desktop", "", "reach only this desktop (id): the token to give its agent")
	create.Flags().BoolVar(&req.ComputerOnly, "computer-only", false, "with --desktop: only screenshots and mouse/keyboard")
	create.Flags().DurationVar(&ttl, "ttl", 0, "lifetime, e.g. 720h (0 = no expiry)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens",
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, _ *slog.Logger, _ []string) error {
			toks, err := auth.New(st).List(ctx, "")
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tOWNER\tSCOPE\tNAME\tCREATED\tSTATUS\tPARENT")
			for _, t := range toks {
				status := "active"
				if !t.Usable(time.Now()) {
					status = "revoked/expired"
				}
				parent := t.ParentID
				if parent == "" {
					parent = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Scope, t.Name, t.CreatedAt.Format(time.RFC3339), status, parent)
			}
			return w.Flush()
		}),
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token and every token minted from it",
		Args:  cobra.ExactArgs(1),
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, _ *slog.Logger, args []string) error {
			ids, err := auth.New(st).Revoke(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Printf("token %s revoked", args[0])
			if n := len(ids); n > 1 {
				fmt.Printf(", with %d tokens minted from it", n-1)
			}
			fmt.Println()
			return nil
		}),
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
