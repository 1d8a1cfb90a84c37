package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/loop"
	"github.com/spf13/cobra"
)

// Help and approval requests: bureau desktop help asks, bureau requests
// lists, bureau request shows, answers, approves and denies.

func requestPath(desktopID, rid string) string {
	return "/api/v1/desktops/" + url.PathEscape(desktopID) + "/requests/" + url.PathEscape(rid)
}

// awaitRequest waits until deadline for rq to be decided, the API doing
// the waiting in calls of at most requestSlice; rq is kept up to date.
func awaitRequest(ctx context.Context, c *client, rq *apiv1.Request, deadline time.Time) error {
	for rq.Status == loop.StatusPending && time.Until(deadline) >= time.Second {
		asked := time.Now()
		n := min(time.Until(deadline), requestSlice).Round(time.Second)
		var now apiv1.Request
		if err := c.do(ctx, "GET", requestPath(rq.DesktopID, rq.ID)+"?wait_s="+strconv.Itoa(int(n.Seconds())), nil, &now); err != nil {
			return err
		}
		*rq = now
		if rq.Status != loop.StatusPending {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(readyPace-time.Since(asked), time.Until(deadline))):
		}
	}
	return nil
}

// firstWait is the wait_s of the call that makes a request (0: none).
func firstWait(wait time.Duration) int {
	return int(min(wait, requestSlice).Round(time.Second).Seconds())
}

func helpCmd(cfg *config.Config) *cobra.Command {
	var choices []string
	var screenshot, asJSON bool
	var wait, timeout time.Duration
	cmd := &cobra.Command{
		Use:   `help ID|NAME "QUESTION"`,
		Short: "Ask the people watching a desktop a question (they answer in the console, or with bureau request answer)",
		Long: `Ask a question about a desktop (--choice: answers to pick from, up to 10;
--screenshot: the screen as it is now goes with it). It stays open --timeout
(default 1h). With --wait, waits that long for the answer and prints it;
without, prints the request's id ("bureau request show DESKTOP ID --wait 5m"
waits for it).`,
		Args: cobra.ExactArgs(2),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		began := time.Now()
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		body := map[string]any{"question": args[1]}
		if len(choices) > 0 {
			body["choices"] = choices
		}
		if screenshot {
			body["screenshot"] = true
		}
		if timeout > 0 {
			body["timeout_s"] = int(timeout.Round(time.Second).Seconds())
		}
		if n := firstWait(wait); n > 0 {
			body["wait_s"] = n
		}
		var rq apiv1.Request
		if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/help", body, &rq); err != nil {
			return err
		}
		if err := awaitRequest(ctx, c, &rq, began.Add(wait)); err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		switch {
		case asJSON:
			return printJSONTo(out, &rq)
		case rq.Status == loop.StatusAnswered:
			_, err := fmt.Fprintln(out, rq.Answer)
			return err
		case rq.Status != loop.StatusPending:
			return fmt.Errorf("request %s %s: nobody answered it", rq.ID, rq.Status)
		case wait > 0:
			return fmt.Errorf("no answer within %s; request %s stays open until %s (bureau request show %s %s --wait 10m waits on)",
				shortDuration(wait), rq.ID, clock(rq.ExpiresAt), d.Name, rq.ID)
		}
		fmt.Fprintln(out, rq.ID)
		fmt.Fprintf(cmd.ErrOrStderr(), "asked; bureau request show %s %s --wait 10m waits for the answer\n", d.Name, rq.ID)
		return nil
	})
	f := cmd.Flags()
	f.StringArrayVar(&choices, "choice", nil, "an answer to pick from (repeatable)")
	f.BoolVar(&screenshot, "screenshot", false, "send the screen as it is now with the question")
	f.DurationVar(&wait, "wait", 0, "wait this long for the answer (e.g. 5m)")
	f.DurationVar(&timeout, "timeout", 0, "how long the question stays open (default 1h, 10s to 24h)")
	f.BoolVar(&asJSON, "json", false, "print the request as JSON")
	return cmd
}

