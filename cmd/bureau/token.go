package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), cfg, newLogger("text"))
			if err != nil {
				return err
			}
			defer st.Close()
			req.TTL = ttl
			secret, tok, err := auth.New(st).Create(cmd.Context(), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "token %s for %s (%s) created; the secret is shown only now:\n", tok.ID, tok.Owner, tok.Scope)
			fmt.Println(secret)
			return nil
		},
	}
	create.Flags().StringVar(&req.Owner, "owner", "", "owner the token acts for (required)")
	create.Flags().StringVar(&req.Name, "name", "", "a label for the token")
	create.Flags().StringVar(&req.Scope, "scope", desktop.ScopeOwner, "owner or admin")
	create.Flags().DurationVar(&ttl, "ttl", 0, "lifetime, e.g. 720h (0 = no expiry)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens",
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), cfg, newLogger("text"))
			if err != nil {
				return err
			}
			defer st.Close()
			toks, err := auth.New(st).List(cmd.Context(), "")
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tOWNER\tSCOPE\tNAME\tCREATED\tSTATUS")
			for _, t := range toks {
				status := "active"
				if !t.Usable(time.Now()) {
					status = "revoked/expired"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Scope, t.Name, t.CreatedAt.Format(time.RFC3339), status)
			}
			return w.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), cfg, newLogger("text"))
			if err != nil {
				return err
			}
			defer st.Close()
			if err := auth.New(st).Revoke(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Printf("token %s revoked\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
