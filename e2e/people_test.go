//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// people drives e2e/browser/people.mjs: one headless Chromium with two
// people (A and B), each on a console link of their own, taking commands
// one JSON line at a time.
type people struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	err strings.Builder
}

// peopleReply is one answer of people.mjs.
type peopleReply struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Ready     bool   `json:"ready"`
	Status    string `json:"status"`
	Viewers   string `json:"viewers"`
	Badge     string `json:"badge"`
	Title     string `json:"title"`
	ID        string `json:"id"`
	Text      string `json:"text"`
	ClickedAt int64  `json:"clicked_at_ms"`
}

func startPeople(t *testing.T, s *server, a, b consoleGrant) *people {
	t.Helper()
	p := &people{t: t, cmd: exec.Command("node", "people.mjs")}
	p.cmd.Dir = "browser"
	p.cmd.Env = append(os.Environ(), "CONSOLE_URL_A="+s.url+a.URL, "CONSOLE_URL_B="+s.url+b.URL)
	if strings.HasPrefix(s.url, "https://") {
		p.cmd.Env = append(p.cmd.Env, "IGNORE_HTTPS_ERRORS=1")
	}
	p.cmd.Stderr = &p.err
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 1<<20), 1<<20)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("people.mjs: %v", err)
	}
	t.Cleanup(p.quit)
	if r := p.read(); !r.Ready {
		t.Fatalf("people.mjs did not get both consoles up: %+v\n%s", r, p.err.String())
	}
	return p
}

func (p *people) read() peopleReply {
	p.t.Helper()
	if !p.out.Scan() {
		p.t.Fatalf("people.mjs ended: %v\n%s", p.out.Err(), p.err.String())
	}
	var r peopleReply
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		p.t.Fatalf("people.mjs printed %q: %v", p.out.Text(), err)
	}
	return r
}

// do sends one command and returns its answer; a failed command fails the
// test (with what the script said on stderr).
func (p *people) do(cmd map[string]any) peopleReply {
	p.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := fmt.Fprintf(p.in, "%s\n", b); err != nil {
		p.t.Fatalf("people.mjs stdin: %v", err)
	}
	r := p.read()
	if !r.OK {
		p.t.Fatalf("people.mjs %v: %s\n%s", cmd, r.Error, p.err.String())
	}
	return r
}

func (p *people) quit() {
	if p.cmd.ProcessState != nil {
		return
	}
	fmt.Fprintln(p.in, `{"do":"quit"}`)
	p.in.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// loopRequest is a help or approval request as the API answers it.
type loopRequest struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind"`
	Status    string   `json:"status"`
	Question  string   `json:"question"`
	Choices   []string `json:"choices"`
	Answer    string   `json:"answer"`
	Choice    bool     `json:"choice"`
	Reason    string   `json:"reason"`
	DecidedBy string   `json:"decided_by"`
	Action    *struct {
		Kind, Summary, Rule string
	} `json:"action"`
}

// denial is a 403 denied as a gated call answers it.
type denial struct {
	Error struct {
		Code, Message, Reason string
		RequestID             string `json:"request_id"`
		DecidedBy             string `json:"decided_by"`
		Person                string `json:"person"`
		Holder                string `json:"holder"`
	} `json:"error"`
}