// requestsCmd is `bureau requests`: help and approval requests, in a table.
func requestsCmd(cfg *config.Config) *cobra.Command {
	var desktopRef, status, kind string
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "requests",
		Short: "List help and approval requests (pending ones unless --status or --all-states), of one desktop or all yours",
		Args:  cobra.NoArgs,
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
		if all && status != "" {
			return errors.New("--status and --all-states: pick one")
		}
		q := url.Values{}
		if !all {
			q.Set("status", loop.StatusPending)
		}
		if status != "" {
			q.Set("status", status)
		}
		if kind != "" {
			q.Set("kind", kind)
		}
		path := "/api/v1/requests"
		names := map[string]string{}
		if desktopRef != "" {
			d, err := lookup(ctx, c, desktopRef)
			if err != nil {
				return err
			}
			path, names[d.ID] = "/api/v1/desktops/"+d.ID+"/requests", d.Name
		}
		var list struct {
			Requests []*apiv1.Request `json:"requests"`
		}
		if err := c.do(ctx, "GET", path+"?"+q.Encode(), nil, &list); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &list)
		}
		if desktopRef == "" && len(list.Requests) > 0 {
			desktopNames(ctx, c, names)
		}
		return writeRequests(cmd.OutOrStdout(), list.Requests, names)
	})
	f := cmd.Flags()
	f.StringVar(&desktopRef, "desktop", "", "only this desktop's (id or name)")
	f.StringVar(&status, "status", "", "pending (the default), answered, approved, denied or expired")
	f.StringVar(&kind, "kind", "", "help or approval")
	f.BoolVar(&all, "all-states", false, "every status, not only pending")
	f.BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

// desktopNames adds the names of the caller's desktops to names (by id);
// a list that fails leaves the ids.
func desktopNames(ctx context.Context, c *client, names map[string]string) {
	var out struct {
		Desktops []struct{ ID, Name string } `json:"desktops"`
	}
	if c.do(ctx, "GET", "/api/v1/desktops", nil, &out) == nil {
		for _, d := range out.Desktops {
			names[d.ID] = d.Name
		}
	}
}

// writeRequests writes a table of requests.
func writeRequests(out io.Writer, rs []*apiv1.Request, names map[string]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tDESKTOP\tKIND\tSTATUS\tASKED\tQUESTION\tOUTCOME")
	for _, r := range rs {
		desktop := names[r.DesktopID]
		if desktop == "" {
			desktop = r.DesktopID
		}
		status := r.Status
		if r.Gated && r.Status == loop.StatusPending {
			status += " (a call waits)"
		}
		q := r.Question
		if len(r.Choices) > 0 {
			q += " [" + strings.Join(r.Choices, "|") + "]"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, desktop, r.Kind, status, clock(r.AskedAt), clip(q, 60), outcome(r))
	}
	return w.Flush()
}

// outcome says what became of a request, in a few words ("-" while pending).
func outcome(r *apiv1.Request) string {
	by := r.DecidedBy
	if by == "" {
		by = "timeout"
	}
	switch r.Status {
	case loop.StatusPending:
		return "-"
	case loop.StatusAnswered:
		return strconv.Quote(clip(r.Answer, 40)) + " by " + by
	case loop.StatusExpired:
		return "nobody answered"
	}
	s := "by " + by
	if r.Reason != "" {
		s += ": " + clip(r.Reason, 40)
	}
	return s
}

// clip cuts s to n characters, marking the cut.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// requestCmd is `bureau request show|answer|approve|deny`.
func requestCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "request", Short: "Show, answer, approve or deny a help or approval request"}
	cmd.AddCommand(requestShowCmd(cfg), requestAnswerCmd(cfg), requestDecideCmd(cfg, "approve"), requestDecideCmd(cfg, "deny"))
	return cmd
}

// writeRequest writes a request, one field a line.
func writeRequest(out io.Writer, r *apiv1.Request, desktop string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "request:\t%s (%s) on %s: %s\n", r.ID, r.Kind, desktop, r.Status)
	if r.Action != nil {
		fmt.Fprintf(w, "action:\t%s\n", r.Action.Summary)
		if r.Action.Rule != "" {
			fmt.Fprintf(w, "rule:\t%s\n", r.Action.Rule)
		}
		if len(r.Action.Detail) > 0 && string(r.Action.Detail) != "null" {
			fmt.Fprintf(w, "detail:\t%s\n", r.Action.Detail)
		}
	} else {
		fmt.Fprintf(w, "question:\t%s\n", r.Question)
	}
	if len(r.Choices) > 0 {
		fmt.Fprintf(w, "choices:\t%s\n", strings.Join(r.Choices, ", "))
	}
	fmt.Fprintf(w, "asked:\t%s by %s", clock(r.AskedAt), r.AskedBy)
	if r.Gated {
		fmt.Fprint(w, " (a call waits for it)")
	}
	fmt.Fprintln(w)
	if r.Screenshot {
		fmt.Fprintf(w, "screenshot:\tyes (--screenshot FILE saves it)\n")
	}
	if r.Status == loop.StatusPending {
		fmt.Fprintf(w, "open until:\t%s\n", clock(r.ExpiresAt))
	}
	if r.Status == loop.StatusAnswered {
		fmt.Fprintf(w, "answer:\t%s\n", r.Answer)
	}
	if r.DecidedAt != nil {
		fmt.Fprintf(w, "decided:\t%s by %s\n", clock(*r.DecidedAt), orDash(r.DecidedBy))
	}
	if r.Reason != "" {
		fmt.Fprintf(w, "reason:\t%s\n", r.Reason)
	}
	return w.Flush()
}

