package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/guest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// windowTools are the tools for a desktop's windows and apps: list,
// arrange and launch, through its window manager.
type windowTools struct{ *api }

// addWindowTools registers list_windows, focus_window, window_action and
// launch_app.
func (t *windowTools) addWindowTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_windows", Description: "List a desktop's windows, oldest first, one a line: id, app, title, geometry (the client area in screen pixels) and focused/minimized/maximized. " +
		"With display (the size your computer-tool coordinates refer to) each window on screen also says where it is in that display. Use the id with focus_window and window_action.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.listWindows)
	mcp.AddTool(s, &mcp.Tool{Name: "focus_window", Description: "Bring a desktop's window to the front and give it the keyboard focus (un-minimizing it, switching workspace if need be), " +
		"e.g. before typing into it. window is the id list_windows gives. Answers the window as the window manager shows it then."}, t.focusWindow)
	mcp.AddTool(s, &mcp.Tool{Name: "window_action", Description: "Arrange a desktop's window through its window manager: focus, move (x, y), resize (width, height), minimize, maximize, unmaximize or close " +
		"(as its close button does: an app may ask to save first, then the window is still open). Geometry is the client area in screen pixels, as list_windows gives it. " +
		"Answers the window as it is after the change (compare to see that it landed).",
		InputSchema: inputSchema[windowActionIn](map[string][]any{"action": {"focus", "move", "resize", "minimize", "maximize", "unmaximize", "close"}})}, t.windowAction)
	mcp.AddTool(s, &mcp.Tool{Name: "launch_app", Description: "Start an app in a desktop's session and wait (wait_s, default 20) for its window: desktop_file names an application as the menu has it " +
		"(\"mousepad\", \"firefox-esr\", \"xfce4-terminal\"), or give a shell command, or argv. Answers its process and its window (id, title, geometry), " +
		"or says that no window came in time or that the process ended first (its log: process_log)."}, t.launchApp)
}

// window is a window as the API lists it: guest's window, and where it
// is in the display asked for.
type window struct {
	guest.Window
	DisplayBounds *computer.Rect `json:"display_bounds,omitempty"`
}

// line is the window on one line.
func (w *window) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %q @%d,%d %dx%d", w.ID, w.App, w.Title, w.X, w.Y, w.Width, w.Height)
	if r := w.DisplayBounds; r != nil {
		fmt.Fprintf(&b, " (display @%d,%d %dx%d)", r.X, r.Y, r.Width, r.Height)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{w.Focused, "focused"}, {w.Minimized, "minimized"}, {w.Maximized, "maximized"}, {w.Workspace == -1, "on every workspace"}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	return b.String()
}

// displayQuery is ?display=WxH for a display given (else "").
func displayQuery(d *computer.Size) string {
	if d == nil {
		return ""
	}
	return "display=" + url.QueryEscape(fmt.Sprintf("%dx%d", d.Width, d.Height))
}

func (t *windowTools) listWindows(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string         `json:"desktop" jsonschema:"the desktop's id"`
	Display *computer.Size `json:"display,omitempty" jsonschema:"the display size your computer-tool coordinates refer to: each window on screen then says where it is in it"`
}) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/windows?"+displayQuery(in.Display)), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	var list struct {
		Windows []window `json:"windows"`
		Screen  struct {
			Width, Height, Workspace int
		} `json:"screen"`
	}
	if err := decode(r, &list); err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d windows on a %dx%d screen (workspace %d shown); id app \"title\" @x,y widthxheight in screen pixels\n",
		len(list.Windows), list.Screen.Width, list.Screen.Height, list.Screen.Workspace)
	for _, w := range list.Windows {
		b.WriteString(w.line() + "\n")
	}
	return textResult(b.String()), nil, nil
}

