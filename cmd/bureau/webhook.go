package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/webhooks"
	"github.com/spf13/cobra"
)

// webhookCmd is "bureau webhook": endpoints that get desktops' events as
// signed POSTs (docs/webhooks.md).
func webhookCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "webhook", Aliases: []string{"webhooks"},
		Short: "Send desktops' events to HTTP endpoints, signed (Standard Webhooks)"}
	path := func(id string, rest ...string) string {
		p := "/api/v1/webhooks/" + url.PathEscape(id)
		for _, r := range rest {
			p += "/" + url.PathEscape(r)
		}
		return p
	}

	var events []string
	var description string
	var allOwners bool
	add := &cobra.Command{
		Use:   "add URL --event TYPE [--event TYPE…]",
		Short: "Register an endpoint; its secret is printed this once",
		Long: `Register an endpoint: bureau POSTs each event of your desktops whose type
matches an --event (a type such as desktop.started, a family such as
desktop.* or help.*, or * for all) to URL, signed with the secret printed
now and never again. See docs/webhooks.md for the types and how to verify
the signature.`,
		Args: cobra.ExactArgs(1),
	}
	add.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		body := map[string]any{"url": args[0], "events": events, "description": description}
		if allOwners {
			body["all_owners"] = true
		}
		var out struct {
			webhooks.Endpoint
			Secret string `json:"secret"`
		}
		if err := c.do(ctx, "POST", "/api/v1/webhooks", body, &out); err != nil {
			return err
		}
		w := add.OutOrStdout()
		fmt.Fprintf(w, "webhook %s added: %s gets %s\n", out.ID, out.URL, strings.Join(out.Events, ", "))
		fmt.Fprintf(w, "secret (shown once; verify webhook-signature with it): %s\n", out.Secret)
		return nil
	})
	add.Flags().StringArrayVar(&events, "event", nil, "an event type or pattern (repeat): desktop.*, help.*, desktop.stopped, *")
	add.Flags().StringVar(&description, "description", "", "what the endpoint is for")
	add.Flags().BoolVar(&allOwners, "all-owners", false, "every owner's events (admin)")
	add.MarkFlagRequired("event")

	var owner string
	list := &cobra.Command{Use: "list", Short: "List endpoints", Args: cobra.NoArgs}
	list.RunE = runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
		p := "/api/v1/webhooks"
		if owner != "" {
			p += "?owner=" + url.QueryEscape(owner)
		}
		var out struct{ Webhooks []*webhooks.Endpoint }
		if err := c.do(ctx, "GET", p, nil, &out); err != nil {
			return err
		}
		return webhookTable(list.OutOrStdout(), out.Webhooks)
	})
	list.Flags().StringVar(&owner, "owner", "", "one owner's endpoints (admin)")

	show := &cobra.Command{Use: "show ID", Short: "Show an endpoint", Args: cobra.ExactArgs(1)}
	show.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var e webhooks.Endpoint
		if err := c.do(ctx, "GET", path(args[0]), nil, &e); err != nil {
			return err
		}
		return printJSONTo(show.OutOrStdout(), &e)
	})

	rm := &cobra.Command{Use: "rm ID", Aliases: []string{"delete"}, Short: "Delete an endpoint and its delivery log", Args: cobra.ExactArgs(1)}
	rm.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "DELETE", path(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(rm.OutOrStdout(), "webhook %s deleted\n", args[0])
		return nil
	})

	enable := func(on bool) *cobra.Command {
		verb := map[bool]string{true: "enable", false: "disable"}[on]
		c := &cobra.Command{Use: verb + " ID", Short: strings.ToUpper(verb[:1]) + verb[1:] + " an endpoint", Args: cobra.ExactArgs(1)}
		c.RunE = runWithClient(cfg, func(ctx context.Context, cl *client, args []string) error {
			var e webhooks.Endpoint
			if err := cl.do(ctx, "PATCH", path(args[0]), map[string]bool{"enabled": on}, &e); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "webhook %s %sd\n", e.ID, verb)
			return nil
		})
		return c
	}

	ping := &cobra.Command{Use: "ping ID", Short: "Send a webhook.ping message", Args: cobra.ExactArgs(1)}
	ping.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var d webhooks.Delivery
		if err := c.do(ctx, "POST", path(args[0], "ping"), nil, &d); err != nil {
			return err
		}
		fmt.Fprintf(ping.OutOrStdout(), "ping queued: delivery %s (message %s); see bureau webhook deliveries %s\n", d.ID, d.MessageID, args[0])
		return nil
	})

	var status string
	var limit int
	deliveries := &cobra.Command{Use: "deliveries ID", Short: "List an endpoint's deliveries, newest first", Args: cobra.ExactArgs(1)}
	deliveries.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		q := url.Values{}
		if status != "" {
			q.Set("status", status)
		}
		if limit > 0 {
			q.Set("limit", fmt.Sprint(limit))
		}
		p := path(args[0], "deliveries")
		if len(q) > 0 {
			p += "?" + q.Encode()
		}
		var out struct{ Deliveries []*webhooks.Delivery }
		if err := c.do(ctx, "GET", p, nil, &out); err != nil {
			return err
		}
		return deliveryTable(deliveries.OutOrStdout(), out.Deliveries)
	})
	deliveries.Flags().StringVar(&status, "status", "", "pending, delivered or failed")
	deliveries.Flags().IntVar(&limit, "limit", 0, "at most this many (default 50)")

	redeliver := &cobra.Command{Use: "redeliver ID DELIVERY", Short: "Send a delivery's message again (same message id)", Args: cobra.ExactArgs(2)}
	redeliver.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var d webhooks.Delivery
		if err := c.do(ctx, "POST", path(args[0], "deliveries", args[1], "redeliver"), nil, &d); err != nil {
			return err
		}
		fmt.Fprintf(redeliver.OutOrStdout(), "redelivery queued: delivery %s (message %s)\n", d.ID, d.MessageID)
		return nil
	})

	rotate := &cobra.Command{Use: "rotate-secret ID", Short: "Give an endpoint a new secret (the old one signs too for 24 h)", Args: cobra.ExactArgs(1)}
	rotate.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var out struct {
			webhooks.Endpoint
			Secret string `json:"secret"`
		}
		if err := c.do(ctx, "POST", path(args[0], "rotate-secret"), nil, &out); err != nil {
			return err
		}
		until := ""
		if out.PreviousSecretUntil != nil {
			until = " until " + out.PreviousSecretUntil.Local().Format(time.DateTime)
		}
		fmt.Fprintf(rotate.OutOrStdout(), "new secret (shown once): %s\nmessages are signed with the old secret too%s\n", out.Secret, until)
		return nil
	})

	cmd.AddCommand(add, list, show, rm, enable(true), enable(false), ping, deliveries, redeliver, rotate)
	return cmd
}

