package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/store/storetest"
)

// peopleEnv is an env whose requests are checked against the spec too.
func peopleEnv(t *testing.T, tweak func(*Deps)) *env {
	e := newEnvDeps(t, nil, tweak)
	e.srv.Config.Handler.(*specChecker).requests = true
	return e
}

// exchange sends a request and returns the response's status, headers and
// body (parsed as JSON when it is).
func (e *env) exchange(t *testing.T, token, method, path, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(data, &out)
	return resp.StatusCode, resp.Header, out
}

func errOf(body map[string]any) map[string]any {
	e, _ := body["error"].(map[string]any)
	return e
}

// TestTakeoverRefusesTheAgentsInput: while a person holds the desktop's
// input the agent's input calls are 409 human_in_control (with who and
// since, and Retry-After), its reads go on, the person's own token goes
// through; handing back lets the agent in again. An agent's tokens cannot
// take over.
func TestTakeoverRefusesTheAgentsInput(t *testing.T) {
	e := peopleEnv(t, nil)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	_, agent, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))
	_, computerOnly, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q,"computer_only":true}`, id))
	typing := `{"action":"type","text":"hello"}`

	if code, _, r := e.exchange(t, agent, "POST", base+"/computer", typing); code != 200 {
		t.Fatalf("the agent typing before anyone took over: %d %v", code, r)
	}
	for who, tok := range map[string]string{"desktop token": agent, "computer-only token": computerOnly} {
		if code, _, r := e.exchange(t, tok, "POST", base+"/control/take", `{}`); code != 403 || errCode(r) != "forbidden" ||
			!strings.Contains(errOf(r)["message"].(string), "person's token") {
			t.Errorf("take with a %s: %d %v", who, code, r)
		}
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/take", `{"name":"Dana","idle_timeout_s":0}`); code != 422 || errField(r) != "idle_timeout_s" {
		t.Errorf("idle_timeout_s 0: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/take", `{"name":"Da\u001bna"}`); code != 422 || errField(r) != "name" {
		t.Errorf("a name with an escape: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/take", `{"nme":"Dana"}`); code != 400 {
		t.Errorf("an unknown field: %d %v", code, r)
	}
	code, _, ctl := e.exchange(t, e.alice, "POST", base+"/control/take", `{"name":"Dana","idle_timeout_s":300}`)
	if code != 200 || ctl["holder"] != "person" || ctl["person"] != "Dana" || ctl["idle_timeout_s"] != 300.0 || ctl["viewers"] == nil {
		t.Fatalf("take: %d %v", code, ctl)
	}

	// The agent's input waits; its reads do not.
	for _, c := range []struct{ method, path, body string }{
		{"POST", base + "/computer", typing},
		{"POST", base + "/computer", `{"actions":[{"action":"screenshot"},{"action":"left_click","coordinate":[1,1]}]}`},
		{"PUT", base + "/clipboard", `{"text":"x"}`},
		{"POST", base + "/windows/0x1", `{"action":"focus"}`},
		{"POST", base + "/apps", `{"command":"mousepad"}`},
		{"POST", base + "/ui/n1", `{"action":"click"}`},
	} {
		code, h, r := e.exchange(t, agent, c.method, c.path, c.body)
		er := errOf(r)
		if code != 409 || er["code"] != "human_in_control" || er["holder"] != "person" || er["person"] != "Dana" || er["since"] == nil ||
			h.Get("Retry-After") != "10" {
			t.Errorf("%s %s %s while Dana holds input: %d %v (Retry-After %q)", c.method, c.path, c.body, code, r, h.Get("Retry-After"))
		}
	}
	for _, body := range []string{`{"action":"screenshot"}`, `{"actions":[{"action":"cursor_position"},{"action":"zoom","region":[0,0,10,10]},{"type":"wait"}]}`} {
		if code, _, r := e.exchange(t, agent, "POST", base+"/computer", body); code != 200 {
			t.Errorf("a read (%s) while Dana holds input: %d %v", body, code, r)
		}
	}
	if code, _, _ := e.exchange(t, agent, "GET", base+"/screenshot", ""); code != 200 {
		t.Errorf("a screenshot while Dana holds input: %d", code)
	}
	if code, _, r := e.exchange(t, agent, "GET", base+"/control", ""); code != 200 || r["person"] != "Dana" {
		t.Errorf("the agent reading the control: %d %v", code, r)
	}
	// The token that took over is the person's own.
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", typing); code != 200 {
		t.Errorf("the person's own token typing: %d %v", code, r)
	}
	// The desktop's record says who holds it.
	_, _, d := e.exchange(t, e.alice, "GET", base, "")
	if c, _ := d["control"].(map[string]any); c["holder"] != "person" || c["person"] != "Dana" || c["viewers"] != nil {
		t.Errorf("the record's control: %v", d["control"])
	}

	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/release", ""); code != 200 || r["holder"] != "agent" {
		t.Fatalf("release: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, agent, "POST", base+"/computer", typing); code != 200 {
		t.Errorf("the agent typing after the hand-back: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/release", `{}`); code != 200 || r["holder"] != "agent" {
		t.Errorf("a release while the agent holds it: %d %v", code, r)
	}
	if code, _, _ := e.exchange(t, e.bob, "GET", base+"/control", ""); code != 404 {
		t.Errorf("bob reading alice's control: %d", code)
	}
}

// TestHelpRequests: asking, answering (text or a choice), the errors of
// the contract, the long poll.
func TestHelpRequests(t *testing.T) {
	e := peopleEnv(t, nil)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	_, agent, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))

	for _, c := range []struct{ body, field string }{
		{`{"question":""}`, "question"},
		{`{"question":"` + strings.Repeat("x", 2001) + `"}`, "question"},
		{`{"question":"q","choices":["a","a"]}`, "choices[1]"},
		{`{"question":"q","choices":["a",""]}`, "choices[1]"},
		{`{"question":"q","choices":["1","2","3","4","5","6","7","8","9","10","11"]}`, "choices"},
		{`{"question":"q","timeout_s":5}`, "timeout_s"},
		{`{"question":"q","timeout_s":86401}`, "timeout_s"},
		{`{"question":"q","wait_s":901}`, "wait_s"},
	} {
		if code, _, r := e.exchange(t, agent, "POST", base+"/help", c.body); code != 422 || errField(r) != c.field {
			t.Errorf("%.60s: %d %v, want 422 on %s", c.body, code, r, c.field)
		}
	}
	if code, _, r := e.exchange(t, agent, "POST", base+"/help", `{"question":"q","bogus":1}`); code != 400 {
		t.Errorf("an unknown field: %d %v", code, r)
	}

	code, _, asked := e.exchange(t, agent, "POST", base+"/help", `{"question":"Which account?","choices":["work","personal"],"screenshot":true}`)
	if code != 201 || asked["status"] != "pending" || asked["kind"] != "help" || asked["screenshot"] != true || !strings.HasPrefix(asked["asked_by"].(string), "alice/") {
		t.Fatalf("ask: %d %v", code, asked)
	}
	rid := asked["id"].(string)
	req := base + "/requests/" + rid
	if _, _, d := e.exchange(t, e.alice, "GET", base, ""); d["needs_help"] != true || d["pending_approvals"] != 0.0 {
		t.Errorf("the record with a question pending: %v %v", d["needs_help"], d["pending_approvals"])
	}
	if code, _, _ := e.exchange(t, e.alice, "GET", req+"/screenshot", ""); code != 200 {
		t.Errorf("the question's screenshot: %d", code)
	}
	if code, _, r := e.exchange(t, e.alice, "GET", req+"?wait_s=901", ""); code != 422 || errField(r) != "wait_s" {
		t.Errorf("wait_s 901: %d %v", code, r)
	}
	// Who may answer, and how.
	if code, _, r := e.exchange(t, agent, "POST", req+"/answer", `{"answer":"work"}`); code != 403 {
		t.Errorf("the asking desktop token answering: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"choice":"other"}`); code != 422 || errField(r) != "choice" {
		t.Errorf("a choice not offered: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{}`); code != 422 {
		t.Errorf("no answer: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"answer":"a","choice":"work"}`); code != 422 {
		t.Errorf("answer and choice: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/approve", `{"reason":"ok"}`); code != 409 || errCode(r) != "wrong_kind" {
		t.Errorf("approving a help request: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.bob, "POST", req+"/answer", `{"choice":"work"}`); code != 404 {
		t.Errorf("bob answering alice's request: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/req_nope/answer", `{"answer":"x"}`); code != 404 || errCode(r) != "not_found" {
		t.Errorf("an unknown request: %d %v", code, r)
	}

	// The agent's long poll sees the answer.
	polled := make(chan map[string]any, 1)
	go func() {
		_, _, r := e.exchange(t, agent, "GET", req+"?wait_s=30", "")
		polled <- r
	}()
	time.Sleep(100 * time.Millisecond)
	code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"choice":"work"}`)
	if code != 200 || r["status"] != "answered" || r["answer"] != "work" || r["choice"] != true {
		t.Fatalf("answer: %d %v", code, r)
	}
	select {
	case r := <-polled:
		if r["status"] != "answered" || r["answer"] != "work" {
			t.Errorf("the long poll: %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not end with the answer")
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"answer":"again"}`); code != 409 || errCode(r) != "already_decided" || errOf(r)["status"] != "answered" {
		t.Errorf("answering again: %d %v", code, r)
	}

	// A request answered within wait_s comes back answered; one the token
	// that asked tries to answer is 403.
	done := make(chan map[string]any, 1)
	go func() {
		_, _, r := e.exchange(t, agent, "POST", base+"/help", `{"question":"Go on?","wait_s":30}`)
		done <- r
	}()
	p := e.people.pending(id, loop.KindHelp)
	if p == nil {
		t.Fatal("no pending question")
	}
	e.exchange(t, e.alice, "POST", base+"/requests/"+p.ID+"/answer", `{"answer":"yes"}`)
	if r := <-done; r["status"] != "answered" || r["answer"] != "yes" {
		t.Errorf("help with wait_s: %v", r)
	}
	_, _, own := e.exchange(t, e.alice, "POST", base+"/help", `{"question":"mine"}`)
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+own["id"].(string)+"/answer", `{"answer":"x"}`); code != 403 || errCode(r) != "forbidden" {
		t.Errorf("the asking token answering: %d %v", code, r)
	}
	// Expired.
	e.people.expire(own["id"].(string))
	if code, _, r := e.exchange(t, e.bob, "POST", base+"/requests/"+own["id"].(string)+"/answer", `{"answer":"x"}`); code != 404 {
		t.Errorf("bob: %d %v", code, r)
	}
	_, _, other := e.exchange(t, agent, "POST", base+"/help", `{"question":"late"}`)
	e.people.expire(other["id"].(string))
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+other["id"].(string)+"/answer", `{"answer":"x"}`); code != 409 || errCode(r) != "expired" {
		t.Errorf("answering an expired request: %d %v", code, r)
	}
	// Explicit approvals.
	if code, _, r := e.exchange(t, agent, "POST", base+"/approvals", `{"action":"submit","detail":[1]}`); code != 422 || errField(r) != "detail" {
		t.Errorf("detail not an object: %d %v", code, r)
	}
	code, _, ap := e.exchange(t, agent, "POST", base+"/approvals", `{"action":"submit the order form","detail":{"total":42},"timeout_s":60}`)
	act, _ := ap["action"].(map[string]any)
	if code != 201 || ap["kind"] != "approval" || act["kind"] != "explicit" || act["summary"] != "submit the order form" {
		t.Fatalf("explicit approval: %d %v", code, ap)
	}
	if _, _, d := e.exchange(t, e.alice, "GET", base, ""); d["pending_approvals"] != 1.0 {
		t.Errorf("the record's pending approvals: %v", d["pending_approvals"])
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+ap["id"].(string)+"/answer", `{"answer":"x"}`); code != 409 || errCode(r) != "wrong_kind" {
		t.Errorf("answering an approval: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+ap["id"].(string)+"/deny", `{"reason":"not now"}`); code != 200 || r["status"] != "denied" || r["reason"] != "not now" {
		t.Errorf("deny: %d %v", code, r)
	}
}

// countingGuest counts the commands that ran and the files deleted.
type countingGuest struct {
	Guest
	execs, deletes atomic.Int32
}

func (g *countingGuest) Exec(ctx context.Context, domain string, r guest.ExecRequest) (*guest.ExecResult, error) {
	g.execs.Add(1)
	return g.Guest.Exec(ctx, domain, r)
}

func (g *countingGuest) Delete(ctx context.Context, domain, p, user string, recursive bool) error {
	g.deletes.Add(1)
	return g.Guest.Delete(ctx, domain, p, user, recursive)
}

// TestApprovalGates: a call the policy names waits until a person
// decides: approved, it runs; denied, it answers 403 denied and does not
// run (and is no step).
func TestApprovalGates(t *testing.T) {
	var g *countingGuest
	e := peopleEnv(t, func(d *Deps) {
		g = &countingGuest{Guest: d.Guest}
		d.Guest = g
	})
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	_, agent, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))

	if code, _, r := e.exchange(t, agent, "PUT", base+"/approval-policy", `{"exec":["x"]}`); code != 403 {
		t.Errorf("an agent setting the policy: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "PUT", base+"/approval-policy", `{"exec":["ok","rm -rf ("]}`); code != 422 || errField(r) != "exec[1]" {
		t.Errorf("a pattern that does not compile: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "PUT", base+"/approval-policy", `{"exec":["ok"],"bogus":true}`); code != 400 {
		t.Errorf("an unknown field: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "GET", base+"/approval-policy", ""); code != 200 || len(r) != 0 {
		t.Errorf("no policy: %d %v", code, r)
	}
	code, _, pol := e.exchange(t, e.alice, "PUT", base+"/approval-policy", `{"exec":["rm\\s+-rf"],"file_delete":true,"urls":["^https://bank\\."],"timeout_s":60}`)
	if code != 200 || pol["file_delete"] != true {
		t.Fatalf("set the policy: %d %v", code, pol)
	}

	// Not matched: runs at once.
	if code, _, r := e.exchange(t, agent, "POST", base+"/exec", `{"cmd":"ls -l"}`); code != 200 || g.execs.Load() != 1 {
		t.Fatalf("an exec the policy does not name: %d %v", code, r)
	}
	gated := func(method, path, body string) chan [2]any {
		ch := make(chan [2]any, 1)
		go func() {
			code, _, r := e.exchange(t, agent, method, path, body)
			ch <- [2]any{code, r}
		}()
		return ch
	}
	// Approved: runs.
	ch := gated("POST", base+"/exec", `{"cmd":"rm -rf /home/agent/build"}`)
	p := e.people.pending(id, loop.KindApproval)
	if p == nil || !p.Gated || p.Action.Kind != "exec" || p.Action.Rule == "" {
		t.Fatalf("the gated exec's request: %+v", p)
	}
	select {
	case <-ch:
		t.Fatal("the gated exec answered before anyone decided")
	case <-time.After(200 * time.Millisecond):
	}
	if g.execs.Load() != 1 {
		t.Fatal("the gated exec ran before it was approved")
	}
	if _, _, d := e.exchange(t, e.alice, "GET", base, ""); d["pending_approvals"] != 1.0 {
		t.Errorf("pending approvals: %v", d["pending_approvals"])
	}
	if code, _, r := e.exchange(t, agent, "POST", base+"/requests/"+p.ID+"/approve", `{}`); code != 403 {
		t.Errorf("the agent approving its own call: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+p.ID+"/approve", `{"reason":"fine"}`); code != 200 || r["status"] != "approved" {
		t.Fatalf("approve: %d %v", code, r)
	}
	if out := <-ch; out[0] != 200 || g.execs.Load() != 2 {
		t.Errorf("the approved exec: %v (%d commands ran)", out, g.execs.Load())
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+p.ID+"/deny", `{}`); code != 409 || errCode(r) != "already_decided" {
		t.Errorf("deny after approve: %d %v", code, r)
	}

	// Denied: does not run.
	ch = gated("POST", base+"/exec", `{"argv":["rm","-rf","/home/agent/keep"]}`)
	p = e.people.pending(id, loop.KindApproval)
	if p == nil {
		t.Fatal("no request for the second exec")
	}
	e.exchange(t, e.alice, "POST", base+"/requests/"+p.ID+"/deny", `{"reason":"keep that folder"}`)
	out := <-ch
	er := errOf(out[1].(map[string]any))
	if out[0] != 403 || er["code"] != "denied" || er["reason"] != "keep that folder" || er["request_id"] != p.ID ||
		!strings.HasPrefix(er["decided_by"].(string), "alice/") {
		t.Errorf("the denied exec: %v", out)
	}
	if g.execs.Load() != 2 {
		t.Errorf("the denied exec ran")
	}
	// Timed out: denied with decided_by "".
	ch = gated("DELETE", base+"/files?path=/home/agent/x", "")
	p = e.people.pending(id, loop.KindApproval)
	if p == nil || p.Action.Kind != "file_delete" {
		t.Fatalf("the file delete's request: %+v", p)
	}
	e.people.expire(p.ID)
	out = <-ch
	if er := errOf(out[1].(map[string]any)); out[0] != 403 || er["decided_by"] != "" || g.deletes.Load() != 0 {
		t.Errorf("the delete nobody decided: %v (deletes %d)", out, g.deletes.Load())
	}
	// A URL in an exec's command line.
	ch = gated("POST", base+"/exec", `{"cmd":"curl -s https://bank.example.com/pay"}`)
	p = e.people.pending(id, loop.KindApproval)
	if p == nil || p.Action.Kind != "url" {
		t.Fatalf("the URL's request: %+v", p)
	}
	e.exchange(t, e.alice, "POST", base+"/requests/"+p.ID+"/approve", ``)
	if out := <-ch; out[0] != 200 {
		t.Errorf("the approved URL: %v", out)
	}
	// A body the handler refuses is not asked about.
	if code, _, _ := e.exchange(t, agent, "POST", base+"/exec", `{"cmd":"rm -rf /","argv":["x"]}`); code != 422 {
		t.Errorf("an invalid exec: %d", code)
	}
	// The steps: the denied and timed-out calls are none.
	if code, _, r := e.exchange(t, e.alice, "GET", base+"/steps", ""); code == 200 {
		for _, s := range r["steps"].([]any) {
			if st := s.(map[string]any); st["status"] == 403.0 {
				t.Errorf("a refused call became a step: %v", st)
			}
		}
	}
	if code, _, _ := e.exchange(t, e.alice, "DELETE", base+"/approval-policy", ""); code != 204 {
		t.Errorf("delete the policy: %d", code)
	}
	if _, _, r := e.exchange(t, e.alice, "GET", base+"/approval-policy", ""); len(r) != 0 {
		t.Errorf("the policy after delete: %v", r)
	}
}

// screenComputer is a fakeComputer with a 1280x800 screen and the
// pointer at (5, 6).
type screenComputer struct{ fakeComputer }

func (c *screenComputer) Run(ctx context.Context, domain string, req computer.Request) (*computer.Result, error) {
	res, err := c.fakeComputer.Run(ctx, domain, req)
	if err == nil && req.Action.Action == "cursor_position" {
		res.Results[0].Cursor = &computer.Point{X: 5, Y: 6}
	}
	if res != nil {
		res.Screen = computer.Size{Width: 1280, Height: 800}
	}
	return res, err
}

// fakeWindows has one focused window.
type fakeWindows struct{ title string }

func (w fakeWindows) Windows(context.Context, string) (*guest.WindowList, error) {
	return &guest.WindowList{Windows: []*guest.Window{{ID: "0x1", Title: "other"}, {ID: "0x2", Title: w.title, Focused: true}}}, nil
}
func (fakeWindows) WindowAction(context.Context, string, string, guest.WindowAction) (*guest.Window, error) {
	return &guest.Window{}, nil
}
func (fakeWindows) LaunchApp(context.Context, string, guest.LaunchRequest) (*guest.LaunchResult, error) {
	return &guest.LaunchResult{Process: &guest.Process{ID: "p-000000000001", PID: 7, Command: []string{"firefox"}, Running: true,
		StartedAt: time.Now()}, TimedOut: true}, nil
}

// TestComputerGates: keys and clicks are asked about with the screen's
// coordinates and the active window's title; app launches by their URLs.
func TestComputerGates(t *testing.T) {
	e := peopleEnv(t, func(d *Deps) {
		d.Computer = &screenComputer{}
		d.Windows = fakeWindows{title: "Checkout - Firefox"}
	})
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	e.exchange(t, e.alice, "PUT", base+"/approval-policy", `{"keys":[{"key":"Return","window_title":"Checkout"}],`+
		`"clicks":[{"name":"Pay","x":900,"y":600,"width":200,"height":60}],"urls":["^https://bank\\."]}`)
	decideAll := func(approve bool) chan int {
		stop := make(chan int)
		go func() {
			n := 0
			for {
				select {
				case stop <- n:
					return
				case <-time.After(20 * time.Millisecond):
				}
				list, _ := e.people.List(context.Background(), loop.Filter{DesktopID: id, Status: loop.StatusPending})
				for _, r := range list {
					verb := "deny"
					if approve {
						verb = "approve"
					}
					// Not alice: her token made the calls, and the token that
					// asked decides nothing.
					if code, _, _ := e.exchange(t, e.admin, "POST", base+"/requests/"+r.ID+"/"+verb, `{}`); code == 200 {
						n++
					}
				}
			}
		}()
		return stop
	}
	stop := decideAll(false)
	// A click in the region, given in a display half the screen's size.
	code, _, r := e.exchange(t, e.alice, "POST", base+"/computer",
		`{"actions":[{"action":"left_click","coordinate":[480,310]}],"display":{"width":640,"height":400}}`)
	if code != 403 || errCode(r) != "denied" {
		t.Errorf("a click on Pay: %d %v", code, r)
	}
	// Outside it, and a move then a click where the move left the pointer.
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"actions":[{"action":"left_click","coordinate":[10,10]},{"action":"key","text":"Tab"}]}`); code != 200 {
		t.Errorf("a click elsewhere: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"actions":[{"action":"mouse_move","coordinate":[950,610]},{"action":"left_click"}]}`); code != 403 {
		t.Errorf("a move onto Pay and a click: %d %v", code, r)
	}
	// A click where the pointer already is (asked: 5, 6): outside.
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"type":"click","x":920,"y":610}`); code != 403 {
		t.Errorf("an OpenAI click on Pay: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"action":"left_click"}`); code != 200 {
		t.Errorf("a click where the pointer is: %d %v", code, r)
	}
	// Return in the checkout window.
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"action":"key","text":"Return"}`); code != 403 {
		t.Errorf("Return at the checkout: %d %v", code, r)
	}
	// An app launched with a bank URL.
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/apps", `{"argv":["firefox","https://bank.example/pay"]}`); code != 403 {
		t.Errorf("launching the bank: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/apps", `{"argv":["firefox","https://example.org/"]}`); code != 200 {
		t.Errorf("launching another site: %d %v", code, r)
	}
	if n := <-stop; n != 5 {
		t.Errorf("%d requests decided, want 5", n)
	}
	e.people.mu.Lock()
	defer e.people.mu.Unlock()
	var clicks []string
	for _, in := range e.people.asked {
		if in.Kind == loop.ActionClick {
			clicks = append(clicks, fmt.Sprintf("%d,%d", in.X, in.Y))
		}
	}
	if strings.Join(clicks, " ") != "961,621 10,10 950,610 920,610 5,6" {
		t.Errorf("clicks asked about: %v", clicks)
	}
	if len(e.people.titles) == 0 || e.people.titles[0] != "Checkout - Firefox" {
		t.Errorf("window titles read: %v", e.people.titles)
	}
}

// TestConsolePeopleRoutes: the console page's side, with its token.
func TestConsolePeopleRoutes(t *testing.T) {
	e := peopleEnv(t, nil)
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	code, _, link := e.exchange(t, e.alice, "POST", base+"/console", `{"name":"Dana"}`)
	if code != 201 || link["name"] != "Dana" {
		t.Fatalf("a named console link: %d %v", code, link)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/console", `{"name":"Da\nna"}`); code != 422 || errField(r) != "name" {
		t.Errorf("a name with a line break: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/console", `{"name":"`+strings.Repeat("n", 65)+`"}`); code != 422 || errField(r) != "name" {
		t.Errorf("a name of 65: %d %v", code, r)
	}
	full := "?token=" + link["token"].(string)
	view := "?token=" + e.console(t, e.alice, id, true)["token"].(string)
	_, agent, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))
	_, _, asked := e.exchange(t, agent, "POST", base+"/help", `{"question":"which?","choices":["a","b"],"screenshot":true}`)
	rid := asked["id"].(string)

	code, _, st := e.exchange(t, "", "GET", base+"/console/state"+view, "")
	you, _ := st["you"].(map[string]any)
	if code != 200 || you["view_only"] != true || len(st["requests"].([]any)) != 1 || st["control"].(map[string]any)["holder"] != "agent" {
		t.Errorf("state for a view-only link: %d %v", code, st)
	}
	for _, p := range []string{"/console/control/take", "/console/control/release", "/console/requests/" + rid + "/answer",
		"/console/requests/" + rid + "/approve", "/console/requests/" + rid + "/deny"} {
		if code, _, r := e.exchange(t, "", "POST", base+p+view, `{"choice":"a"}`); code != 403 || errCode(r) != "forbidden" {
			t.Errorf("%s with a view-only link: %d %v", p, code, r)
		}
	}
	if code, _, _ := e.exchange(t, "", "GET", base+"/console/requests/"+rid+"/screenshot"+view, ""); code != 200 {
		t.Errorf("a request's screenshot with a view-only link: %d", code)
	}
	code, _, ctl := e.exchange(t, "", "POST", base+"/console/control/take"+full, "")
	if code != 200 || ctl["person"] != "Dana" || ctl["by"] != "console/"+link["id"].(string) {
		t.Fatalf("take in the console: %d %v", code, ctl)
	}
	if _, _, st := e.exchange(t, "", "GET", base+"/console/state"+full, ""); st["you"].(map[string]any)["holds_input"] != true {
		t.Errorf("state for the holder: %v", st)
	}
	if code, _, r := e.exchange(t, agent, "POST", base+"/computer", `{"action":"type","text":"x"}`); code != 409 || errOf(r)["person"] != "Dana" {
		t.Errorf("the agent while Dana holds input from the console: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, "", "POST", base+"/console/requests/"+rid+"/answer"+full, `{"choice":"b"}`); code != 200 || r["answer"] != "b" {
		t.Errorf("answer in the console: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, "", "POST", base+"/console/control/release"+full, ""); code != 200 || r["holder"] != "agent" {
		t.Errorf("release in the console: %d %v", code, r)
	}
	if code, _, _ := e.exchange(t, "", "GET", base+"/console/state?token=nope", ""); code != 401 {
		t.Errorf("state without a valid token: %d", code)
	}
	// A link the agent's own token made is the agent's: it cannot approve
	// or answer what the agent asked, nor take over.
	_, _, mine := e.exchange(t, agent, "POST", base+"/console", `{"name":"Agent"}`)
	_, _, again := e.exchange(t, agent, "POST", base+"/help", `{"question":"again?"}`)
	agentLink := "?token=" + mine["token"].(string)
	for _, p := range []string{"/console/control/take", "/console/requests/" + again["id"].(string) + "/answer"} {
		if code, _, r := e.exchange(t, "", "POST", base+p+agentLink, `{"answer":"yes"}`); code != 403 || errCode(r) != "forbidden" {
			t.Errorf("%s with a link the agent's token made: %d %v", p, code, r)
		}
	}
}

// TestRequestsAreTheOwners: the list across desktops is the caller's
// (every owner's for an admin); another owner's desktop's requests are
// not found.
func TestRequestsAreTheOwners(t *testing.T) {
	e := peopleEnv(t, nil)
	mine, theirs := runningDesktop(t, e, e.alice), runningDesktop(t, e, e.bob)
	_, _, a := e.exchange(t, e.alice, "POST", "/api/v1/desktops/"+mine+"/help", `{"question":"alice's"}`)
	e.exchange(t, e.bob, "POST", "/api/v1/desktops/"+theirs+"/approvals", `{"action":"bob's"}`)
	list := func(tok, q string) []string {
		_, _, r := e.exchange(t, tok, "GET", "/api/v1/requests"+q, "")
		var out []string
		for _, x := range r["requests"].([]any) {
			out = append(out, x.(map[string]any)["question"].(string))
		}
		return out
	}
	if got := list(e.alice, ""); len(got) != 1 || got[0] != "alice's" {
		t.Errorf("alice's list: %v", got)
	}
	if got := list(e.admin, "?status=pending"); len(got) != 2 {
		t.Errorf("the admin's list: %v", got)
	}
	if got := list(e.admin, "?kind=approval"); len(got) != 1 || got[0] != "bob's" {
		t.Errorf("the admin's approvals: %v", got)
	}
	if code, _, r := e.exchange(t, e.alice, "GET", "/api/v1/requests?status=open", ""); code != 422 || errField(r) != "status" {
		t.Errorf("an unknown status: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "GET", "/api/v1/requests?kind=x", ""); code != 422 || errField(r) != "kind" {
		t.Errorf("an unknown kind: %d %v", code, r)
	}
	for _, p := range []string{"/requests", "/requests/" + a["id"].(string), "/requests/" + a["id"].(string) + "/screenshot", "/control", "/approval-policy"} {
		if code, _, _ := e.exchange(t, e.bob, "GET", "/api/v1/desktops/"+mine+p, ""); code != 404 {
			t.Errorf("bob GET alice's %s: %d, want 404", p, code)
		}
	}
	// A request of one desktop is not found under another.
	if code, _, _ := e.exchange(t, e.admin, "GET", "/api/v1/desktops/"+theirs+"/requests/"+a["id"].(string), ""); code != 404 {
		t.Errorf("a request under another desktop: %d", code)
	}
	_, _, l := e.exchange(t, e.alice, "GET", "/api/v1/desktops/"+mine+"/requests?kind=help", "")
	if rs := l["requests"].([]any); len(rs) != 1 {
		t.Errorf("the desktop's list: %v", l)
	}
	// A request without a picture has none.
	if code, _, _ := e.exchange(t, e.alice, "GET", "/api/v1/desktops/"+mine+"/requests/"+a["id"].(string)+"/screenshot", ""); code != 404 {
		t.Errorf("no screenshot: %d", code)
	}
}

// TestPeopleOff: without People the routes are 503 and nothing is
// guarded.
func TestPeopleOff(t *testing.T) {
	e := peopleEnv(t, func(d *Deps) { d.People = nil })
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	for _, c := range [][2]string{{"GET", base + "/control"}, {"POST", base + "/help"}, {"GET", "/api/v1/requests"}, {"GET", base + "/approval-policy"}} {
		if code, _, r := e.exchange(t, e.alice, c[0], c[1], `{"question":"q"}`); code != 503 || errCode(r) != "unavailable" {
			t.Errorf("%s %s: %d %v", c[0], c[1], code, r)
		}
	}
	if code, _, r := e.exchange(t, e.bob, "GET", base+"/control", ""); code != 404 {
		t.Errorf("another owner: %d %v", code, r)
	}
	if code, _, d := e.exchange(t, e.alice, "GET", base, ""); code != 200 || d["control"] != nil {
		t.Errorf("the record: %d %v", code, d)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"action":"type","text":"x"}`); code != 200 {
		t.Errorf("computer use: %d %v", code, r)
	}
}

