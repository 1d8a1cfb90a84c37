// Package computer drives a desktop's screen, mouse and keyboard the way
// computer-use models ask to: Anthropic's and OpenAI's action shapes, xdotool
// key names, and a display size the model sees that is scaled exactly to
// the real screen. Input goes to the hypervisor (QMP input-send-event), so
// it works at boot, at the login screen and with a wedged guest; only text
// a US keyboard cannot type goes through the guest agent.
package computer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// Input sends input events to a VM, each call ending in one sync (one
// report to the guest's devices).
type Input interface {
	SendInput(ctx context.Context, domain string, events []raw.InputEvent) error
	// KeyQueue reads the desktop's virtio keyboard: how many events it
	// can take now and a running count of the LED changes its guest has
	// sent back; ok is false while keys go to its PS/2 keyboard.
	KeyQueue(ctx context.Context, domain string) (room int, leds uint16, ok bool, err error)
	// PointerQueue reads the desktop's virtio tablet: how many events it
	// can take now; ok is false while pointer events go to its PS/2 mouse.
	PointerQueue(ctx context.Context, domain string) (room int, ok bool, err error)
}

// Screen takes a screenshot of a VM's display.
type Screen interface {
	Screenshot(ctx context.Context, domain string) ([]byte, string, error)
}

// LiveScreen is a Screen kept current by the display's own change reports
// (internal/framebuffer): settling waits on them instead of comparing
// screenshots, scaled or JPEG screenshots start from its pixels, and input
// actions are verified by them (verify.go). Each answers an error when the
// desktop has no live screen now; the Computer then uses Screenshot, or
// says it could not verify.
type LiveScreen interface {
	Settle(ctx context.Context, domain string, quiet, limit time.Duration) (image.Image, bool, error)
	Frame(ctx context.Context, domain string) (image.Image, error)
	// Version is a mark of the screen as it is now, for Changed.
	Version(ctx context.Context, domain string) (uint64, error)
	// Changed watches for up to within for a change since the mark and
	// returns at the first, with how long after the call it was seen.
	Changed(ctx context.Context, domain string, since uint64, within time.Duration) (bool, time.Duration, error)
}

// Guest runs commands inside a VM through its guest agent.
type Guest interface {
	GuestExec(ctx context.Context, domain string, e desktop.Exec) (*desktop.ExecResult, error)
}

// Computer runs computer-use requests. It remembers where it last put
// each desktop's pointer, since the hypervisor cannot be asked.
type Computer struct {
	in     Input
	screen Screen
	guest  Guest
	// Display, when set, is the hypervisor's own screen dump, asked for
	// with ShotOptions.Source "display" (screen may be a live framebuffer).
	Display Screen
	// User owns the X session (the desktop's cloud-init user).
	User string
	// SettleFor is how long the screen must stay unchanged to count as
	// settled; SettleMax bounds the wait.
	SettleFor, SettleMax time.Duration
	// KeyStall is how long typing waits for a guest that takes no keys
	// before giving up; KeyAckWait how long a first barrier (see
	// keyboard.go) may go unanswered before the guest is typed to by time.
	KeyStall, KeyAckWait time.Duration

	kbd *keyboards

	mu      sync.Mutex
	cursors map[string]Point
	sizes   map[string]sizeSeen
	keymaps map[string]keymapSeen
}

type sizeSeen struct {
	w, h int
	at   time.Time
}

// New builds a Computer.
func New(in Input, screen Screen, guest Guest) *Computer {
	return &Computer{in: in, screen: screen, guest: guest, User: "agent",
		SettleFor: 300 * time.Millisecond, SettleMax: 3 * time.Second, KeyStall: 15 * time.Second, KeyAckWait: 2 * time.Second,
		cursors: map[string]Point{}, sizes: map[string]sizeSeen{}, keymaps: map[string]keymapSeen{}, kbd: newKeyboards()}
}

// Request is one action (its fields inline) or a list of actions, with the
// display size the caller's coordinates refer to.
type Request struct {
	Action
	Actions []Action `json:"actions,omitempty"`
	// Display is the screen size the model sees; screenshots are scaled to
	// it and coordinates scaled back. Empty: the real screen size.
	Display *Size `json:"display,omitempty"`
	// Screenshot asks for a settled screenshot after the actions.
	Screenshot bool `json:"screenshot,omitempty"`
	// Keyboard "paced" sends keys in small calls paced by time, without
	// waiting for the guest's acknowledgement (as bureau typed before it
	// had one: for a guest whose keyboard LEDs misbehave, and to compare);
	// "" or "auto" acknowledges when the guest can.
	Keyboard string `json:"keyboard,omitempty"`
	// VerifyMS is how long after each input action the screen is watched
	// for a change (verify.go): nil for DefaultVerify, 0 for no check,
	// else 1..10000 ms.
	VerifyMS *int `json:"verify_ms,omitempty"`
	// Expect "change" stops the request at an input action after which
	// the screen did not change (a NoEffectError).
	Expect string `json:"expect,omitempty"`
}

