package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
)

// The agent's calls people in the loop guard (guard, before each route's
// own handlers: a refused or denied call is no step of the desktop's).

// gateHandlers guard the agent's calls (its input while a person holds
// the desktop's, and the calls an approval policy gates) and serve the
// approval policies (people_policy.go).
type gateHandlers struct {
	*core
	// computer says where the pointer is, for click rules.
	computer Computer
	// windows says which window is active, for key and click rules that
	// name one (nil: none known).
	windows Windows
}

const computerRoute = "POST /api/v1/desktops/:id/computer"

// inputRoutes drive the desktop's input: while a person holds it they
// answer 409 human_in_control (computer calls only when an action sends
// input: screenshot, cursor_position, zoom and wait read).
var inputRoutes = map[string]bool{
	computerRoute:                            true,
	"PUT /api/v1/desktops/:id/clipboard":     true,
	"POST /api/v1/desktops/:id/windows/:wid": true,
	"POST /api/v1/desktops/:id/apps":         true,
	"POST /api/v1/desktops/:id/ui/:node":     true,
}

// gatedRoutes are the calls an approval policy may hold until a person
// decides: exec (its command line, and the URLs in it), file deletes,
// computer actions (keys, clicks), app launches (the URLs they open).
var gatedRoutes = map[string]func(s *gateHandlers, c *gin.Context, d *desktop.Desktop, body []byte) error{
	"POST /api/v1/desktops/:id/exec":    (*gateHandlers).gateExec,
	"DELETE /api/v1/desktops/:id/files": (*gateHandlers).gateFileDelete,
	computerRoute:                       (*gateHandlers).gateComputer,
	"POST /api/v1/desktops/:id/apps":    (*gateHandlers).gateLaunch,
}

// readActions are the computer actions that send no input.
var readActions = map[string]bool{"screenshot": true, "cursor_position": true, "zoom": true, "wait": true}

var errNoComputer = fmt.Errorf("this bureau does not drive desktops' screens: %w", desktop.ErrUnavailable)

// humanRetryAfter is the Retry-After of a 409 human_in_control, in seconds.
const humanRetryAfter = "10"

// guard refuses the agent's input while a person holds the desktop's, and
// holds a call its approval policy names until a person decides it (a
// denial is a 403 denied; the call does not run). A call the route itself
// refuses (another owner's desktop, a body that is not JSON) is left to it.
func (s *gateHandlers) guard(c *gin.Context) {
	route := c.Request.Method + " " + c.FullPath()
	input, gate := inputRoutes[route], gatedRoutes[route]
	if s.people == nil || !input && gate == nil {
		return
	}
	d, err := s.owned(c)
	if err != nil {
		return
	}
	var body []byte
	if c.Request.Method == "POST" {
		body = peekBody(c)
	}
	if input && (route != computerRoute || sendsInput(body)) {
		if err := s.people.AgentInput(d.ID, actor(c)); err != nil {
			if errors.As(err, new(*loop.InControlError)) {
				c.Header("Retry-After", humanRetryAfter)
			}
			s.fail(c, err)
			return
		}
	}
	if gate != nil {
		if err := gate(s, c, d, body); err != nil {
			s.fail(c, err)
		}
	}
}

// peekBody reads the request's body and puts it back for the handler (nil
// when it cannot be read).
func peekBody(c *gin.Context) []byte {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxBody+1))
	c.Request.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), c.Request.Body))
	if err != nil {
		return nil
	}
	return body
}

// computerActions are the actions of a computer call's body in order (ok
// false: it is not one; the handler says why).
func computerActions(body []byte) ([]computer.Action, *computer.Request, bool) {
	var req computer.Request
	if json.Unmarshal(body, &req) != nil {
		return nil, nil, false
	}
	return req.Listed(), &req, true
}

func actionName(a computer.Action) string {
	if a.Action != "" {
		return a.Action
	}
	return a.Type
}

// sendsInput says whether a computer call's actions send input.
func sendsInput(body []byte) bool {
	actions, _, ok := computerActions(body)
	if !ok {
		return false
	}
	for _, a := range actions {
		if !readActions[actionName(a)] {
			return true
		}
	}
	return false
}

