//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
)

// soakOp is one operation: its request, the state it began from, where it
// ends when it succeeds and how long that may take.
type soakOp struct {
	kind               string // start, stop, pause, resume, hibernate, snapshot, snapshot-delete
	id, name           string
	method, path, body string
	from, target       desktop.State
	snap               string // snapshot and snapshot-delete: its name
	wait               time.Duration
}

func newOp(d *apiv1.Desktop, kind string, target desktop.State, wait time.Duration) *soakOp {
	return &soakOp{kind: kind, id: d.ID, name: d.Name, method: "POST", path: "/api/v1/desktops/" + d.ID + "/" + kind,
		from: desktop.State(d.State), target: target, wait: wait}
}

func (op *soakOp) String() string {
	return strings.TrimSpace(op.name + " " + op.method + " " + strings.TrimPrefix(op.path, "/api/v1/desktops/"+op.id) + " " + op.body)
}

// mayBeginFrom says whether bureau may begin op from st (a 409
// invalid_state from any other state is an expected refusal).
func (op *soakOp) mayBeginFrom(st desktop.State) bool {
	switch op.kind {
	case "snapshot":
		return st == desktop.StateRunning || st.Frozen() || st == desktop.StateStopped
	case "snapshot-delete":
		return true
	}
	return slices.Contains(desktop.Transitions()[desktop.Op(op.kind)].From, st)
}

// runOp sends an operation no fault disturbs and holds it to its end.
func (k *soak) runOp(op *soakOp) {
	k.t.Helper()
	k.finish(op, soakDo(opClient, k.newRequest(context.Background(), op)), "")
}

func (k *soak) newRequest(ctx context.Context, op *soakOp) *http.Request {
	var body io.Reader
	if op.body != "" {
		body = strings.NewReader(op.body)
	}
	req, _ := http.NewRequestWithContext(ctx, op.method, k.s.url+op.path, body)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	return req
}

// soakAnswer is bureau's answer to a request; err: none came.
type soakAnswer struct {
	code int
	body []byte
	err  error
}

func (a soakAnswer) String() string {
	if a.err != nil {
		return "no answer (" + a.err.Error() + ")"
	}
	return fmt.Sprintf("%d %s", a.code, strings.TrimSpace(string(a.body)))
}

func soakDo(c *http.Client, req *http.Request) soakAnswer {
	resp, err := c.Do(req)
	if err != nil {
		return soakAnswer{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return soakAnswer{err: err}
	}
	return soakAnswer{code: resp.StatusCode, body: body}
}

// finish holds an operation to its end. fault names the fault that came
// with it ("" = none). An answered success must reach the target; with no
// answer (bureau killed, the client hung up) the operation may also not
// have begun; a 409 invalid_state leaves the desktop as it was if its
// state explains the refusal. A 5xx is accepted only under a libvirtd
// restart (the desktop must then be as it was or at the target); any other
// 5xx or 4xx is a violation. A desktop in error is a violation at once.
func (k *soak) finish(op *soakOp, a soakAnswer, fault string) {
	k.t.Helper()
	k.t.Logf("soak step %s: %s → %s", k.at(), op, a)
	c := k.ops[op.kind]
	if c == nil {
		c = &soakCount{}
		k.ops[op.kind] = c
	}
	c.sent++
	accept := []desktop.State{op.target, op.from}
	var cond func() bool // what an answered snapshot or its delete must show too
	var e apiErr
	json.Unmarshal(a.body, &e)
	bad, refused := false, false
	switch {
	case a.err == nil && a.code == http.StatusAccepted && fault == "libvirtd restarted":
		// Accepted, then carried out while libvirtd restarted: it may fail
		// back to where it began (never into error).
	case a.err == nil && a.code/100 == 2:
		accept = []desktop.State{op.target}
		switch op.kind {
		case "snapshot":
			cond = func() bool { return k.listed(op.id, op.snap) }
		case "snapshot-delete":
			cond = func() bool { return !k.listed(op.id, op.snap) }
		}
	case a.err != nil:
		if fault == "" {
			bad = true
			k.violate("%s: %s", op, a)
		}
	case a.code == http.StatusConflict && e.Error.Code == "invalid_state" && e.Error.State != "" && !op.mayBeginFrom(desktop.State(e.Error.State)):
		refused = true
		k.t.Logf("soak step %s: %s refused: the desktop was %s", k.at(), op, e.Error.State)
		accept = []desktop.State{op.from, desktop.State(e.Error.State)}
	case a.code >= 500 && fault == "libvirtd restarted":
		k.counts["op-failed"]++
		k.t.Logf("soak step %s: %s failed under the libvirtd restart: %s", k.at(), op, a)
	default:
		bad = true
		k.violate("%s: %s", op, a)
	}
	wait := op.wait
	if fault != "" {
		wait += faultSlack
	}
	begun := time.Now()
	d, ok := k.waitOp(op, accept, cond, wait)
	took := time.Since(begun).Round(100 * time.Millisecond)
	switch {
	case d.State == string(desktop.StateError):
		c.missed++
		if k.failed[d.ID] != d.LastError {
			k.failed[d.ID] = d.LastError
			k.violate("%s (%s) left %s in error: %s", op, a, d.Name, d.LastError)
		}
	case !ok:
		c.missed++
		also := ""
		if cond != nil {
			also = fmt.Sprintf(" (snapshot %s listed: %t)", op.snap, k.listed(op.id, op.snap))
		}
		k.violate("%s (%s): %s is %s (operation %q, step %q, VM %s)%s after %s; it may end %v",
			op, a, d.Name, d.State, d.Operation, d.OperationStep, k.s.vmState(d), also, took, accept)
	case bad:
		c.missed++
	case refused:
		c.refused++
	case d.State == string(op.target) && k.done(op):
		c.reached++
		k.t.Logf("soak step %s: %s reached %s in %s", k.at(), op, d.State, took)
	default:
		c.unchanged++
		k.t.Logf("soak step %s: %s left %s %s (%s)", k.at(), op, d.Name, d.State, orElse(fault, "failed"))
	}
	if ok {
		k.accept[op.id] = accept
	}
}

// done says whether a snapshot is listed, or a deleted one no longer.
func (k *soak) done(op *soakOp) bool {
	switch op.kind {
	case "snapshot":
		return k.listed(op.id, op.snap)
	case "snapshot-delete":
		return !k.listed(op.id, op.snap)
	}
	return true
}

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// waitOp waits until no operation moves the desktop, its VM agrees, and it
// is in one of accept (and cond holds). It gives up at the deadline, when
// the desktop is in error, or once it has been settled elsewhere for
// quietWrong.
func (k *soak) waitOp(op *soakOp, accept []desktop.State, cond func() bool, wait time.Duration) (*apiv1.Desktop, bool) {
	k.t.Helper()
	deadline := time.Now().Add(wait)
	var quietSince time.Time
	for {
		d := k.get(op.id)
		if d.State == string(desktop.StateError) {
			return d, false
		}
		quiet := desktop.State(d.State).Settled() && d.Operation == "" && k.matches(d) && !(d.State == string(desktop.StateCrashed) && d.RestartOnCrash)
		if quiet && slices.Contains(accept, desktop.State(d.State)) && (cond == nil || cond()) {
			return d, true
		}
		switch {
		case !quiet:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) > quietWrong:
			return d, false
		}
		if time.Now().After(deadline) {
			return d, false
		}
		time.Sleep(time.Second)
	}
}