// specPeople drives every route of people in the loop once or more for
// TestResponsesMatchTheSpec.
func specPeople(t *testing.T, e *env, id string) {
	base := "/api/v1/desktops/" + id
	_, agent, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))
	_, help := e.call(t, specCall{token: agent, method: "POST", path: base + "/help", body: `{"question":"Which?","choices":["a","b"],"screenshot":true,"timeout_s":600}`, want: 201})
	_, ap := e.call(t, specCall{token: agent, method: "POST", path: base + "/approvals", body: `{"action":"pay","detail":{"total":1},"wait_s":0}`, want: 201})
	hid, aid := help["id"].(string), ap["id"].(string)
	_, link := e.call(t, specCall{token: e.alice, method: "POST", path: base + "/console", body: `{"name":"Dana"}`, want: 201})
	con := "?token=" + link["token"].(string)
	for _, c := range []specCall{
		{token: e.alice, method: "GET", path: base + "/control", want: 200},
		{token: e.alice, method: "POST", path: base + "/control/take", body: `{"name":"Erin","idle_timeout_s":60}`, want: 200},
		{token: agent, method: "POST", path: base + "/computer", body: `{"action":"key","text":"Return"}`, want: 409},
		{token: agent, method: "POST", path: base + "/control/take", body: `{}`, want: 403},
		{token: e.alice, method: "POST", path: base + "/control/take", body: `{"idle_timeout_s":0}`, want: 422},
		{token: e.alice, method: "POST", path: base + "/control/release", want: 200},
		{token: e.alice, method: "GET", path: base + "/requests?status=pending&kind=help", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/requests?status=pending", want: 200},
		{token: e.alice, method: "GET", path: "/api/v1/requests?kind=nope", want: 422},
		{token: e.alice, method: "GET", path: base + "/requests/" + hid + "?wait_s=0", want: 200},
		{token: e.alice, method: "GET", path: base + "/requests/req_nope", want: 404},
		{token: e.alice, method: "GET", path: base + "/requests/" + hid + "/screenshot", want: 200},
		{token: e.alice, method: "GET", path: base + "/requests/" + aid + "/screenshot", want: 404},
		{token: e.alice, method: "POST", path: base + "/requests/" + hid + "/answer", body: `{"choice":"c"}`, want: 422},
		{token: e.alice, method: "POST", path: base + "/requests/" + hid + "/answer", body: `{"choice":"a"}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/requests/" + hid + "/answer", body: `{"answer":"again"}`, want: 409},
		{token: e.alice, method: "POST", path: base + "/requests/" + aid + "/approve", body: `{"reason":"ok"}`, want: 200},
		{token: e.alice, method: "POST", path: base + "/requests/" + aid + "/deny", body: `{"reason":"no"}`, want: 409},
		{token: e.alice, method: "GET", path: base + "/approval-policy", want: 200},
		{token: e.alice, method: "PUT", path: base + "/approval-policy", body: `{"exec":["("]}`, want: 422},
		{token: e.alice, method: "PUT", path: base + "/approval-policy", body: `{"exec":["^git push"],"file_delete":false,` +
			`"keys":[{"key":"Return","window_title":"Checkout"}],"clicks":[{"name":"Pay","x":1,"y":2,"width":3,"height":4}],"urls":["^https://bank\\."],"timeout_s":60}`, want: 200},
		{token: e.alice, method: "DELETE", path: base + "/approval-policy", want: 204},
		{method: "GET", path: base + "/console/state" + con, want: 200},
		{method: "POST", path: base + "/console/control/take" + con, body: `{"idle_timeout_s":30}`, want: 200},
		{method: "POST", path: base + "/console/control/release" + con, want: 200},
	} {
		e.call(t, c)
	}
	_, h2 := e.call(t, specCall{token: agent, method: "POST", path: base + "/help", body: `{"question":"Again?","screenshot":true}`, want: 201})
	_, a2 := e.call(t, specCall{token: agent, method: "POST", path: base + "/approvals", body: `{"action":"again"}`, want: 201})
	_, a3 := e.call(t, specCall{token: agent, method: "POST", path: base + "/approvals", body: `{"action":"once more"}`, want: 201})
	for _, c := range []specCall{
		{method: "GET", path: base + "/console/requests/" + h2["id"].(string) + "/screenshot" + con, want: 200},
		{method: "POST", path: base + "/console/requests/" + h2["id"].(string) + "/answer" + con, body: `{"answer":"yes"}`, want: 200},
		{method: "POST", path: base + "/console/requests/" + a2["id"].(string) + "/approve" + con, body: `{"reason":"fine"}`, want: 200},
		{method: "POST", path: base + "/console/requests/" + a3["id"].(string) + "/deny" + con, want: 200},
		{method: "POST", path: base + "/console/requests/" + a3["id"].(string) + "/answer" + con, body: `{"answer":"x"}`, want: 409},
	} {
		e.call(t, c)
	}
}

// TestPeopleWithTheRealLoop runs the routes over internal/loop itself (its
// own store), so the API and the service agree on what they say.
func TestPeopleWithTheRealLoop(t *testing.T) {
	st := storetest.Open(t, filepath.Join(t.TempDir(), "loop.db"))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	svc, err := loop.New(ctx, loop.Config{Store: st, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := peopleEnv(t, func(d *Deps) { d.People = svc })
	id := runningDesktop(t, e, e.alice)
	base := "/api/v1/desktops/" + id
	_, agent, _ := e.mint(t, e.alice, fmt.Sprintf(`{"desktop_id":%q}`, id))

	// Control.
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/take", `{"name":"Dana"}`); code != 200 || r["person"] != "Dana" {
		t.Fatalf("take: %d %v", code, r)
	}
	if code, h, r := e.exchange(t, agent, "POST", base+"/computer", `{"action":"type","text":"x"}`); code != 409 ||
		errCode(r) != "human_in_control" || h.Get("Retry-After") != "10" {
		t.Errorf("the agent while Dana holds input: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/computer", `{"action":"type","text":"x"}`); code != 200 {
		t.Errorf("Dana's own token: %d %v", code, r)
	}
	if _, _, d := e.exchange(t, e.alice, "GET", base, ""); d["control"].(map[string]any)["person"] != "Dana" {
		t.Errorf("the record: %v", d["control"])
	}
	if code, _, r := e.exchange(t, e.alice, "POST", base+"/control/release", ""); code != 200 || r["holder"] != "agent" {
		t.Errorf("release: %d %v", code, r)
	}

	// Help.
	_, _, h := e.exchange(t, agent, "POST", base+"/help", `{"question":"Which?","choices":["a","b"],"screenshot":true}`)
	req := base + "/requests/" + h["id"].(string)
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"choice":"c"}`); code != 422 || errField(r) != "choice" {
		t.Errorf("a choice not offered: %d %v", code, r)
	}
	if code, _, _ := e.exchange(t, e.alice, "GET", req+"/screenshot", ""); code != 200 {
		t.Errorf("the screenshot: %d", code)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"choice":"b"}`); code != 200 || r["answer"] != "b" {
		t.Errorf("answer: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "POST", req+"/answer", `{"answer":"again"}`); code != 409 || errCode(r) != "already_decided" {
		t.Errorf("again: %d %v", code, r)
	}

	// Gates.
	if code, _, r := e.exchange(t, e.alice, "PUT", base+"/approval-policy", `{"exec":["("]}`); code != 422 || errField(r) != "exec[0]" {
		t.Errorf("a bad pattern: %d %v", code, r)
	}
	if code, _, r := e.exchange(t, e.alice, "PUT", base+"/approval-policy", `{"exec":["rm\\s+-rf"],"timeout_s":30}`); code != 200 {
		t.Fatalf("set the policy: %d %v", code, r)
	}
	for _, approve := range []bool{true, false} {
		ch := make(chan [2]any, 1)
		go func() {
			code, _, r := e.exchange(t, agent, "POST", base+"/exec", `{"cmd":"rm -rf /tmp/x"}`)
			ch <- [2]any{code, r}
		}()
		var rid string
		for range 500 {
			_, _, l := e.exchange(t, e.alice, "GET", base+"/requests?status=pending&kind=approval", "")
			if rs := l["requests"].([]any); len(rs) > 0 {
				rid = rs[0].(map[string]any)["id"].(string)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		verb := map[bool]string{true: "approve", false: "deny"}[approve]
		if code, _, r := e.exchange(t, e.alice, "POST", base+"/requests/"+rid+"/"+verb, `{"reason":"because"}`); code != 200 {
			t.Fatalf("%s: %d %v", verb, code, r)
		}
		out := <-ch
		if approve && out[0] != 200 || !approve && (out[0] != 403 || errCode(out[1].(map[string]any)) != "denied") {
			t.Errorf("the %sd exec: %v", verb, out)
		}
	}
}
