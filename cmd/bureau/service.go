package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// service is a service as the API shows it.
type service struct {
	Name      string     `json:"name"`
	Command   []string   `json:"command"`
	State     string     `json:"state"`
	Reason    string     `json:"reason"`
	PID       int        `json:"pid"`
	Restarts  int        `json:"restarts"`
	ExitCode  *int       `json:"exit_code"`
	StartedAt *time.Time `json:"started_at"`
	UptimeS   int64      `json:"uptime_s"`
	Port      int        `json:"port"`
	Secrets   []string   `json:"secrets"`
	URL       string     `json:"url"`
	LiveURL   string     `json:"live_url"`
}

// serviceCmd is `bureau service`: commands bureau-agent keeps running in
// a desktop.
func serviceCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "service", Short: "Run services (web apps, workers) that stay up in a desktop"}
	var (
		port              int
		restart, cwd, usr string
		secrets, envs     []string
	)
	create := &cobra.Command{
		Use:   "create DESKTOP NAME -- COMMAND…",
		Short: "Start a service (replacing one of the same name); --secret NAME gives it a secret as an environment variable",
		Args:  cobra.MinimumNArgs(3),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			env, err := keyValues("--env", "NAME=VALUE", envs)
			if err != nil {
				return err
			}
			req := map[string]any{"name": args[1], "cmd": strings.Join(args[2:], " "), "port": port, "restart": restart,
				"cwd": cwd, "user": usr, "env": env, "secrets": secrets}
			var sv service
			if err := c.do(ctx, "PUT", "/api/v1/desktops/"+d.ID+"/services/"+url.PathEscape(args[1]), req, &sv); err != nil {
				return err
			}
			fmt.Printf("service %s: %s", sv.Name, sv.State)
			if sv.LiveURL != "" {
				fmt.Printf(" — %s (private: bureau url open/share %s %d)", sv.LiveURL, d.Name, sv.Port)
			} else if sv.URL != "" {
				fmt.Printf(" — %s%s", c.base, sv.URL)
			}
			fmt.Printf("\nits output: bureau service logs %s %s -f\n", d.Name, sv.Name)
			return nil
		}),
	}
	f := create.Flags()
	f.IntVar(&port, "port", 0, "the port it listens on (gives it a URL)")
	f.StringVar(&restart, "restart", "on-failure", "on-failure, always or no")
	f.StringVar(&cwd, "cwd", "", "working directory (default: the user's home)")
	f.StringVar(&usr, "user", "", "run as this user (default: the desktop's user)")
	f.StringArrayVar(&secrets, "secret", nil, "a secret to set as an environment variable (repeat)")
	f.StringArrayVar(&envs, "env", nil, "NAME=VALUE (repeat)")

	list := &cobra.Command{
		Use:   "ls DESKTOP",
		Short: "List a desktop's services",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var out struct{ Services []service }
			if err := c.do(ctx, "GET", "/api/v1/desktops/"+d.ID+"/services", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tPID\tRESTARTS\tUPTIME\tPORT\tCOMMAND")
			for _, s := range out.Services {
				state := s.State
				if s.Reason != "" && s.State != "running" {
					state += " (" + s.Reason + ")"
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\t%s\n", s.Name, state, s.PID, s.Restarts,
					time.Duration(s.UptimeS)*time.Second, s.Port, strings.Join(s.Command, " "))
			}
			return w.Flush()
		}),
	}

	var follow bool
	var tail int64
	logs := &cobra.Command{
		Use:   "logs DESKTOP NAME",
		Short: "Print a service's output (-f: keep printing, across restarts)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			q := url.Values{"follow": {strconv.FormatBool(follow)}, "tail": {strconv.FormatInt(tail, 10)}}
			body, err := c.stream(ctx, "GET", "/api/v1/desktops/"+d.ID+"/services/"+url.PathEscape(args[1])+"/logs?"+q.Encode())
			if err != nil {
				return err
			}
			defer body.Close()
			if !follow {
				_, err = bufio.NewReader(body).WriteTo(os.Stdout)
				return err
			}
			sc := bufio.NewScanner(body)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var ev struct{ Data, Encoding string }
				if json.Unmarshal([]byte(data), &ev) != nil {
					continue
				}
				if ev.Encoding == "base64" {
					b, _ := base64.StdEncoding.DecodeString(ev.Data)
					ev.Data = string(b)
				}
				os.Stdout.WriteString(ev.Data)
			}
			return sc.Err()
		}),
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what it writes")
	logs.Flags().Int64Var(&tail, "tail", 0, "only the last N bytes (0: all)")

	ctl := func(action, short string) *cobra.Command {
		return &cobra.Command{
			Use:   action + " DESKTOP NAME",
			Short: short,
			Args:  cobra.ExactArgs(2),
			RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
				d, err := lookup(ctx, c, args[0])
				if err != nil {
					return err
				}
				path := "/api/v1/desktops/" + d.ID + "/services/" + url.PathEscape(args[1])
				if action == "rm" {
					return c.do(ctx, "DELETE", path, nil, nil)
				}
				var sv service
				if err := c.do(ctx, "POST", path+"/"+action, nil, &sv); err != nil {
					return err
				}
				fmt.Printf("service %s: %s\n", sv.Name, sv.State)
				return nil
			}),
		}
	}
	cmd.AddCommand(create, list, logs, ctl("start", "Start a stopped service"), ctl("stop", "Stop a service (it stays stopped across boots)"),
		ctl("restart", "Restart a service"), ctl("rm", "Stop and delete a service"))
	return cmd
}
