package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/guest"
	"github.com/coder/websocket"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// guestCmds are the commands that work inside a desktop: exec (or start
// in the background), ps, logs, kill and shell.
func guestCmds(cfg *config.Config) []*cobra.Command {
	var req guest.ExecRequest
	exe := &cobra.Command{
		Use:   "exec DESKTOP -- COMMAND…",
		Short: "Run a command in a desktop (shell syntax), or start it in the background with --background",
		Args:  cobra.MinimumNArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			req.Cmd = strings.Join(args[1:], " ")
			if req.Background {
				var p guest.Process
				if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/exec", req, &p); err != nil {
					return err
				}
				fmt.Printf("started %s (pid %d); its output: bureau desktop logs %s %s\n", p.ID, p.PID, d.Name, p.ID)
				return nil
			}
			var res guest.ExecResult
			if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/exec", req, &res); err != nil {
				return err
			}
			os.Stdout.WriteString(res.Stdout)
			os.Stderr.WriteString(res.Stderr)
			if res.TimedOut {
				return fmt.Errorf("timed out after %d s", req.TimeoutS)
			}
			if res.ExitCode != 0 {
				return exitCode(res.ExitCode)
			}
			return nil
		}),
	}
	f := exe.Flags()
	f.BoolVar(&req.Background, "background", false, "start it in the background and return at once")
	f.StringVar(&req.Name, "name", "", "a label for a background process")
	f.StringVar(&req.User, "user", "", "run as this user (default: the desktop's user)")
	f.StringVar(&req.Cwd, "cwd", "", "working directory (default: the user's home)")
	f.IntVar(&req.TimeoutS, "timeout", 0, "seconds before the command is stopped (default 60)")

	ps := &cobra.Command{
		Use:   "ps DESKTOP",
		Short: "List a desktop's background processes",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			var out struct{ Processes []guest.Process }
			if err := c.do(ctx, "GET", "/api/v1/desktops/"+d.ID+"/processes", nil, &out); err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPID\tSTATE\tSTARTED\tLOG\tCOMMAND")
			for _, p := range out.Processes {
				state := "running"
				if !p.Running {
					state = "exited"
					if p.ExitCode != nil {
						state += " " + strconv.Itoa(*p.ExitCode)
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", p.ID, p.Name, p.PID, state, p.StartedAt.Local().Format("15:04:05"), p.LogBytes, strings.Join(p.Command, " "))
			}
			return w.Flush()
		}),
	}

	var follow bool
	var tail int64
	logs := &cobra.Command{
		Use:   "logs DESKTOP PROCESS",
		Short: "Print a background process's output (--follow until it ends)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			q := url.Values{"follow": {strconv.FormatBool(follow)}, "tail": {strconv.FormatInt(tail, 10)}}
			body, err := c.stream(ctx, "GET", "/api/v1/desktops/"+d.ID+"/processes/"+url.PathEscape(args[1])+"/log?"+q.Encode())
			if err != nil {
				return err
			}
			defer body.Close()
			_, err = io.Copy(os.Stdout, body)
			return err
		}),
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing until the process ends")
	logs.Flags().Int64Var(&tail, "tail", 0, "only the last N bytes (0: all)")

	var sig string
	kill := &cobra.Command{
		Use:   "kill DESKTOP PROCESS",
		Short: "Signal a background process (TERM unless --signal)",
		Args:  cobra.ExactArgs(2),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			return c.do(ctx, "DELETE", "/api/v1/desktops/"+d.ID+"/processes/"+url.PathEscape(args[1])+"?signal="+url.QueryEscape(sig), nil, nil)
		}),
	}
	kill.Flags().StringVar(&sig, "signal", "TERM", "TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT")

	var user string
	shell := &cobra.Command{
		Use:   "shell DESKTOP",
		Short: "Open a terminal in a desktop (a login shell)",
		Args:  cobra.ExactArgs(1),
		RunE: runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
			d, err := lookup(ctx, c, args[0])
			if err != nil {
				return err
			}
			return c.shell(ctx, "/api/v1/desktops/"+d.ID+"/pty", user)
		}),
	}
	shell.Flags().StringVar(&user, "user", "", "log in as this user (default: the desktop's user)")
	return []*cobra.Command{exe, ps, logs, kill, shell}
}

// exitCode is a remote command's non-zero exit, passed on as bureau's.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// stream sends a request and returns the body of a successful answer.
func (c *client) stream(ctx context.Context, method, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := (&http.Client{}).Do(req) // no timeout: a follow lasts
	if err != nil {
		return nil, fmt.Errorf("cannot reach bureau at %s: %w", c.base, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, errorFrom(resp.StatusCode, data)
	}
	return resp.Body, nil
}

// shell joins this terminal (raw mode) to a terminal in the desktop.
func (c *client) shell(ctx context.Context, path, user string) error {
	rows, cols := 24, 80
	fd := int(os.Stdin.Fd())
	if w, h, err := term.GetSize(fd); err == nil {
		rows, cols = h, w
	}
	q := url.Values{"rows": {strconv.Itoa(rows)}, "cols": {strconv.Itoa(cols)}}
	if user != "" {
		q.Set("user", user)
	}
	u := "ws" + strings.TrimPrefix(c.base, "http") + path + "?" + q.Encode()
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}}})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			return fmt.Errorf("open a terminal: HTTP %d", resp.StatusCode)
		}
		return fmt.Errorf("open a terminal: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	if term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return err
		}
		defer term.Restore(fd, old)
	}
	// Window size changes follow the local terminal.
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			if w, h, err := term.GetSize(fd); err == nil {
				b, _ := json.Marshal(map[string]any{"type": "resize", "rows": h, "cols": w})
				ws.Write(ctx, websocket.MessageText, b)
			}
		}
	}()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 && ws.Write(ctx, websocket.MessageBinary, buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		kind, b, err := ws.Read(ctx)
		if err != nil {
			return nil // the terminal closed
		}
		if kind == websocket.MessageBinary {
			os.Stdout.Write(b)
			continue
		}
		var end struct {
			Type string
			Code *int
		}
		if json.Unmarshal(b, &end) == nil && end.Type == "exit" && end.Code != nil && *end.Code != 0 {
			return exitCode(*end.Code)
		}
	}
}