// gate asks the policy about one input of the call, and waits for a
// person when it matches.
func (s *gateHandlers) gate(c *gin.Context, d *desktop.Desktop, in loop.Input, title func(context.Context) string, detail json.RawMessage) (*loop.Request, error) {
	if title == nil {
		title = noTitle
	}
	return s.people.Gate(c.Request.Context(), d.ID, d.Owner, actor(c), in, title, detail)
}

func noTitle(context.Context) string { return "" }

// activeTitle is the title of the desktop's active window, asked once
// and only when a rule needs it ("" when it is not known).
func (s *gateHandlers) activeTitle(d *desktop.Desktop) func(context.Context) string {
	var once sync.Once
	var title string
	return func(ctx context.Context) string {
		once.Do(func() {
			if s.windows == nil {
				return
			}
			list, err := s.windows.Windows(ctx, d.DomainName())
			if err != nil {
				return
			}
			for _, w := range list.Windows {
				if w.Focused {
					title = w.Title
					return
				}
			}
		})
		return title
	}
}

// gateExec: the command line (argv joined with spaces), then each URL in
// it unless the command line itself was approved.
func (s *gateHandlers) gateExec(c *gin.Context, d *desktop.Desktop, body []byte) error {
	var req guest.ExecRequest
	if json.Unmarshal(body, &req) != nil || req.Validate() != nil {
		return nil
	}
	line := req.Cmd
	if line == "" {
		line = strings.Join(req.Argv, " ")
	}
	detail, _ := json.Marshal(bodyInput(steps.KindExec, body))
	r, err := s.gate(c, d, loop.Input{Kind: loop.ActionExec, Command: line}, nil, detail)
	if err != nil || r != nil {
		return err
	}
	for _, u := range urlsIn(line) {
		if _, err := s.gate(c, d, loop.Input{Kind: loop.ActionURL, URL: u}, nil, detail); err != nil {
			return err
		}
	}
	return nil
}

func (s *gateHandlers) gateFileDelete(c *gin.Context, d *desktop.Desktop, _ []byte) error {
	path := c.Query("path")
	if path == "" {
		return nil
	}
	detail, _ := json.Marshal(gin.H{"path": path, "user": c.Query("user"), "recursive": c.Query("recursive") == "true"})
	_, err := s.gate(c, d, loop.Input{Kind: loop.ActionFileDelete, Path: path}, nil, detail)
	return err
}

// gateLaunch: each URL an app is launched with.
func (s *gateHandlers) gateLaunch(c *gin.Context, d *desktop.Desktop, body []byte) error {
	var req guest.LaunchRequest
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	var urls []string
	for _, arg := range append([]string{req.Command}, req.Argv...) {
		urls = append(urls, urlsIn(arg)...)
	}
	detail, _ := json.Marshal(req)
	for _, u := range urls {
		if _, err := s.gate(c, d, loop.Input{Kind: loop.ActionURL, URL: u}, nil, detail); err != nil {
			return err
		}
	}
	return nil
}

// urlPattern finds http(s) URLs in a command line.
var urlPattern = regexp.MustCompile("(?i)\\bhttps?://[^\\s\"'<>`]+")

