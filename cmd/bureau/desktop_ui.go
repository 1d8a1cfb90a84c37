package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/mcptools"
	"github.com/spf13/cobra"
)

// windowCmds are the commands for a desktop's windows, apps and
// accessibility tree: windows, window, launch, ui, ui-find and ui-act.
func windowCmds(cfg *config.Config) []*cobra.Command {
	return []*cobra.Command{windowsCmd(cfg), windowCmd(cfg), launchCmd(cfg), uiCmd(cfg, false), uiCmd(cfg, true), uiActCmd(cfg)}
}

// windowView is a window as the API lists it, with its bounds in the
// display asked for.
type windowView struct {
	guest.Window
	DisplayBounds *computer.Rect `json:"display_bounds,omitempty"`
}

func windowsCmd(cfg *config.Config) *cobra.Command {
	var display string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "windows ID|NAME",
		Short: "List a desktop's windows: id, app, title, geometry (screen pixels) and flags",
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		path := "/api/v1/desktops/" + d.ID + "/windows"
		if display != "" {
			path += "?display=" + url.QueryEscape(display)
		}
		var list struct {
			Windows []windowView `json:"windows"`
			Screen  guest.Screen `json:"screen"`
		}
		if err := c.do(ctx, "GET", path, nil, &list); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &list)
		}
		return writeWindows(cmd.OutOrStdout(), list.Windows, display != "")
	})
	cmd.Flags().StringVar(&display, "display", "", "also show where each window is in a display of this size, WIDTHxHEIGHT (the computer-use display)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

// writeWindows writes a table of windows (with a DISPLAY column of their
// display bounds when asked for).
func writeWindows(out io.Writer, ws []windowView, display bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := "ID\tAPP\tTITLE\tGEOMETRY\tFLAGS"
	if display {
		head += "\tDISPLAY"
	}
	fmt.Fprintln(w, head)
	for _, v := range ws {
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{v.Focused, "focused"}, {v.Minimized, "minimized"}, {v.Maximized, "maximized"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		if v.Workspace == -1 {
			flags = append(flags, "all workspaces")
		} else {
			flags = append(flags, "ws "+strconv.Itoa(v.Workspace))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s", v.ID, v.App, v.Title, geometry(v.X, v.Y, v.Width, v.Height), strings.Join(flags, ","))
		if display {
			b := "-"
			if r := v.DisplayBounds; r != nil {
				b = geometry(r.X, r.Y, r.Width, r.Height)
			}
			fmt.Fprintf(w, "\t%s", b)
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

func geometry(x, y, width, height int) string { return fmt.Sprintf("%dx%d+%d+%d", width, height, x, y) }

func windowCmd(cfg *config.Config) *cobra.Command {
	var x, y, width, height int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "window ID|NAME WINDOW focus|move|resize|minimize|maximize|unmaximize|close",
		Short: "Focus, move (--x --y), resize (--width --height), minimize, maximize, unmaximize or close a window",
		Long: `Arrange a window through the desktop's window manager. WINDOW is its id as
"bureau desktop windows" lists it; geometry is the client area in screen
pixels. The window is printed as the window manager shows it after the
change; close asks as the close button does and fails while the window
is still open (its app may be asking to save).`,
		Args: cobra.ExactArgs(3),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		body := map[string]any{"action": args[2]}
		for name, v := range map[string]int{"x": x, "y": y, "width": width, "height": height} {
			if cmd.Flags().Changed(name) {
				body[name] = v
			}
		}
		path := "/api/v1/desktops/" + d.ID + "/windows/" + url.PathEscape(args[1])
		if args[2] == "close" {
			var res struct {
				Closed bool        `json:"closed"`
				Window *windowView `json:"window"`
			}
			if err := c.do(ctx, "POST", path, body, &res); err != nil {
				return err
			}
			if asJSON {
				return printJSONTo(cmd.OutOrStdout(), &res)
			}
			if !res.Closed {
				return fmt.Errorf("window %s is still open (its app may be asking to save; see the screen)", args[1])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "window %s closed\n", args[1])
			return nil
		}
		var v windowView
		if err := c.do(ctx, "POST", path, body, &v); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &v)
		}
		return writeWindows(cmd.OutOrStdout(), []windowView{v}, false)
	})
	f := cmd.Flags()
	f.IntVar(&x, "x", 0, "move: the client area's left edge")
	f.IntVar(&y, "y", 0, "move: the client area's top edge")
	f.IntVar(&width, "width", 0, "resize: the client area's width")
	f.IntVar(&height, "height", 0, "resize: the client area's height")
	f.BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

func launchCmd(cfg *config.Config) *cobra.Command {
	var desktopFile string
	var wait time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "launch ID|NAME (--desktop-file NAME | -- COMMAND…)",
		Short: "Start an app in a desktop's session and wait for its window",
		Long: `Start an app as the desktop's user, by its .desktop file as the menu has it
(--desktop-file mousepad) or a command line after -- (shell syntax), and
wait up to --wait (default 20s, at most 2m; 0 answers at once) for its
window. Fails when no window opened in time or the process ended first
(its output: bureau desktop logs).`,
		Args: cobra.MinimumNArgs(1),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		body := map[string]any{}
		switch {
		case desktopFile != "" && len(args) > 1:
			return errors.New("give --desktop-file or a command after --, not both")
		case desktopFile != "":
			body["desktop_file"] = desktopFile
		case len(args) > 1:
			body["command"] = strings.Join(args[1:], " ")
		default:
			return errors.New("give --desktop-file NAME or a command after --")
		}
		if cmd.Flags().Changed("wait") {
			body["wait_s"] = int(wait.Round(time.Second).Seconds())
		}
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		var res struct {
			Process  guest.Process `json:"process"`
			Window   *windowView   `json:"window"`
			TimedOut bool          `json:"timed_out"`
		}
		if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/apps", body, &res); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &res)
		}
		p := res.Process
		switch {
		case res.Window != nil:
			fmt.Fprintf(cmd.OutOrStdout(), "started %s (pid %d)\n", p.ID, p.PID)
			return writeWindows(cmd.OutOrStdout(), []windowView{*res.Window}, false)
		case p.ExitCode != nil:
			return fmt.Errorf("%s exited with %d before a window opened; its output: bureau desktop logs %s %s", p.ID, *p.ExitCode, d.Name, p.ID)
		case res.TimedOut:
			return fmt.Errorf("no window opened in time; %s (pid %d) still runs (bureau desktop windows %s lists the windows)", p.ID, p.PID, d.Name)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "started %s (pid %d)\n", p.ID, p.PID)
		return nil
	})
	cmd.Flags().StringVar(&desktopFile, "desktop-file", "", "the application's .desktop file (mousepad, org.xfce.mousepad) or its name as the menu has it")
	cmd.Flags().DurationVar(&wait, "wait", 0, "how long to wait for its window (default 20s)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

// uiCmd is "ui" (the tree, indented) or, find, "ui-find" (the matches).
func uiCmd(cfg *config.Config, find bool) *cobra.Command {
	var window, app, role, name, states, root, display string
	var depth, limit int
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "ui ID|NAME",
		Short: "Show a desktop's accessibility tree: each element's role, name, id, bounds, states and actions",
		Long: `Show what the desktop's applications say their windows hold (AT-SPI2), one
element a line, indented by depth: role "name" id=… @x,y WxH [states]
actions=…. Only what shows on the screen unless --all; --role, --name and
--states keep the matches and their ancestors. An element with children
left out says so; --root ITS-ID reads further. Ids go to ui-act.`,
		Args: cobra.ExactArgs(1),
	}
	op := "/ui"
	if find {
		cmd.Use = "ui-find ID|NAME"
		cmd.Short = "Find elements of a desktop's accessibility tree by role, name, states, app or window"
		cmd.Long = `Find elements of the desktop's accessibility tree, searched deep: the
matches one a line (role "name" id=… @x,y WxH [states] actions=…). None
is no error. Ids go to ui-act.`
		op = "/ui/find"
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		q := url.Values{}
		for k, v := range map[string]string{"window": window, "app": app, "role": role, "name": name, "states": states, "root": root, "display": display} {
			if v != "" {
				q.Set(k, v)
			}
		}
		for k, v := range map[string]int{"depth": depth, "limit": limit} {
			if v > 0 {
				q.Set(k, strconv.Itoa(v))
			}
		}
		if all {
			q.Set("visible_only", "false")
		}
		path := "/api/v1/desktops/" + d.ID + op
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		var list mcptools.UINodeList
		if err := c.do(ctx, "GET", path, nil, &list); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &list)
		}
		mcptools.WriteUINodes(cmd.OutOrStdout(), &list, !find)
		return nil
	})
	f := cmd.Flags()
	f.StringVar(&window, "window", "", "only windows whose title contains this, or all windows of apps whose name does")
	f.StringVar(&app, "app", "", "only apps whose name contains this")
	f.StringVar(&role, "role", "", "roles, comma-separated (button matches push button and toggle button)")
	f.StringVar(&name, "name", "", "a part of the name (case-insensitive)")
	f.StringVar(&states, "states", "", "states required, comma-separated; !state for one absent (enabled,!checked)")
	f.StringVar(&root, "root", "", "start from this element's id")
	f.StringVar(&display, "display", "", "bounds in a display of this size, WIDTHxHEIGHT (the computer-use display)")
	f.IntVar(&depth, "depth", 0, "levels below the apps or --root (default: tree 8, find 30)")
	f.IntVar(&limit, "limit", 0, "elements at most (default: tree 500, find 100)")
	f.BoolVar(&all, "all", false, "hidden elements too (other tabs, closed menus, other workspaces)")
	f.BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}

