package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

func (m *memStore) CheckpointPolicy(_ context.Context, id string) (CheckpointPolicy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.policies[id]; ok {
		return p, nil
	}
	return DefaultCheckpointPolicy(), nil
}

func (m *memStore) SetCheckpointPolicy(_ context.Context, id string, p CheckpointPolicy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.policies == nil {
		m.policies = map[string]CheckpointPolicy{}
	}
	m.policies[id] = p
	return nil
}

func (m *memStore) DeleteCheckpointPolicy(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.policies, id)
	return nil
}

// due runs a desktop's steps of the given kinds ("asked" marks a call that
// asked for its own checkpoint, "!" a due checkpoint that failed) through
// a cadence and says which were due one ("x") or not (".").
func due(c *Cadence, p CheckpointPolicy, kinds ...string) string {
	var b strings.Builder
	for _, k := range kinds {
		asked := strings.HasSuffix(k, "+asked")
		failed := strings.HasSuffix(k, "!")
		k = strings.TrimSuffix(strings.TrimSuffix(k, "+asked"), "!")
		if c.Due("d1", k, p, asked) {
			b.WriteString("x")
			if failed {
				c.Missed("d1")
			}
		} else {
			b.WriteString(".")
		}
	}
	return b.String()
}

func TestCadence(t *testing.T) {
	every := func(n int, before ...string) CheckpointPolicy {
		return CheckpointPolicy{EverySteps: n, Before: before, Keep: 5}
	}
	for _, c := range []struct {
		name  string
		p     CheckpointPolicy
		kinds []string
		want  string
	}{
		{"off", DefaultCheckpointPolicy(), []string{"exec", "exec", "file_delete"}, "..."},
		{"every step", every(1), []string{"exec", "computer", "exec"}, "xxx"},
		{"every 2nd: the first, then every 2nd after the last", every(2), []string{"exec", "exec", "exec", "exec", "exec"}, "x.x.x"},
		{"every 3rd", every(3), []string{"computer", "computer", "computer", "computer", "computer", "computer", "computer"}, "x..x..x"},
		{"before kinds only", every(0, KindExec, KindFileDelete),
			[]string{"computer", "exec", "computer", "file_write", "file_delete", "exec"}, ".x..xx"},
		{"before kinds restart the count", every(3, KindFileDelete),
			[]string{"exec", "exec", "file_delete", "exec", "exec", "exec"}, "x.x..x"},
		{"a call's own checkpoint is not doubled and restarts the count", every(2, KindExec),
			[]string{"computer", "exec+asked", "computer", "computer", "exec+asked", "computer"}, "x..x.."},
		{"a failed checkpoint leaves the next step due", every(3), []string{"exec!", "exec", "exec", "exec"}, "xx.."},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := due(&Cadence{}, c.p, c.kinds...); got != c.want {
				t.Errorf("%v under %+v: %s, want %s", c.kinds, c.p, got, c.want)
			}
		})
	}
	// Desktops are counted apart.
	var cd Cadence
	p := every(2)
	if !cd.Due("a", KindExec, p, false) || !cd.Due("b", KindExec, p, false) || cd.Due("a", KindExec, p, false) {
		t.Error("desktops share a count")
	}
}