// testPeople: a person takes over a desktop from its agent in the console
// (the agent's input is refused, the person's keys arrive, a second
// viewer's do not), hands it back, answers the agent's question from the
// console, and decides approvals of gated exec calls (denied → not run,
// approved → ran, no decision → denied by the timeout); the step log and
// the history tell it in order.
func testPeople(t *testing.T, s *server, token string, d *apiv1.Desktop) {
	base := "/api/v1/desktops/" + d.ID
	// The agent has a token of its own, for this desktop only: it cannot
	// decide its own approvals, take over or change the policy; the
	// people's console links are made with the owner's token.
	var agentTok struct {
		Token string `json:"token"`
	}
	if code := s.call(token, "POST", "/api/v1/tokens", map[string]any{"desktop_id": d.ID}, &agentTok); code != 201 {
		t.Fatalf("mint the agent's token: %d", code)
	}
	agent := agentTok.Token
	s.expectError(agent, "POST", base+"/control/take", nil, 403, "forbidden")
	s.expectError(agent, "PUT", base+"/approval-policy", map[string]any{}, 403, "forbidden")
	shots := filepath.Join(os.TempDir(), "bureau-e2e-people")
	os.MkdirAll(shots, 0o755)
	s.guest(d, "pkill -x xterm")
	s.catWindow(d, "90x20+200+160", "/tmp/people-typed")
	typeAsAgent := func(text string) (int, denial) {
		var e denial
		code := s.call(agent, "POST", base+"/computer", map[string]any{"action": "type", "text": text}, &e)
		return code, e
	}
	if code, e := typeAsAgent("agent1 "); code != 200 {
		t.Fatalf("the agent types before anyone took over: %d %+v", code, e)
	}
	// The typing is the newest step once it is recorded (just after the
	// call): the check's own steps come after it.
	var lastStep stepList
	for i := 0; i < 50 && (len(lastStep.Steps) == 0 || !strings.Contains(string(lastStep.Steps[0].Input), "agent1")); i++ {
		time.Sleep(100 * time.Millisecond)
		s.call(token, "GET", base+"/steps?newest=true&limit=1", nil, &lastStep)
	}
	if len(lastStep.Steps) != 1 {
		t.Fatalf("the agent's typing is not in the step log")
	}
	seqBefore := lastStep.Steps[0].Seq

	// A recording is being made: human steps say where they are in it.
	var rec recordingView
	if code := s.call(token, "POST", base+"/recordings", map[string]any{"fps": 2}, &rec); code != 201 {
		t.Fatalf("start a recording: %d %+v", code, rec)
	}
	defer s.call(token, "POST", base+"/recordings/"+rec.ID+"/stop", nil, nil)

	dana := consoleLink(t, s, token, d, "Dana")
	erin := consoleLink(t, s, token, d, "Erin")
	p := startPeople(t, s, dana, erin)
	if r := p.do(map[string]any{"do": "state", "who": "A"}); !strings.Contains(r.Status, "agent") ||
		!strings.Contains(r.Viewers, "Dana") || !strings.Contains(r.Viewers, "Erin") {
		t.Errorf("Dana's console before takeover: %+v", r)
	}

	// Take over: the agent is refused at once, with who holds input.
	took := p.do(map[string]any{"do": "take", "who": "A"})
	code, e := typeAsAgent("agent-refused ")
	refusedAt := time.Now().UnixMilli()
	if code != 409 || e.Error.Code != "human_in_control" || e.Error.Person != "Dana" {
		t.Fatalf("the agent typing while Dana holds input: %d %+v", code, e)
	}
	t.Logf("bench: takeover click → the agent refused: %d ms", refusedAt-took.ClickedAt)
	var shot []byte
	if code := s.call(agent, "GET", base+"/screenshot", nil, &shot); code != 200 {
		t.Errorf("a screenshot while a person holds input: %d", code)
	}
	var ctl struct {
		Holder, Person string
		Viewers        []struct {
			Name       string
			HoldsInput bool `json:"holds_input"`
		}
	}
	s.call(token, "GET", base+"/control", nil, &ctl)
	if ctl.Holder != "person" || ctl.Person != "Dana" || len(ctl.Viewers) != 2 {
		t.Errorf("control while Dana holds it: %+v", ctl)
	}
	var rec1 apiv1.Desktop
	s.call(token, "GET", base, nil, &rec1)
	if rec1.Control == nil || rec1.Control.Holder != "person" || rec1.Control.Person != "Dana" {
		t.Errorf("the desktop's record while Dana holds input: %+v", rec1.Control)
	}
	if r := p.do(map[string]any{"do": "state", "who": "B"}); !strings.Contains(r.Status, "Dana") {
		t.Errorf("Erin's console while Dana holds input says %q", r.Status)
	}
	// Dana's keys arrive; Erin's (a second viewer without control) do not.
	p.do(map[string]any{"do": "type", "who": "A", "text": "dana-typed "})
	p.do(map[string]any{"do": "type", "who": "B", "text": "erin-dropped "})
	p.do(map[string]any{"do": "screenshot", "who": "A", "path": filepath.Join(shots, "dana-in-control.png")})
	p.do(map[string]any{"do": "screenshot", "who": "B", "path": filepath.Join(shots, "erin-watching.png")})
	time.Sleep(4 * time.Second) // Dana's input episode ends: a human step

	// Hand back: the agent types again.
	p.do(map[string]any{"do": "handback", "who": "A"})
	if code, e := typeAsAgent("agent2"); code != 200 {
		t.Errorf("the agent typing after Dana handed back: %d %+v", code, e)
	}
	var typed string
	for i := 0; i < 40 && !strings.Contains(typed, "agent2"); i++ {
		time.Sleep(250 * time.Millisecond)
		typed, _ = s.guest(d, "cat /tmp/people-typed")
	}
	if typed != "agent1 dana-typed agent2" {
		t.Errorf("the terminal got %q, want the agent's, then Dana's, then the agent's text (and none of Erin's)", typed)
	}
	s.guest(d, "pkill -x xterm")

	// A help request answered in Erin's console reaches the agent's
	// waiting call.
	helpDone := make(chan loopRequest, 1)
	go func() {
		var r loopRequest
		code := s.call(agent, "POST", base+"/help", map[string]any{"question": "Which colour should the logo be?",
			"choices": []string{"red", "blue"}, "screenshot": true, "wait_s": 120}, &r)
		if code != 201 {
			r.Status = fmt.Sprintf("HTTP %d", code)
		}
		helpDone <- r
	}()
	asked := p.do(map[string]any{"do": "wait_request", "who": "B", "kind": "help", "timeout_ms": 60000})
	if !strings.Contains(asked.Text, "Which colour") || asked.Badge != "1" || !strings.HasPrefix(asked.Title, "(1)") {
		t.Errorf("Erin's console with a question pending: %+v", asked)
	}
	var pending apiv1.Desktop
	s.call(token, "GET", base, nil, &pending)
	if !pending.NeedsHelp {
		t.Errorf("the desktop's record does not say it needs help")
	}
	w := p.do(map[string]any{"do": "web", "token": token, "desktop": d.ID, "wait_for": "needs help", "path": filepath.Join(shots, "web-console-needs-help.png")})
	t.Logf("the web console's card: %q", w.Text)
	var png []byte
	if code := s.call(token, "GET", base+"/requests/"+asked.ID+"/screenshot", nil, &png); code != 200 || len(png) < 1000 {
		t.Errorf("the question's screenshot: %d, %d bytes", code, len(png))
	}
	p.do(map[string]any{"do": "answer", "who": "B", "id": asked.ID, "choice": "blue"})
	select {
	case r := <-helpDone:
		if r.Status != "answered" || r.Answer != "blue" || !r.Choice {
			t.Errorf("the agent's help call got %+v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's help call did not return after Erin answered")
	}
	s.expectError(token, "POST", base+"/requests/"+asked.ID+"/answer", map[string]any{"answer": "again"}, 409, "already_decided")

	// Approval gates on exec: denied in the console → not run; approved →
	// run; no decision → denied by the timeout.
	s.guest(d, "mkdir -p /home/agent/people-keep /home/agent/people-scratch && touch /home/agent/people-keep/marker && chown -R agent: /home/agent/people-*")
	e422 := s.expectError(token, "PUT", base+"/approval-policy", map[string]any{"exec": []string{"rm -rf ("}}, 422, "invalid")
	if e422.Error.Field != "exec[0]" {
		t.Errorf("a policy that does not parse names %q", e422.Error.Field)
	}
	if code := s.call(token, "PUT", base+"/approval-policy", map[string]any{"exec": []string{`rm\s+-rf`}, "timeout_s": 8}, nil); code != 200 {
		t.Fatalf("set the approval policy: %d", code)
	}
	gated := func(cmd string) chan execOutcome {
		ch := make(chan execOutcome, 1)
		go func() {
			var o execOutcome
			o.code = s.call(agent, "POST", base+"/exec", map[string]any{"cmd": cmd}, &o.body)
			o.at = time.Now().UnixMilli()
			ch <- o
		}()
		return ch
	}
	denied := gated("rm -rf /home/agent/people-keep")
	req := p.do(map[string]any{"do": "wait_request", "who": "A", "kind": "approval", "timeout_ms": 60000})
	if !strings.Contains(req.Text, "rm -rf /home/agent/people-keep") {
		t.Errorf("the approval Dana sees: %q", req.Text)
	}
	p.do(map[string]any{"do": "screenshot", "who": "A", "path": filepath.Join(shots, "approval-pending.png")})
	s.expectError(agent, "POST", base+"/requests/"+req.ID+"/approve", map[string]any{}, 403, "forbidden")
	p.do(map[string]any{"do": "deny", "who": "A", "id": req.ID, "reason": "keep that folder"})
	if o := waitExec(t, denied); o.code != 403 || o.body.Error.Code != "denied" || o.body.Error.Reason != "keep that folder" {
		t.Errorf("the denied exec answered %d %+v", o.code, o.body)
	}
	if out, code := s.guest(d, "test -e /home/agent/people-keep/marker && echo kept"); code != 0 || out != "kept" {
		t.Errorf("a denied rm -rf ran: marker %q", out)
	}
	s.expectError(token, "POST", base+"/requests/"+req.ID+"/approve", map[string]any{}, 409, "already_decided")
	s.expectError(token, "POST", base+"/requests/req_0000000000000000/approve", map[string]any{}, 404, "not_found")

	approved := gated("rm -rf /home/agent/people-scratch")
	req = p.do(map[string]any{"do": "wait_request", "who": "B", "kind": "approval", "timeout_ms": 60000})
	click := p.do(map[string]any{"do": "approve", "who": "B", "id": req.ID, "reason": "scratch is fine"})
	o := waitExec(t, approved)
	if o.code != 200 {
		t.Errorf("the approved exec answered %d %+v", o.code, o.body)
	}
	t.Logf("bench: approval click → the gated exec answered: %d ms", o.at-click.ClickedAt)
	if _, code := s.guest(d, "test -e /home/agent/people-scratch"); code == 0 {
		t.Errorf("the approved rm -rf did not run")
	}

	timedOut := gated("rm -rf /home/agent/people-keep")
	if o := waitExec(t, timedOut); o.code != 403 || o.body.Error.Code != "denied" || o.body.Error.DecidedBy != "" {
		t.Errorf("the exec nobody decided answered %d %+v", o.code, o.body)
	}
	if _, code := s.guest(d, "test -e /home/agent/people-keep/marker"); code != 0 {
		t.Errorf("an rm -rf nobody approved ran")
	}

	// A key rule that names a window: Return in the terminal (its title
	// is "sh") waits; the owner finds it among the pending approvals of
	// all their desktops and approves it through the API. Return in a
	// window the rule does not name goes straight through.
	s.catWindow(d, "60x10+200+160", "/tmp/people-keys")
	if code := s.call(token, "PUT", base+"/approval-policy", map[string]any{"keys": []map[string]any{{"key": "Return", "window_title": "^sh$"}}, "timeout_s": 60}, nil); code != 200 {
		t.Fatalf("set a key rule: %d", code)
	}
	keyDone := make(chan int, 1)
	go func() {
		keyDone <- s.call(agent, "POST", base+"/computer", map[string]any{"action": "key", "text": "Return"}, nil)
	}()
	var keyReq loopRequest
	for i := 0; i < 100 && keyReq.ID == ""; i++ {
		time.Sleep(200 * time.Millisecond)
		var all struct{ Requests []loopRequest }
		s.call(token, "GET", "/api/v1/requests?status=pending&kind=approval", nil, &all)
		for _, r := range all.Requests {
			if r.Action != nil && r.Action.Kind == "key" {
				keyReq = r
			}
		}
	}
	if keyReq.ID == "" || !strings.Contains(keyReq.Action.Summary, `"sh"`) {
		t.Fatalf("Return in the terminal is not pending among the owner's approvals: %+v", keyReq)
	}
	if code := s.call(token, "POST", base+"/requests/"+keyReq.ID+"/approve", map[string]any{"reason": "submit it"}, nil); code != 200 {
		t.Errorf("approve the key through the API: %d", code)
	}
	select {
	case code := <-keyDone:
		if code != 200 {
			t.Errorf("the approved key answered %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved key did not answer")
	}
	s.call(token, "PUT", base+"/approval-policy", map[string]any{"keys": []map[string]any{{"key": "Return", "window_title": "^Mousepad"}}}, nil)
	if code := s.call(agent, "POST", base+"/computer", map[string]any{"action": "key", "text": "Return"}, nil); code != 200 {
		t.Errorf("Return in a window the rule does not name: %d", code)
	}
	if out, _ := s.guest(d, "od -c /tmp/people-keys | head -1"); strings.Count(out, `\r`)+strings.Count(out, `\n`) != 2 {
		t.Errorf("the terminal got %q, want two Returns", out)
	}
	s.guest(d, "pkill -x xterm")
	s.call(token, "DELETE", base+"/approval-policy", nil, nil)
	p.quit()

	// The step log has the person's input, the question and the decisions
	// in order, among the agent's steps.
	var after stepList
	s.call(token, "GET", fmt.Sprintf("%s/steps?after=%d&limit=200", base, seqBefore), nil, &after)
	var kinds []string
	var human, help int
	for _, st := range after.Steps {
		switch st.Kind {
		case "human":
			human++
			in := string(st.Input) + string(st.Result)
			if !strings.Contains(in, "Dana") || !strings.Contains(in, rec.ID) {
				t.Errorf("a human step without its person or its place in the recording: %s %s", st.Input, st.Result)
			}
		case "help":
			help++
			if !strings.Contains(string(st.Result), "Erin") || !strings.Contains(string(st.Result), "blue") {
				t.Errorf("the help step: %s", st.Result)
			}
		}
		if st.Kind == "human" || st.Kind == "help" || st.Kind == "approval" || st.Kind == "computer" || st.Kind == "exec" {
			kinds = append(kinds, st.Kind)
		}
	}
	// The denied call is no step (it did not run); its approval is.
	want := []string{"human", "computer", "help", "approval", "exec", "approval", "computer"}
	if got := compact(kinds); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the step log after the check started reads %v, want %v in that order", got, want)
	}
	s.eventsInclude(token, d.ID, "control_taken", "control_returned", "help_requested", "help_answered",
		"approval_requested", "denied", "approved")
}

// execOutcome is a gated exec's answer and when it came.
type execOutcome struct {
	code int
	body denial
	at   int64
}

func waitExec(t *testing.T, ch chan execOutcome) execOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(2 * time.Minute):
		t.Fatal("a gated exec did not answer")
		return execOutcome{}
	}
}

// compact drops repeats of a kind in a row (a person's input may be cut
// into several human steps; the agent typed twice).
func compact(kinds []string) []string {
	var out []string
	for _, k := range kinds {
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// consoleLink makes an interactive console link for a named person.
func consoleLink(t *testing.T, s *server, token string, d *apiv1.Desktop, name string) consoleGrant {
	t.Helper()
	var g consoleGrant
	if code := s.call(token, "POST", "/api/v1/desktops/"+d.ID+"/console", map[string]any{"name": name}, &g); code != 201 || g.Token == "" {
		t.Fatalf("console link for %s: %d %+v", name, code, g)
	}
	return g
}