func webhookTable(out io.Writer, list []*webhooks.Endpoint) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tOWNER\tURL\tEVENTS\tSTATE")
	for _, e := range list {
		state := "enabled"
		switch {
		case !e.Enabled:
			state = "disabled: " + e.DisabledReason
		case e.FailingSince != nil:
			state = fmt.Sprintf("failing since %s (%d)", e.FailingSince.Local().Format(time.DateTime), e.Failures)
		}
		events := strings.Join(e.Events, ",")
		if e.AllOwners {
			events += " (all owners)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.Owner, e.URL, events, state)
	}
	return w.Flush()
}

func deliveryTable(out io.Writer, list []*webhooks.Delivery) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTYPE\tSTATUS\tATTEMPTS\tCODE\tMS\tCREATED\tNEXT\tERROR")
	for _, d := range list {
		next := ""
		if d.NextAttemptAt != nil && d.Status == webhooks.StatusPending {
			next = d.NextAttemptAt.Local().Format(time.DateTime)
		}
		code := ""
		if d.ResponseCode != 0 {
			code = fmt.Sprint(d.ResponseCode)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", d.ID, d.EventType, d.Status, d.Attempts, code, d.LatencyMS,
			d.CreatedAt.Local().Format(time.DateTime), next, d.LastError)
	}
	return w.Flush()
}