func TestCheckpointPolicyValidate(t *testing.T) {
	for _, c := range []struct {
		p     CheckpointPolicy
		field string
	}{
		{CheckpointPolicy{EverySteps: -1}, "every_steps"},
		{CheckpointPolicy{EverySteps: MaxEverySteps + 1}, "every_steps"},
		{CheckpointPolicy{Keep: 51}, "keep"},
		{CheckpointPolicy{Keep: -1}, "keep"},
		{CheckpointPolicy{Before: []string{"exec", "rm"}}, "before"},
		{CheckpointPolicy{EverySteps: 10, Before: []string{"file_delete"}, Keep: 50}, ""},
	} {
		c.p.Normalize()
		err := c.p.Validate()
		var ve *desktop.ValidationError
		if c.field == "" && err != nil || c.field != "" && (!errors.As(err, &ve) || ve.Field != c.field) {
			t.Errorf("%+v: %v, want a problem with %q", c.p, err, c.field)
		}
	}
	p := CheckpointPolicy{Before: []string{"file_delete", "exec", "exec"}}
	p.Normalize()
	if p.Keep != DefaultKeep || strings.Join(p.Before, ",") != "exec,file_delete" || p.On() != true {
		t.Errorf("normalized %+v", p)
	}
	err := CheckpointPolicy{Before: []string{"rm"}, Keep: 1}.Validate()
	if err == nil || !strings.Contains(err.Error(), `"rm"`) || !strings.Contains(err.Error(), "file_delete") {
		t.Errorf("an unknown kind's message names it and the kinds there are: %v", err)
	}
	if DefaultCheckpointPolicy().On() {
		t.Error("the default policy is on")
	}
}

// Pruning keeps the newest Keep automatic checkpoints and never touches
// the caller's snapshots, nor checkpoints a call asked for.
func TestSurplusIsOnlyAutomatic(t *testing.T) {
	t0 := time.Now()
	var snaps []*desktop.Snapshot
	add := func(name, desc string) {
		snaps = append(snaps, &desktop.Snapshot{Name: name, Description: desc, CreatedAt: t0.Add(time.Duration(len(snaps)) * time.Second)})
	}
	for i := 0; i < 4; i++ {
		name, desc := AutoCheckpoint(t0.Add(time.Duration(i)*time.Second), KindExec, "alice/tok_1")
		add(name, desc)
		add(fmt.Sprintf("checkpoint-%d", i), "before a exec step by alice/tok_1")
		add(fmt.Sprintf("mine-%d", i), "")
	}
	add("auto-1", "my own, named like one")  // not described as automatic
	add("auto-x", autoDescription+" forged") // not named like one
	got := CheckpointPolicy{Keep: 2}.Surplus(snaps)
	var names []string
	for _, sn := range got {
		names = append(names, sn.Name)
	}
	want := []string{snaps[0].Name, snaps[3].Name}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("surplus %v, want the 2 oldest automatic ones %v", names, want)
	}
	if s := (CheckpointPolicy{Keep: 4}).Surplus(snaps); len(s) != 0 {
		t.Errorf("keep 4 of 4: surplus %v", s)
	}
}

// The log keeps each desktop's policy and counts its steps afresh when
// it changes.
func TestLogCheckpointPolicy(t *testing.T) {
	store := newMem()
	l := New(store, t.TempDir(), 0, slog.Default())
	ctx := context.Background()
	if p, err := l.CheckpointPolicy(ctx, "d1"); err != nil || p.On() || p.Keep != DefaultKeep {
		t.Fatalf("no policy set: %+v %v", p, err)
	}
	if _, err := l.SetCheckpointPolicy(ctx, "d1", CheckpointPolicy{EverySteps: 2, Before: []string{"nope"}}); err == nil {
		t.Error("an unknown kind was kept")
	}
	p, err := l.SetCheckpointPolicy(ctx, "d1", CheckpointPolicy{EverySteps: 2})
	if err != nil || p.Keep != DefaultKeep {
		t.Fatalf("set: %+v %v", p, err)
	}
	if got := due(&l.cadence, p, "exec", "exec", "exec"); got != "x.x" {
		t.Errorf("steps %s", got)
	}
	l.SetCheckpointPolicy(ctx, "d1", p)
	if !l.CheckpointDue("d1", KindExec, p, false) {
		t.Error("the first step after the policy was set again is not due")
	}
	if err := l.Forget(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if p, _ := l.CheckpointPolicy(ctx, "d1"); p.On() {
		t.Errorf("a deleted desktop's policy stays: %+v", p)
	}
}
