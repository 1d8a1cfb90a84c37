package api

import (
	"context"
	"sync"
	"testing"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
)

// seenComputer records the request it runs and answers one result per
// action.
type seenComputer struct {
	fakeComputer
	mu  sync.Mutex
	req computer.Request
}

func (f *seenComputer) Run(_ context.Context, _ string, req computer.Request) (*computer.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.req = req
	n := max(len(req.Actions), 1)
	return &computer.Result{Results: make([]computer.StepResult, n)}, nil
}

// focusingUI is fakeUI whose OK button is focused once it has been read
// (as after a click).
type focusingUI struct {
	fakeUI
	reads int
}

func (f *focusingUI) UITree(ctx context.Context, domain string, q guest.UIQuery) (*guest.UIResult, error) {
	res, err := f.fakeUI.UITree(ctx, domain, q)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reads++; f.reads > 1 && err == nil {
		res.Nodes[2].States = append(res.Nodes[2].States, "focused")
	}
	return res, err
}

// TestElementActions: a click may name an accessibility node (by id or by
// query) instead of a coordinate; it goes to the middle of the node's
// bounds in the request's display, and the result says what became of
// the node.
func TestElementActions(t *testing.T) {
	comp := &seenComputer{}
	ui := &focusingUI{}
	e := newEnvDeps(t, nil, func(d *Deps) { d.Computer, d.UI = comp, ui })
	_, d := e.do(t, e.alice, "POST", "/api/v1/desktops", `{"name":"clicky"}`)
	id := d["id"].(string)
	e.desktops.desktops[id].State = desktop.StateRunning
	path := "/api/v1/desktops/" + id + "/computer"

	// By id, in a half-size display: OK is at (640,500) 80x30 on a
	// 1280x800 screen, so its middle is (340, 257) in 640x400.
	code, r := e.do(t, e.alice, "POST", path, `{"action":"left_click","element":"ok","display":{"width":640,"height":400}}`)
	if code != 200 {
		t.Fatalf("click by id: %d %v", code, r)
	}
	if got := comp.req.Action.Coordinate; len(got) != 2 || got[0] != 340 || got[1] != 257 || comp.req.Action.Element != nil {
		t.Errorf("click by id went to %v (element %s)", got, comp.req.Action.Element)
	}
	res := r["results"].([]any)[0].(map[string]any)
	el, _ := res["element"].(map[string]any)
	if el["id"] != "ok" || el["role"] != "push button" || el["changed"] != true {
		t.Errorf("the element's result: %v", res)
	}

	// By query, OpenAI's shape, in a list: x/y on the real screen.
	code, r = e.do(t, e.alice, "POST", path, `{"actions":[{"type":"wait"},{"type":"click","element":{"name":"ok"}}]}`)
	if code != 200 || comp.req.Actions[1].X == nil || *comp.req.Actions[1].X != 680 || *comp.req.Actions[1].Y != 515 {
		t.Errorf("click by query: %d %v; went to %+v", code, r, comp.req.Actions[1])
	}

	// Refusals.
	for body, want := range map[string]struct {
		status      int
		code, field string
	}{
		`{"action":"left_click","element":{"name":"nothing like it"}}`:                       {422, "invalid", "element"},
		`{"action":"left_click","element":"gone"}`:                                           {410, "gone", ""},
		`{"action":"left_click","element":"ok","coordinate":[1,1]}`:                          {422, "invalid", "element"},
		`{"action":"key","text":"a","element":"ok"}`:                                         {422, "invalid", "element"},
		`{"action":"left_click","element":{"colour":"red"}}`:                                 {422, "invalid", "element"},
		`{"action":"left_click","element":{}}`:                                               {422, "invalid", "element"},
		`{"actions":[{"action":"wait","duration":0.1},{"action":"left_click","element":7}]}`: {422, "invalid", "actions[1].element"},
		`{"action":"left_click","element":"entry"}`:                                          {422, "invalid", "element"}, // no bounds
	} {
		code, r := e.do(t, e.alice, "POST", path, body)
		if code != want.status || errCode(r) != want.code || want.field != "" && errField(r) != want.field {
			t.Errorf("%s: %d %v, want %d %s %s", body, code, r, want.status, want.code, want.field)
		}
	}
}