func requestShowCmd(cfg *config.Config) *cobra.Command {
	var wait time.Duration
	var shot string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show DESKTOP REQUEST",
		Short: "Show a request (--wait: once it is answered or decided, or the wait is over)",
		Args:  cobra.ExactArgs(2),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		began := time.Now()
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		var rq apiv1.Request
		path := requestPath(d.ID, args[1])
		if n := firstWait(wait); n > 0 {
			path += "?wait_s=" + strconv.Itoa(n)
		}
		if err := c.do(ctx, "GET", path, nil, &rq); err != nil {
			return err
		}
		if err := awaitRequest(ctx, c, &rq, began.Add(wait)); err != nil {
			return err
		}
		if shot != "" {
			if err := saveRequestScreenshot(ctx, c, d.ID, rq.ID, shot); err != nil {
				return err
			}
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &rq)
		}
		return writeRequest(cmd.OutOrStdout(), &rq, d.Name)
	})
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for it to be answered or decided (e.g. 5m)")
	cmd.Flags().StringVar(&shot, "screenshot", "", "save the screenshot that came with it to this file (PNG)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

// saveRequestScreenshot writes a request's screenshot to file.
func saveRequestScreenshot(ctx context.Context, c *client, desktopID, rid, file string) error {
	body, err := c.stream(ctx, "GET", requestPath(desktopID, rid)+"/screenshot")
	if err != nil {
		return err
	}
	defer body.Close()
	png, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, png, 0o644)
}

func requestAnswerCmd(cfg *config.Config) *cobra.Command {
	var choice string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   `answer DESKTOP REQUEST ("TEXT" | --choice CHOICE)`,
		Short: "Answer a help request, in words or with one of its choices",
		Args:  cobra.RangeArgs(2, 3),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var body map[string]string
		switch {
		case len(args) == 3 && choice != "":
			return errors.New("give the answer or --choice, not both")
		case len(args) == 3:
			body = map[string]string{"answer": args[2]}
		case choice != "":
			body = map[string]string{"choice": choice}
		default:
			return errors.New(`give the answer ("TEXT") or --choice CHOICE`)
		}
		return decideRequest(ctx, c, cmd.OutOrStdout(), args[0], args[1], "answer", body, asJSON)
	})
	cmd.Flags().StringVar(&choice, "choice", "", "one of the request's choices")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

// requestDecideCmd is request approve or request deny.
func requestDecideCmd(cfg *config.Config, verb string) *cobra.Command {
	var reason string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   verb + " DESKTOP REQUEST [--reason R]",
		Short: "Approve an approval request (the call waiting for it runs)",
		Args:  cobra.ExactArgs(2),
	}
	if verb == "deny" {
		cmd.Short = "Deny an approval request (the call waiting for it fails with 403 denied and the reason)"
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		return decideRequest(ctx, c, cmd.OutOrStdout(), args[0], args[1], verb, map[string]string{"reason": reason}, asJSON)
	})
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the history (and the agent, when denied)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

// decideRequest POSTs verb (answer, approve, deny) to a request and
// shows it.
func decideRequest(ctx context.Context, c *client, out io.Writer, desktopRef, rid, verb string, body any, asJSON bool) error {
	d, err := lookup(ctx, c, desktopRef)
	if err != nil {
		return err
	}
	var rq apiv1.Request
	if err := c.do(ctx, "POST", requestPath(d.ID, rid)+"/"+verb, body, &rq); err != nil {
		return err
	}
	if asJSON {
		return printJSONTo(out, &rq)
	}
	return writeRequest(out, &rq, d.Name)
}
