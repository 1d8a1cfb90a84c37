package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// auditCmd is `bureau audit`: the audit log of state-changing calls and
// console sessions (docs/audit.md).
func auditCmd(cfg *config.Config) *cobra.Command {
	var desktopID, actor, action, outcome, since, owner string
	var limit int
	var all, asJSON, ndjson bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "audit",
		Short: "Who did what, when and from where: the audit log of state-changing calls and console sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
			q := url.Values{}
			for k, v := range map[string]string{"desktop": desktopID, "actor": actor, "action": action, "outcome": outcome, "owner": owner} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				q.Set("since", t.UTC().Format(time.RFC3339))
			}
			if asJSON && ndjson {
				return fmt.Errorf("--json and --ndjson: pick one")
			}
			if ndjson {
				q.Set("format", "ndjson")
				return c.download(ctx, "/api/v1/audit?"+q.Encode(), cmd.OutOrStdout())
			}
			q.Set("limit", strconv.Itoa(limit))
			page, err := auditPages(ctx, c, q, all)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(page)
			}
			if err := printAudit(cmd.OutOrStdout(), page.Entries); err != nil {
				return err
			}
			if page.NextCursor != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "(there are more: --all, or a larger --limit)")
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&desktopID, "desktop", "", "only what was done to this desktop (or other object) id")
	f.StringVar(&actor, "actor", "", "only what this token id did")
	f.StringVar(&owner, "owner", "", "only where this owner acted or was acted on (admins)")
	f.StringVar(&action, "action", "", "only these actions: a name or its start (desktop. or desktop.stop)")
	f.StringVar(&outcome, "outcome", "", "ok or error")
	f.StringVar(&since, "since", "", "only since then: a duration back (2h, 7d) or an RFC 3339 time")
	f.IntVar(&limit, "limit", 100, "entries a page (1 to 1000)")
	f.BoolVar(&all, "all", false, "every matching entry, page after page")
	f.BoolVar(&asJSON, "json", false, "print the entries as JSON")
	f.BoolVar(&ndjson, "ndjson", false, "print every matching entry as a line of JSON (the server's export)")
	return cmd
}

// auditPages reads one page, or with all every page, into one.
func auditPages(ctx context.Context, c *client, q url.Values, all bool) (*audit.Page, error) {
	out := &audit.Page{Entries: []*audit.Entry{}}
	for {
		var p audit.Page
		if err := c.do(ctx, "GET", "/api/v1/audit?"+q.Encode(), nil, &p); err != nil {
			return nil, err
		}
		out.Entries = append(out.Entries, p.Entries...)
		out.NextCursor = p.NextCursor
		if !all || p.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", p.NextCursor)
	}
}

// parseSince reads "2h", "7d" (back from now) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: want a duration back (2h, 30m, 7d) or an RFC 3339 time", s)
	}
	return now.Add(-d), nil
}

func printAudit(out io.Writer, entries []*audit.Entry) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tWHO\tCLIENT\tACTION\tOBJECT\tOUTCOME")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format(time.DateTime), auditWho(e), orDash(e.ClientIP),
			e.Action, orDash(auditObject(e)), auditOutcome(e))
	}
	return w.Flush()
}

func auditWho(e *audit.Entry) string {
	switch {
	case e.Person != "":
		return e.Person + " (" + e.Owner + "'s console link)"
	case e.Owner == "":
		return "(not authenticated)"
	case e.TokenName != "":
		return e.Owner + "/" + e.TokenName
	}
	return e.Owner + "/" + e.TokenID
}

func auditObject(e *audit.Entry) string {
	if e.ObjectType == "" || e.ObjectType == "desktop" && e.ObjectID == e.DesktopID {
		return e.DesktopID
	}
	s := e.ObjectType + " " + e.ObjectID
	if e.DesktopID != "" {
		s += " of " + e.DesktopID
	}
	return s
}

func auditOutcome(e *audit.Entry) string {
	if !e.Failed() {
		return "ok " + strconv.Itoa(e.Status)
	}
	return strings.TrimSpace("error " + strconv.Itoa(e.Status) + " " + e.ErrorCode)
}

// download copies a GET's body to w as it comes (an export).
func (c *client) download(ctx context.Context, path string, w io.Writer) error {
	body, err := c.stream(ctx, "GET", path)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(w, body)
	return err
}
