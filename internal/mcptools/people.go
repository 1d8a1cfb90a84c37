package mcptools

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/loop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peopleTools bring people into the agent's loop: ask a person for help
// or for approval, read their answers, and see who holds the desktop's
// mouse and keyboard. Taking and handing back control are people's
// calls (the console, the CLI, the SDKs), not tools.
type peopleTools struct{ *api }

// Bounds of a tool's wait for a person's answer (request_help,
// request_approval, get_request): the API waits at most 15 minutes a
// call; each call asks for at most readySlice.
const (
	defaultDecisionWait = 5 * time.Minute
	maxDecisionWait     = 15 * time.Minute
)

// addPeopleTools registers request_help, get_request, request_approval,
// list_requests, answer_request, decide_approval and control_status.
func (t *peopleTools) addPeopleTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "request_help", Description: "Ask a person watching the desktop a question when you are stuck or unsure (a login, a choice only they can make, a CAPTCHA, " +
		"something that looks wrong): question in plain words, choices to pick from (optional), screenshot:true to show them the screen. " +
		"Waits up to wait_s (default 300, at most 900) for the answer and returns it; if nobody answered by then it says the request is still pending, " +
		"with its id for get_request. People see it in bureau's console with a notification."}, t.requestHelp)
	mcp.AddTool(s, &mcp.Tool{Name: "get_request", Description: "Read a help or approval request (request_id from request_help or request_approval) as it is now, " +
		"or wait up to wait_s seconds (at most 900) for a person to answer or decide it. Says ANSWERED with the answer, APPROVED, DENIED with the reason, EXPIRED, or still PENDING.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.getRequest)
	mcp.AddTool(s, &mcp.Tool{Name: "request_approval", Description: "Ask a person to approve a step before you take it (something risky or irreversible: paying, sending, deleting, " +
		"submitting): action says what you are about to do, detail anything that helps them decide, screenshot:true shows them the screen. " +
		"Waits up to wait_s (default 300, at most 900) for the decision and says APPROVED (go ahead) or DENIED with the person's reason (do not do it), " +
		"or that it is still pending (do not go ahead yet; get_request waits on). Calls the desktop's approval policy names wait for approval by themselves."}, t.requestApproval)
	mcp.AddTool(s, &mcp.Tool{Name: "list_requests", Description: "List help and approval requests, newest first, one a line: a desktop's, or without desktop those of all your desktops. " +
		"status: pending (the default), answered, approved, denied, expired or all; kind: help or approval.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: inputSchema[listRequestsIn](map[string][]any{"status": {"pending", "answered", "approved", "denied", "expired", "all"}, "kind": {"help", "approval"}})}, t.listRequests)
	mcp.AddTool(s, &mcp.Tool{Name: "answer_request", Description: "Answer a help request another agent asked (not your own: the token that asked may not answer it): " +
		"answer with text, or choice, one of its choices."}, t.answerRequest)
	mcp.AddTool(s, &mcp.Tool{Name: "decide_approval", Description: "Approve (approve:true) or deny (approve:false) an approval request another agent's call waits for " +
		"(not your own), with a reason. Approved, the waiting call runs; denied, it fails with your reason."}, t.decideApproval)
	mcp.AddTool(s, &mcp.Tool{Name: "control_status", Description: "Who holds a desktop's mouse and keyboard: you (the agent) or a person who took over in the console. " +
		"While a person holds them your input (computer actions, the clipboard, windows, launching apps) fails with human_in_control; " +
		"screenshots and other reads still work. Says since when, when it goes back to you by itself, and who is watching.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, t.controlStatus)
}

// decisionLimit is a tool's wait_s (nil: def) as a duration.
func decisionLimit(s *int, def time.Duration) (time.Duration, error) {
	if s == nil {
		return def, nil
	}
	d := time.Duration(*s) * time.Second
	if *s < 0 || d > maxDecisionWait {
		return 0, fmt.Errorf("wait_s %d: want 0 to %d seconds", *s, int(maxDecisionWait.Seconds()))
	}
	return d, nil
}

// firstSlice is the wait_s of the call that makes a request: its share
// of limit, at most readySlice (0: answer at once).
func firstSlice(limit time.Duration) int {
	return int(min(limit, readySlice).Round(time.Second).Seconds())
}

type requestHelpIn struct {
	Desktop    string   `json:"desktop" jsonschema:"the desktop's id"`
	Question   string   `json:"question" jsonschema:"what you ask, in plain words (at most 2000 characters)"`
	Choices    []string `json:"choices,omitempty" jsonschema:"answers the person can pick from (at most 10); they may still be asked to pick one"`
	Screenshot bool     `json:"screenshot,omitempty" jsonschema:"show them the screen as it is now"`
	WaitS      *int     `json:"wait_s,omitempty" jsonschema:"how long to wait for the answer, in seconds: 0 to 900, default 300 (0: ask and return at once)"`
	TimeoutS   int      `json:"timeout_s,omitempty" jsonschema:"how long the question stays open for an answer, in seconds (default 3600)"`
}

func (t *peopleTools) requestHelp(ctx context.Context, req *mcp.CallToolRequest, in requestHelpIn) (*mcp.CallToolResult, Out, error) {
	limit, err := decisionLimit(in.WaitS, defaultDecisionWait)
	if err != nil {
		return nil, nil, err
	}
	body := map[string]any{"question": in.Question}
	if len(in.Choices) > 0 {
		body["choices"] = in.Choices
	}
	return t.ask(ctx, req, in.Desktop, "/help", body, in.Screenshot, in.TimeoutS, limit)
}

type requestApprovalIn struct {
	Desktop    string         `json:"desktop" jsonschema:"the desktop's id"`
	Action     string         `json:"action" jsonschema:"what you are about to do, in plain words (submit the order form for 42 EUR)"`
	Detail     map[string]any `json:"detail,omitempty" jsonschema:"anything that helps the person decide, as an object"`
	Screenshot bool           `json:"screenshot,omitempty" jsonschema:"show them the screen as it is now"`
	WaitS      *int           `json:"wait_s,omitempty" jsonschema:"how long to wait for the decision, in seconds: 0 to 900, default 300 (0: ask and return at once)"`
	TimeoutS   int            `json:"timeout_s,omitempty" jsonschema:"how long the request stays open for a decision, in seconds"`
}

func (t *peopleTools) requestApproval(ctx context.Context, req *mcp.CallToolRequest, in requestApprovalIn) (*mcp.CallToolResult, Out, error) {
	limit, err := decisionLimit(in.WaitS, defaultDecisionWait)
	if err != nil {
		return nil, nil, err
	}
	body := map[string]any{"action": in.Action}
	if in.Detail != nil {
		body["detail"] = in.Detail
	}
	return t.ask(ctx, req, in.Desktop, "/approvals", body, in.Screenshot, in.TimeoutS, limit)
}

// ask makes a help or approval request (POST rest) and waits up to limit
// for a person's answer or decision.
func (t *peopleTools) ask(ctx context.Context, req *mcp.CallToolRequest, desktop, rest string, body map[string]any, screenshot bool, timeoutS int, limit time.Duration) (*mcp.CallToolResult, Out, error) {
	began := time.Now()
	if screenshot {
		body["screenshot"] = true
	}
	if timeoutS > 0 {
		body["timeout_s"] = timeoutS
	}
	if n := firstSlice(limit); n > 0 {
		body["wait_s"] = n
	}
	r, err := t.call(ctx, req, "POST", desktopPath(desktop, rest), body, 0)
	if err != nil {
		return nil, nil, err
	}
	var rq loop.Request
	if err := decode(r, &rq); err != nil {
		return nil, nil, err
	}
	return t.awaitDecision(ctx, req, desktop, &rq, began, began.Add(limit))
}

type getRequestIn struct {
	Desktop   string `json:"desktop" jsonschema:"the desktop's id"`
	RequestID string `json:"request_id" jsonschema:"the request's id (req_…)"`
	WaitS     *int   `json:"wait_s,omitempty" jsonschema:"wait up to this many seconds for a person to answer or decide it: 0 to 900, default 0"`
}

func (t *peopleTools) getRequest(ctx context.Context, req *mcp.CallToolRequest, in getRequestIn) (*mcp.CallToolResult, Out, error) {
	limit, err := decisionLimit(in.WaitS, 0)
	if err != nil {
		return nil, nil, err
	}
	began := time.Now()
	rq, err := t.fetchRequest(ctx, req, in.Desktop, in.RequestID, min(limit, readySlice))
	if err != nil {
		return nil, nil, err
	}
	return t.awaitDecision(ctx, req, in.Desktop, rq, began, began.Add(limit))
}

// fetchRequest reads a request, the API waiting up to wait for it to be
// decided.
func (a *api) fetchRequest(ctx context.Context, req *mcp.CallToolRequest, desktop, id string, wait time.Duration) (*loop.Request, error) {
	path := desktopPath(desktop, "/requests/"+url.PathEscape(id))
	if n := int(wait.Round(time.Second).Seconds()); n > 0 {
		path += "?wait_s=" + strconv.Itoa(n)
	}
	r, err := a.call(ctx, req, "GET", path, nil, 0)
	if err != nil {
		return nil, err
	}
	var rq loop.Request
	if err := decode(r, &rq); err != nil {
		return nil, err
	}
	return &rq, nil
}

// awaitDecision waits until deadline for pending request rq to be
// decided, the API doing the waiting in calls of at most readySlice,
// and says how it went; began is when the tool call began.
func (a *api) awaitDecision(ctx context.Context, req *mcp.CallToolRequest, desktop string, rq *loop.Request, began, deadline time.Time) (*mcp.CallToolResult, Out, error) {
	for rq.Status == loop.StatusPending && time.Until(deadline) >= time.Second {
		asked := time.Now()
		next, err := a.fetchRequest(ctx, req, desktop, rq.ID, min(time.Until(deadline), readySlice))
		if err != nil {
			return nil, nil, err
		}
		rq = next
		if rq.Status != loop.StatusPending {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(min(readyPace-time.Since(asked), time.Until(deadline))):
		}
	}
	return textResult(requestText(rq, desktop, time.Since(began))), rq, nil
}

// requestText says what became of a request, in words for the model:
// the answer, APPROVED or DENIED with the reason, or what to do while it
// is pending.
func requestText(r *loop.Request, desktop string, waited time.Duration) string {
	by := r.DecidedBy
	if by == "" {
		by = "a person"
	}
	what := r.Question
	if r.Action != nil && r.Action.Summary != "" {
		what = r.Action.Summary
	}
	switch r.Status {
	case loop.StatusAnswered:
		s := fmt.Sprintf("ANSWERED by %s (request %s). The answer: %s", by, r.ID, r.Answer)
		if r.Choice {
			s += " (one of the choices)"
		}
		return s
	case loop.StatusApproved:
		return fmt.Sprintf("APPROVED by %s (request %s)%s. Go ahead: %s", by, r.ID, reasonText(r.Reason), what)
	case loop.StatusDenied:
		if r.DecidedBy == "" {
			return fmt.Sprintf("DENIED: nobody decided in time (request %s)%s. Do not do it: %s", r.ID, reasonText(r.Reason), what)
		}
		return fmt.Sprintf("DENIED by %s (request %s)%s. Do not do it: %s", by, r.ID, reasonText(r.Reason), what)
	case loop.StatusExpired:
		return fmt.Sprintf("EXPIRED (request %s): nobody answered before %s. Ask again if it still matters: %s", r.ID, r.ExpiresAt.UTC().Format(time.RFC3339), what)
	}
	next := fmt.Sprintf("call get_request with desktop %q, request_id %q and wait_s (up to 900) to wait for it", desktop, r.ID)
	s := fmt.Sprintf("still PENDING after %d s: nobody has answered yet (request %s, open until %s); %s",
		int(waited.Round(time.Second).Seconds()), r.ID, r.ExpiresAt.UTC().Format(time.RFC3339), next)
	if r.Kind == loop.KindApproval {
		s += ". Do not go ahead until it is approved"
	}
	return s
}

func reasonText(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

type listRequestsIn struct {
	Desktop string `json:"desktop,omitempty" jsonschema:"the desktop's id (default: all your desktops)"`
	Status  string `json:"status,omitempty" jsonschema:"pending (the default), answered, approved, denied, expired or all"`
	Kind    string `json:"kind,omitempty" jsonschema:"help or approval (default both)"`
}

func (t *peopleTools) listRequests(ctx context.Context, req *mcp.CallToolRequest, in listRequestsIn) (*mcp.CallToolResult, Out, error) {
	q := url.Values{}
	switch in.Status {
	case "":
		q.Set("status", loop.StatusPending)
	case "all":
	default:
		q.Set("status", in.Status)
	}
	if in.Kind != "" {
		q.Set("kind", in.Kind)
	}
	path := "/api/v1/requests?" + q.Encode()
	if in.Desktop != "" {
		path = desktopPath(in.Desktop, "/requests?"+q.Encode())
	}
	r, err := t.call(ctx, req, "GET", path, nil, 0)
	if err != nil {
		return nil, nil, err
	}
	var list struct {
		Requests []*loop.Request `json:"requests"`
	}
	if err := decode(r, &list); err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests; id desktop kind status \"question\"\n", len(list.Requests))
	for _, rq := range list.Requests {
		b.WriteString(requestLine(rq) + "\n")
	}
	return textResult(b.String()), nil, nil
}

// requestLine is a request on one line.
func requestLine(r *loop.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s %q", r.ID, r.DesktopID, r.Kind, r.Status, r.Question)
	if len(r.Choices) > 0 {
		fmt.Fprintf(&b, " choices=%s", strings.Join(r.Choices, "|"))
	}
	if r.Gated {
		b.WriteString(" (a call waits for it)")
	}
	switch {
	case r.Status == loop.StatusAnswered:
		fmt.Fprintf(&b, " answer=%q by %s", r.Answer, r.DecidedBy)
	case r.Status != loop.StatusPending && r.DecidedBy != "":
		fmt.Fprintf(&b, " by %s", r.DecidedBy)
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, " reason=%q", r.Reason)
	}
	return b.String()
}

type answerRequestIn struct {
	Desktop   string `json:"desktop" jsonschema:"the desktop's id"`
	RequestID string `json:"request_id" jsonschema:"the help request's id (req_…)"`
	Answer    string `json:"answer,omitempty" jsonschema:"the answer, in words"`
	Choice    string `json:"choice,omitempty" jsonschema:"or one of the request's choices"`
}

func (t *peopleTools) answerRequest(ctx context.Context, req *mcp.CallToolRequest, in answerRequestIn) (*mcp.CallToolResult, Out, error) {
	var body map[string]string
	switch {
	case in.Answer != "" && in.Choice != "":
		return nil, nil, fmt.Errorf("give answer or choice, not both")
	case in.Choice != "":
		body = map[string]string{"choice": in.Choice}
	case in.Answer != "":
		body = map[string]string{"answer": in.Answer}
	default:
		return nil, nil, fmt.Errorf("give answer (text) or choice (one of the request's choices)")
	}
	return t.decided(ctx, req, in.Desktop, in.RequestID, "answer", body)
}

type decideApprovalIn struct {
	Desktop   string `json:"desktop" jsonschema:"the desktop's id"`
	RequestID string `json:"request_id" jsonschema:"the approval request's id (req_…)"`
	Approve   bool   `json:"approve" jsonschema:"true approves (the waiting call runs), false denies it"`
	Reason    string `json:"reason,omitempty" jsonschema:"why, for the history and for the caller denied"`
}

func (t *peopleTools) decideApproval(ctx context.Context, req *mcp.CallToolRequest, in decideApprovalIn) (*mcp.CallToolResult, Out, error) {
	verb := "deny"
	if in.Approve {
		verb = "approve"
	}
	return t.decided(ctx, req, in.Desktop, in.RequestID, verb, map[string]string{"reason": in.Reason})
}

// decided POSTs verb (answer, approve, deny) to a request and says what
// became of it.
func (t *peopleTools) decided(ctx context.Context, req *mcp.CallToolRequest, desktop, id, verb string, body any) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "POST", desktopPath(desktop, "/requests/"+url.PathEscape(id)+"/"+verb), body, 0)
	if err != nil {
		return nil, nil, err
	}
	var rq loop.Request
	if err := decode(r, &rq); err != nil {
		return nil, nil, err
	}
	return textResult(requestText(&rq, desktop, 0)), &rq, nil
}

// controlView is a desktop's control as GET …/control answers it.
type controlView struct {
	loop.Control
	Viewers []struct {
		Session    string `json:"session"`
		Name       string `json:"name"`
		ViewOnly   bool   `json:"view_only"`
		HoldsInput bool   `json:"holds_input"`
	} `json:"viewers"`
}

func (t *peopleTools) controlStatus(ctx context.Context, req *mcp.CallToolRequest, in desktopIn) (*mcp.CallToolResult, Out, error) {
	r, err := t.call(ctx, req, "GET", desktopPath(in.Desktop, "/control"), nil, 0)
	if err != nil {
		return nil, nil, err
	}
	var c controlView
	if err := decode(r, &c); err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	if c.Holder == loop.HolderPerson {
		fmt.Fprintf(&b, "%s holds the mouse and keyboard since %s", c.Person, c.Since.UTC().Format(time.RFC3339))
		if c.Until != nil {
			fmt.Fprintf(&b, "; it comes back to you by itself at %s (after %d s without their input) or when they hand it back",
				c.Until.UTC().Format(time.RFC3339), c.IdleTimeoutS)
		}
		b.WriteString(". Until then your input fails with human_in_control; screenshots and other reads work, and request_help asks them something.")
	} else {
		b.WriteString("You (the agent) hold the mouse and keyboard.")
	}
	if len(c.Viewers) > 0 {
		var who []string
		for _, v := range c.Viewers {
			w := v.Name
			if w == "" {
				w = v.Session
			}
			switch {
			case v.HoldsInput:
				w += " (holds input)"
			case v.ViewOnly:
				w += " (view only)"
			}
			who = append(who, w)
		}
		fmt.Fprintf(&b, " Watching in the console: %s.", strings.Join(who, ", "))
	}
	return textResult(b.String()), nil, nil
}