func uiActCmd(cfg *config.Config) *cobra.Command {
	var value string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ui-act ID|NAME ELEMENT click|focus|set_value|ACTION",
		Short: "Click, focus or set the value of an accessibility element (through its app, not the mouse)",
		Long: `Act on an element by the id "bureau desktop ui" or "ui-find" gave:
click (its main action), focus, set_value (--value: an editable text's
whole content, or a slider's number) or one of its own actions. Prints
whether it changed or is gone, and the element read again. An id whose
element is no longer there fails (410 gone): read the tree again.`,
		Args: cobra.ExactArgs(3),
	}
	cmd.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		d, err := lookup(ctx, c, args[0])
		if err != nil {
			return err
		}
		body := map[string]any{"action": args[2]}
		if cmd.Flags().Changed("value") {
			body["value"] = value
		}
		var res struct {
			Node      *mcptools.UINode `json:"node"`
			Changed   bool             `json:"changed"`
			Gone      bool             `json:"gone"`
			Performed string           `json:"performed"`
		}
		if err := c.do(ctx, "POST", "/api/v1/desktops/"+d.ID+"/ui/"+url.PathEscape(args[1]), body, &res); err != nil {
			return err
		}
		if asJSON {
			return printJSONTo(cmd.OutOrStdout(), &res)
		}
		what := "unchanged"
		switch {
		case res.Gone:
			what = "gone"
		case res.Changed:
			what = "changed"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", res.Performed, what)
		if res.Node != nil {
			fmt.Fprintln(cmd.OutOrStdout(), mcptools.UINodeLine(res.Node, false))
		}
		return nil
	})
	cmd.Flags().StringVar(&value, "value", "", "set_value: the text, or a number for a range")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer")
	return cmd
}