// Listed is what the request asks for in order: its inline action (when
// it names one) and then its list. It checks nothing (Run does).
func (r *Request) Listed() []Action {
	if r.Action.Action != "" || r.Action.Type != "" {
		return append([]Action{r.Action}, r.Actions...)
	}
	return r.Actions
}

// Size is a width and height in pixels.
type Size struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Result is what a request did.
type Result struct {
	Results []StepResult `json:"results"`
	// Screenshot is the screen after the actions, when asked for.
	Screenshot *Image `json:"screenshot,omitempty"`
	// Display is the coordinate space used; Screen is the real screen.
	Display Size `json:"display"`
	Screen  Size `json:"screen"`
	// Verify says why input actions carry no screen_changed although
	// verification was asked for ("unavailable: …").
	Verify string `json:"verify,omitempty"`
}

// StepResult reports one action.
type StepResult struct {
	Action     string `json:"action"`
	DurationMS int64  `json:"duration_ms"`
	Image      *Image `json:"image,omitempty"`
	Cursor     *Point `json:"cursor,omitempty"`
	// TypedVia says how text went in: "keyboard" (key events) or
	// "guest" (xdotool in the guest, for characters with no key).
	TypedVia string `json:"typed_via,omitempty"`
	Chars    int    `json:"chars,omitempty"`
	// Keyboard says which keyboard took the keys: "virtio" (each batch
	// acknowledged by the guest's X server before the call returns),
	// "virtio-paced" (a guest whose LEDs do not answer: paced by time) or
	// "ps2" (before the guest's virtio driver is up: paced by time).
	Keyboard string `json:"keyboard,omitempty"`
	// ScreenChanged says, for an input action that was verified, whether
	// the screen changed after it within the window; ChangedAfterMS is
	// how long after the input ended the first change was seen (0: while
	// it went in).
	// Element is the accessibility node the action named (its id, role and
	// name) and whether its states (focus among them) changed after it.
	Element        *ElementResult `json:"element,omitempty"`
	ScreenChanged  *bool          `json:"screen_changed,omitempty"`
	ChangedAfterMS *int64         `json:"changed_after_ms,omitempty"`
}

// maxActions bounds one request.
const maxActions = 100

// Run validates every action, then runs them in order on domain.
func (c *Computer) Run(ctx context.Context, domain string, req Request) (*Result, error) {
	actions := req.Actions
	single := req.Action.Action != "" || req.Action.Type != ""
	switch {
	case single && len(actions) > 0:
		return nil, invalid("actions", "give one action or a list of actions, not both")
	case single:
		actions = []Action{req.Action}
	case len(actions) == 0 && !req.Screenshot:
		return nil, invalid("action", "give an action, a list of actions, or screenshot: true")
	case len(actions) > maxActions:
		return nil, invalid("actions", fmt.Sprintf("at most %d actions per request", maxActions))
	}
	window, expect, err := verifyWindow(req)
	if err != nil {
		return nil, err
	}
	switch req.Keyboard {
	case "", "auto":
	case "paced":
		ctx = context.WithValue(ctx, forcePaced{}, true)
	default:
		return nil, invalid("keyboard", `must be "auto" or "paced"`)
	}
	steps := make([]step, len(actions))
	for i, a := range actions {
		s, err := compile(a)
		if err != nil {
			if len(actions) > 1 {
				var ve *desktop.ValidationError
				if errors.As(err, &ve) {
					ve.Field = fmt.Sprintf("actions[%d].%s", i, ve.Field)
				}
			}
			return nil, err
		}
		steps[i] = s
	}
	w, h, err := c.screenSize(ctx, domain)
	if err != nil {
		return nil, err
	}
	sc, err := newScaler(req.Display, w, h)
	if err != nil {
		return nil, err
	}
	for i := range steps {
		if err := sc.check(steps[i]); err != nil {
			return nil, err
		}
	}
	watch, err := c.newWatcher(ctx, domain, window, expect, steps)
	if err != nil {
		return nil, err
	}
	res := &Result{Results: make([]StepResult, 0, len(steps)), Display: sc.display(), Screen: Size{w, h}}
	for i, s := range steps {
		r, err := c.runStep(ctx, domain, sc, watch, i, s, res.Results)
		if err != nil {
			return nil, err
		}
		res.Results = append(res.Results, r)
	}
	if watch != nil {
		res.Verify = watch.off
	}
	if req.Screenshot {
		img, err := c.settledImage(ctx, domain, sc, nil)
		if err != nil {
			return nil, err
		}
		res.Screenshot = img
	}
	return res, nil
}