// urlsIn lists the http(s) URLs in s, each once, without trailing
// punctuation.
func urlsIn(s string) []string {
	var out []string
	for _, u := range urlPattern.FindAllString(s, -1) {
		u = strings.TrimRight(u, ".,;:!?)]}")
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// Where a click lands, as far as the gate can tell before the actions run.
const (
	atBatchStart = iota // where the pointer is before the call (asked)
	atPoint             // a coordinate of the call (display space)
	atUnknown           // after an element action: not known until it runs
)

// clickActions are the actions that press a mouse button (a press alone
// counts: the click it starts lands there).
var clickActions = map[string]bool{"left_click": true, "right_click": true, "middle_click": true, "double_click": true,
	"triple_click": true, "left_mouse_down": true, "click": true}

// plannedInput is one input of a computer call the policy is asked about.
type plannedInput struct {
	in     loop.Input
	detail json.RawMessage
	// where and at say where a click lands (in.X, in.Y are filled once
	// that is known).
	click bool
	where int
	at    computer.Point
}

// gateComputer: each key action (key, hold_key, keypress) and each click
// (any button, any count) in order. A click's place is its coordinate
// (scaled from the call's display to the screen), else where an earlier
// action of the call left the pointer, else where the pointer is now. A
// click on an element (an accessibility node) is not known before the
// element is resolved and is not gated.
func (s *gateHandlers) gateComputer(c *gin.Context, d *desktop.Desktop, body []byte) error {
	actions, req, ok := computerActions(body)
	if !ok {
		return nil
	}
	var plan []plannedInput
	where, at := atBatchStart, computer.Point{}
	clicks, fromStart := false, false
	for _, a := range actions {
		name := actionName(a)
		switch {
		case len(a.Element) > 0:
			where = atUnknown
		case len(a.Coordinate) == 2:
			where, at = atPoint, computer.Point{X: a.Coordinate[0], Y: a.Coordinate[1]}
		case a.X != nil && a.Y != nil:
			where, at = atPoint, computer.Point{X: *a.X, Y: *a.Y}
		case name == "drag" && len(a.Path) > 0:
			where, at = atPoint, a.Path[len(a.Path)-1]
		}
		detail, _ := json.Marshal(a)
		switch {
		case (name == "key" || name == "hold_key") && a.Text != "":
			plan = append(plan, plannedInput{in: loop.Input{Kind: loop.ActionKey, Keys: a.Text}, detail: detail})
		case name == "keypress" && len(a.Keys) > 0:
			plan = append(plan, plannedInput{in: loop.Input{Kind: loop.ActionKey, Keys: strings.Join(a.Keys, "+")}, detail: detail})
		case clickActions[name] && where != atUnknown:
			plan = append(plan, plannedInput{in: loop.Input{Kind: loop.ActionClick}, detail: detail, click: true, where: where, at: at})
			clicks, fromStart = true, fromStart || where == atBatchStart
		}
	}
	if len(plan) == 0 {
		return nil
	}
	ctx := c.Request.Context()
	if clicks {
		var err error
		if plan, err = s.placeClicks(ctx, d, req.Display, plan, fromStart); err != nil {
			return err
		}
	}
	title := s.activeTitle(d)
	for _, p := range plan {
		if _, err := s.gate(c, d, p.in, title, p.detail); err != nil {
			return err
		}
	}
	return nil
}

// placeClicks puts the clicks of plan on the screen: coordinates in the
// call's display scaled to the screen's, the pointer's place asked for
// when a click is where it already is. Only when the desktop's policy has
// click rules: else the clicks are left out (nothing can match them).
func (s *gateHandlers) placeClicks(ctx context.Context, d *desktop.Desktop, display *computer.Size, plan []plannedInput, fromStart bool) ([]plannedInput, error) {
	scaled := display != nil && (display.Width > 0 || display.Height > 0)
	var screen computer.Size
	var cursor *computer.Point
	if scaled || fromStart {
		pol, err := s.people.Policy(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		if len(pol.Clicks) == 0 {
			return dropClicks(plan), nil
		}
		if s.computer == nil {
			return nil, errNoComputer
		}
		res, err := s.computer.Run(ctx, d.DomainName(), computer.Request{Action: computer.Action{Action: "cursor_position"}})
		if err != nil {
			return nil, err
		}
		screen = res.Screen
		if len(res.Results) > 0 {
			cursor = res.Results[0].Cursor
		}
	}
	out := plan[:0]
	for _, p := range plan {
		if p.click {
			switch {
			case p.where == atPoint && scaled:
				p.in.X, p.in.Y = scaleAxis(p.at.X, display.Width, screen.Width), scaleAxis(p.at.Y, display.Height, screen.Height)
			case p.where == atPoint:
				p.in.X, p.in.Y = p.at.X, p.at.Y
			case cursor != nil:
				p.in.X, p.in.Y = cursor.X, cursor.Y
			default:
				continue // the pointer's place is not known
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func dropClicks(plan []plannedInput) []plannedInput {
	out := plan[:0]
	for _, p := range plan {
		if !p.click {
			out = append(out, p)
		}
	}
	return out
}

// scaleAxis maps pixel x of a display axis of size from to the screen's
// pixel under its middle, as computer use does.
func scaleAxis(x, from, to int) int {
	if from <= 0 || to <= 0 || from == to {
		return x
	}
	return min((2*x+1)*to/(2*from), to-1)
}