type windowActionIn struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Window  string `json:"window" jsonschema:"the window's id, as list_windows gives it (0x1e00004)"`
	Action  string `json:"action" jsonschema:"focus, move, resize, minimize, maximize, unmaximize or close"`
	X       *int   `json:"x,omitempty" jsonschema:"move: the client area's left edge, screen pixels"`
	Y       *int   `json:"y,omitempty" jsonschema:"move: the client area's top edge, screen pixels"`
	Width   *int   `json:"width,omitempty" jsonschema:"resize: the client area's width"`
	Height  *int   `json:"height,omitempty" jsonschema:"resize: the client area's height"`
}

func (t *windowTools) focusWindow(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop string `json:"desktop" jsonschema:"the desktop's id"`
	Window  string `json:"window" jsonschema:"the window's id, as list_windows gives it (0x1e00004)"`
}) (*mcp.CallToolResult, Out, error) {
	return t.windowAction(ctx, req, windowActionIn{Desktop: in.Desktop, Window: in.Window, Action: "focus"})
}

func (t *windowTools) windowAction(ctx context.Context, req *mcp.CallToolRequest, in windowActionIn) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{"action": in.Action}
	for name, v := range map[string]*int{"x": in.X, "y": in.Y, "width": in.Width, "height": in.Height} {
		if v != nil {
			body[name] = *v
		}
	}
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/windows/"+url.PathEscape(in.Window)), body, 0)
	if err != nil {
		return nil, nil, err
	}
	if in.Action == "close" {
		var c struct {
			Closed bool    `json:"closed"`
			Window *window `json:"window"`
		}
		if err := decode(r, &c); err != nil {
			return nil, nil, err
		}
		if c.Closed || c.Window == nil {
			return textResult("closed"), nil, nil
		}
		return textResult("still open (its app may be asking something, e.g. to save; take a screenshot): " + c.Window.line()), nil, nil
	}
	var w window
	if err := decode(r, &w); err != nil {
		return nil, nil, err
	}
	return textResult(w.line()), nil, nil
}

func (t *windowTools) launchApp(ctx context.Context, req *mcp.CallToolRequest, in struct {
	Desktop     string   `json:"desktop" jsonschema:"the desktop's id"`
	DesktopFile string   `json:"desktop_file,omitempty" jsonschema:"an application as the menu has it: its .desktop file (mousepad, org.xfce.mousepad) or its name"`
	Command     string   `json:"command,omitempty" jsonschema:"or a shell command line (mousepad /tmp/notes.txt)"`
	Argv        []string `json:"argv,omitempty" jsonschema:"or a program and its arguments"`
	WaitS       *int     `json:"wait_s,omitempty" jsonschema:"seconds to wait for its window (default 20, at most 120; 0 answers at once)"`
}) (*mcp.CallToolResult, Out, error) {
	body := map[string]any{}
	if in.DesktopFile != "" {
		body["desktop_file"] = in.DesktopFile
	}
	if in.Command != "" {
		body["command"] = in.Command
	}
	if len(in.Argv) > 0 {
		body["argv"] = in.Argv
	}
	if in.WaitS != nil {
		body["wait_s"] = *in.WaitS
	}
	r, err := t.call(ctx, req, "POST", desktopPath(in.Desktop, "/apps"), body, 0)
	if err != nil {
		return nil, nil, err
	}
	var res struct {
		Process struct {
			ID       string `json:"id"`
			PID      int    `json:"pid"`
			Running  bool   `json:"running"`
			ExitCode *int   `json:"exit_code"`
		} `json:"process"`
		Window   *window `json:"window"`
		TimedOut bool    `json:"timed_out"`
	}
	if err := decode(r, &res); err != nil {
		return nil, nil, err
	}
	p := res.Process
	started := fmt.Sprintf("process %s (pid %d)", p.ID, p.PID)
	switch {
	case res.Window != nil:
		return textResult(started + "; its window: " + res.Window.line()), nil, nil
	case p.ExitCode != nil:
		return textResult(fmt.Sprintf("%s exited with %d before a window opened; process_log %s says why", started, *p.ExitCode, p.ID)), nil, nil
	case res.TimedOut:
		return textResult(started + " runs, but no window opened in time: take a screenshot, or list_windows later"), nil, nil
	}
	return textResult(started + " started"), nil, nil
}
