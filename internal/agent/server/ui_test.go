package server_test

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/agent/agenttest"
	"github.com/bureau/bureau/internal/agent/atspi"
	"github.com/bureau/bureau/internal/agent/atspi/atspitest"
	"github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/bureau/bureau/internal/desktop"
)

// TestUIHelperProcess is not a test: it is the helper the tests below
// run, this test binary standing in for bureau-agent ui-helper.
func TestUIHelperProcess(t *testing.T) {
	if !slices.Contains(os.Args, atspi.HelperArg) {
		t.Skip("the ui tests' helper process")
	}
	os.Exit(atspi.HelperMain())
}

// helperArgv runs this test binary as the helper.
func helperArgv() []string {
	return []string{os.Args[0], "-test.run=^TestUIHelperProcess$", "--", atspi.HelperArg}
}

func me(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

func uiClient(t *testing.T, h server.UIHelper) *client.Client {
	t.Helper()
	srv := &server.Server{Info: wire.Info{SHA256: "x", Version: "test"}, StateDir: t.TempDir(), RunDir: t.TempDir(), UI: h}
	if err := srv.Init(); err != nil {
		t.Fatal(err)
	}
	return agenttest.ClientOf(t, agenttest.Dialer{Server: srv})
}

// script is a helper that answers what a shell script prints.
func script(t *testing.T, body string) []string {
	p := filepath.Join(t.TempDir(), "helper")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat >/dev/null\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// TestUIOverTheAgent drives the real accessibility stack through the
// agent: the op, the helper run as the session's user (this one: no
// switch), its answer in data frames, and the client's errors.
func TestUIOverTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Xvfb, D-Bus and a GTK window")
	}
	s := atspitest.Start(t)
	c := uiClient(t, server.UIHelper{Argv: helperArgv(), SessionBus: s.Bus})
	ctx := context.Background()
	name := me(t)
	res, err := c.UIFind(ctx, "d", client.UIQuery{User: name, Role: "push button", Name: "press me"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 1 || res.Screen.Width != atspitest.ScreenWidth {
		t.Fatalf("find: %+v", res)
	}
	button := res.Nodes[0]
	if _, err := c.UIAct(ctx, "d", client.UIAction{User: name, Node: button.ID, Action: "click"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitLine("clicked", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	tree, err := c.UITree(ctx, "d", client.UIQuery{User: name, Window: atspitest.WindowTitle})
	if err != nil || len(tree.Nodes) < 6 {
		t.Fatalf("tree: %+v %v", tree, err)
	}
	_, err = c.UIAct(ctx, "d", client.UIAction{User: name, Node: button.ID, Action: "expand"})
	if ve := (*desktop.ValidationError)(nil); !errors.As(err, &ve) || ve.Field != "action" || !strings.Contains(ve.Message, "its actions: click") {
		t.Errorf("an action the button lacks: %v", err)
	}
	s.StopApp()
	if _, err := c.UIAct(ctx, "d", client.UIAction{User: name, Node: button.ID, Action: "click"}); !errors.Is(err, desktop.ErrGone) {
		t.Errorf("the app ended: %v", err)
	}
}

func TestUIRefusals(t *testing.T) {
	ctx := context.Background()
	c := uiClient(t, server.UIHelper{Argv: script(t, `echo '{"code":"gone","error":"node x is gone"}'`), SessionBus: "unix:path=/nonexistent"})
	name := me(t)
	_, err := c.UIAct(ctx, "d", client.UIAction{User: name, Node: "OjEuMnwveA", Action: "click"})
	if !errors.Is(err, desktop.ErrGone) || !strings.Contains(err.Error(), "node x is gone") {
		t.Errorf("gone: %v", err)
	}
	// Checked by the agent before any helper runs.
	for _, q := range []client.UIQuery{{User: name, Depth: 99}, {User: "no-such-user"}, {}} {
		var ve *desktop.ValidationError
		if _, err := c.UITree(ctx, "d", q); !errors.As(err, &ve) {
			t.Errorf("%+v: %v", q, err)
		}
	}
	if _, err := c.UIAct(ctx, "d", client.UIAction{User: name, Node: "not an id", Action: "click"}); !errors.Is(err, desktop.ErrNotFound) {
		t.Errorf("a malformed id: %v", err)
	}
	// A user with no session.
	if _, err := user.Lookup("nobody"); err == nil {
		c := uiClient(t, server.UIHelper{Argv: script(t, "exit 1")})
		if _, err := c.UITree(ctx, "d", client.UIQuery{User: "nobody"}); !errors.Is(err, desktop.ErrUnavailable) {
			t.Errorf("no session: %v", err)
		}
	}
	c = uiClient(t, server.UIHelper{Argv: script(t, "echo oops >&2; exit 3"), SessionBus: "unix:path=/nonexistent"})
	if _, err := c.UITree(ctx, "d", client.UIQuery{User: name}); err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("a helper that fails: %v", err)
	}
	c = uiClient(t, server.UIHelper{Argv: script(t, `echo '{"ui":{"nodes":[{"id":"a","role":"frame","name":"big","states":[],"actions":[],"children":[],"child_count":0,"app":"x","depth":1}],"screen":{"width":10,"height":10}}}'`),
		SessionBus: "unix:path=/nonexistent"})
	if res, err := c.UITree(ctx, "d", client.UIQuery{User: name}); err != nil || len(res.Nodes) != 1 || res.Nodes[0].Name != "big" {
		t.Errorf("an answer: %+v %v", res, err)
	}
}

func TestUIHelperThatHangsIsStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a timeout")
	}
	c := uiClient(t, server.UIHelper{Argv: script(t, "sleep 60"), SessionBus: "unix:path=/nonexistent"})
	begun := time.Now()
	_, err := c.UITree(context.Background(), "d", client.UIQuery{User: me(t), TimeoutMS: 1})
	if err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("%v", err)
	}
	if took := time.Since(begun); took > 15*time.Second {
		t.Errorf("took %s", took)
	}
}