// runStep runs step i, verifying it when it sends input and w is set;
// done are the results of the steps before it.
func (c *Computer) runStep(ctx context.Context, domain string, sc *scaler, w *watcher, i int, s step, done []StepResult) (StepResult, error) {
	verify := w != nil && s.sendsInput()
	if verify {
		if err := w.before(ctx, i, done); err != nil {
			return StepResult{}, err
		}
	} else if w != nil {
		w.fresh = false // the screen may change meanwhile
	}
	begun := time.Now()
	r, err := c.run(ctx, domain, sc, s)
	r.Action, r.DurationMS = s.name, time.Since(begun).Milliseconds()
	if err != nil {
		return r, fmt.Errorf("%s: %w", s.name, err)
	}
	if verify {
		err = w.after(ctx, i, s, &r, done)
	}
	return r, err
}

func (c *Computer) run(ctx context.Context, domain string, sc *scaler, s step) (StepResult, error) {
	var r StepResult
	if s.at != nil {
		move := func() error { return c.move(ctx, domain, sc.real(*s.at)) }
		var err error
		if s.clicks == 0 && !s.press && !s.lift && s.scrollV == 0 && s.scrollH == 0 {
			err = c.withKeys(ctx, domain, s.mods, move) // a move with keys held
		} else {
			err = move()
		}
		if err != nil {
			return r, err
		}
	}
	switch {
	case len(s.path) > 0:
		return r, c.withKeys(ctx, domain, s.mods, func() error { return c.drag(ctx, domain, sc, s) })
	case s.clicks > 0 || s.press || s.lift:
		return r, c.click(ctx, domain, s)
	case s.scrollV != 0 || s.scrollH != 0:
		return r, c.scroll(ctx, domain, s)
	case s.hold > 0:
		err := c.hold(ctx, domain, c.onLayout(ctx, domain, s.keys), s.hold)
		r.Keyboard = c.kbd.via(domain)
		return r, err
	case len(s.keys) > 0:
		for _, k := range c.onLayout(ctx, domain, s.keys) {
			if err := c.hold(ctx, domain, []chord{k}, 0); err != nil {
				return r, err
			}
		}
		r.Keyboard = c.kbd.via(domain)
		return r, nil
	case s.text != "":
		via, err := c.typeText(ctx, domain, s.text)
		r.TypedVia, r.Chars, r.Keyboard = via, len([]rune(s.text)), c.kbd.via(domain)
		return r, err
	case s.wait > 0:
		return r, sleep(ctx, s.wait)
	case s.screenshot:
		img, err := c.settledImage(ctx, domain, sc, nil)
		r.Image = img
		return r, err
	case s.region != nil:
		img, err := c.settledImage(ctx, domain, sc, s.region)
		r.Image = img
		return r, err
	case s.cursor:
		p, err := c.cursor(ctx, domain)
		if err != nil {
			return r, err
		}
		d := sc.toDisplay(p)
		r.Cursor = &d
	}
	return r, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func invalid(field, msg string) error {
	return &desktop.ValidationError{Field: field, Message: msg}
}

// guestEnv is what a command needs to reach the user's X session.
func (c *Computer) guestEnv() []string {
	return []string{"DISPLAY=:0", "XAUTHORITY=/home/" + c.User + "/.Xauthority", "HOME=/home/" + c.User,
		"LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin"}
}

// asUser runs argv in the guest as the session's user.
func (c *Computer) asUser(ctx context.Context, domain string, stdin []byte, argv ...string) (*desktop.ExecResult, error) {
	full := append([]string{"/usr/sbin/runuser", "-u", c.User, "--"}, argv...)
	r, err := c.guest.GuestExec(ctx, domain, desktop.Exec{Argv: full, Env: c.guestEnv(), Stdin: stdin})
	if err != nil {
		return nil, fmt.Errorf("guest agent: %v: %w", err, desktop.ErrUnavailable)
	}
	if r.ExitCode != 0 {
		msg := strings.TrimSpace(string(r.Stderr))
		if strings.Contains(msg, "open display") {
			return r, fmt.Errorf("the desktop session is not up yet (%s): %w", msg, desktop.ErrUnavailable)
		}
		return r, fmt.Errorf("%s in the guest: exit %d: %s", argv[0], r.ExitCode, msg)
	}
	return r, nil
}

// ElementResult is the element an action named: the node acted on and
// what became of it (Changed: its states differ after the action, or it
// is gone).
type ElementResult struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	Gone    bool   `json:"gone,omitempty"`
}
