package desktop

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestStateDocMatchesTable checks that the table of operations in
// docs/state.md is the code's: every operation, the states it begins
// from, the one it passes through, where it ends on success and on
// failure.
func TestStateDocMatchesTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/state.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := docTable(t, string(b))
	var want []string
	for op, tr := range transitions {
		row := []string{fromString(tr.From), string(tr.Through), tr.Success.String(), tr.Failure.String()}
		want = append(want, "| "+string(op)+" | "+strings.Join(row, " | ")+" |")
		got, ok := doc[op]
		switch {
		case !ok:
			t.Errorf("docs/state.md has no row for %s", op)
		case !slices.Equal(got, row):
			t.Errorf("docs/state.md says %s is\n\t%q\nthe code's table says\n\t%q", op, got, row)
		}
	}
	for op := range doc {
		if _, ok := transitions[op]; !ok {
			t.Errorf("docs/state.md has a row for %s, which the code's table does not have", op)
		}
	}
	if t.Failed() {
		slices.Sort(want)
		t.Logf("the code's table, as rows (notes left out):\n%s", strings.Join(want, "\n"))
	}
}

// docTable reads the table under "## Operations": its operation, from,
// through, success and failure columns, by operation.
func docTable(t *testing.T, doc string) map[Op][]string {
	_, section, ok := strings.Cut(doc, "\n## Operations\n")
	if !ok {
		t.Fatal(`docs/state.md has no "## Operations" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	cols := []string{"operation", "from", "through", "success", "failure"}
	rows := map[Op][]string{}
	header := true
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break // the table ended
			}
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if header {
			if len(cells) < len(cols) || !slices.Equal(cells[:len(cols)], cols) {
				t.Fatalf("the table's columns are %q, want %q first", cells, cols)
			}
			header = false
			continue
		}
		if strings.Trim(cells[0], "-: ") == "" {
			continue // the line under the header
		}
		if len(cells) < len(cols) {
			t.Fatalf("row %q has %d columns, want at least %d", line, len(cells), len(cols))
		}
		op := Op(strings.Trim(cells[0], "`"))
		if _, dup := rows[op]; dup {
			t.Errorf("docs/state.md has two rows for %s", op)
		}
		rows[op] = cells[1:len(cols)]
	}
	if len(rows) == 0 {
		t.Fatal("docs/state.md's table of operations has no rows")
	}
	return rows
}

func TestEnd(t *testing.T) {
	for _, c := range []struct {
		name          string
		op            Op
		ok            bool
		began, vm     State
		state, desire State
		err           bool
	}{
		{"a start", OpStart, true, StateStopped, "", StateRunning, StateRunning, false},
		{"a failed start keeps the desired state", OpStart, false, StateStopped, "", StateError, "", false},
		{"a pause whose pause failed", OpPause, false, StateRunning, StateRunning, StateRunning, StateRunning, false},
		{"a pause cut short whose VM is not known", OpPause, false, "", "", StateError, "", false},
		{"a sleep that could not push memory out naps", OpSleep, false, StateRunning, StatePaused, StateNapping, StateNapping, false},
		{"a napping desktop that could not sleep naps on", OpSleep, false, StateNapping, StatePaused, StateNapping, StateNapping, false},
		{"a nap cut short, its VM running", OpNap, false, "", StateRunning, StateRunning, StateRunning, false},
		{"a failed resume of a sleeping desktop", OpResume, false, StateSleeping, StatePaused, StateSleeping, StateSleeping, false},
		{"a failed resume, its VM not known", OpResume, false, StateHibernated, "", StateError, "", false},
		{"a failed hibernate of a napping desktop", OpHibernate, false, StateNapping, StatePaused, StateNapping, StateNapping, false},
		{"a failed hibernate of a running desktop left paused", OpHibernate, false, StateRunning, StatePaused, StatePaused, StatePaused, false},
		{"a failed hibernate whose VM is off", OpHibernate, false, StateRunning, StateStopped, StateError, "", false},
		{"a failed prewake, its RAM still saved", OpPrewake, false, StateHibernated, StateHibernated, StateHibernated, StateHibernated, false},
		{"a revert to a disk snapshot of a stopped desktop", OpRevert, true, StateStopped, StateStopped, StateStopped, StateStopped, false},
		{"a revert cut short, its VM crashed", OpRevert, false, "", StateCrashed, StateError, "", false},
		{"a reimage cut short, its VM stopped", OpReimage, false, "", StateStopped, StateStopped, "", false},
		{"a cold move that ends hibernated", OpMigrate, true, StateSleeping, StateHibernated, StateHibernated, "", false},
		{"a failed move, its VM crashed", OpMigrate, false, "", StateCrashed, StateCrashed, "", false},
		{"a delete", OpDelete, true, StateError, "", StateDeleted, StateDeleted, false},
		{"a create", OpCreate, true, StateNone, "", StateRunning, StateRunning, false},
		{"a success its VM does not fit", OpRevert, true, StateRunning, StatePaused, StateError, "", true},
		{"an operation not in the table", Op("resize"), true, StateRunning, StateRunning, StateError, "", true},
	} {
		st, desired, err := End(c.op, c.ok, c.began, c.vm)
		if st != c.state || desired != c.desire || (err != nil) != c.err {
			t.Errorf("%s: End(%s, %v, %q, %q) = %q, desired %q, %v; want %q, desired %q, error %v",
				c.name, c.op, c.ok, c.began, c.vm, st, desired, err, c.state, c.desire, c.err)
		}
	}
}

// TestBeginEveryOp checks that every operation in the table can begin
// from each state it lists, into its transient state, and from no other.
func TestBeginEveryOp(t *testing.T) {
	for op, tr := range transitions {
		for _, s := range append([]State{StateNone}, allStates...) {
			through, err := Begin(op, s)
			if slices.Contains(tr.From, s) != (err == nil) || err == nil && through != tr.Through {
				t.Errorf("Begin(%s, %q) = %q, %v", op, s, through, err)
			}
		}
	}
}
