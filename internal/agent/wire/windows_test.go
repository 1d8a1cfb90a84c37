package wire

import "testing"

func TestWindowIDs(t *testing.T) {
	for in, want := range map[string]uint32{"0x1e00004": 0x1e00004, "0X1E00004": 0x1e00004, "31457284": 0x1e00004, "0xffffffff": 0xffffffff} {
		if got, ok := ParseWindowID(in); !ok || got != want {
			t.Errorf("%q: %x %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "0x", "0", "0x0", "-5", "+5", "0x-1", "1e00004", "0x100000000", "4294967296", "0x1_0"} {
		if got, ok := ParseWindowID(in); ok {
			t.Errorf("%q passed as %x", in, got)
		}
	}
	if FormatWindowID(0x1e00004) != "0x1e00004" {
		t.Error(FormatWindowID(0x1e00004))
	}
}

func TestWindowActProblems(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, c := range []struct {
		act   WindowAct
		field string
	}{
		{WindowAct{Action: "focus"}, ""},
		{WindowAct{Action: "close"}, ""},
		{WindowAct{Action: "move", X: n(-10), Y: n(0)}, ""},
		{WindowAct{Action: "move", X: n(1), Y: n(2), Width: 3, Height: 4}, ""},
		{WindowAct{Action: "resize", Width: 3, Height: 4}, ""},
		{WindowAct{Action: "resize", X: n(1), Y: n(2), Width: 3, Height: 4}, ""},
		{WindowAct{Action: ""}, "action"},
		{WindowAct{Action: "maximize", Width: 3, Height: 4}, "action"},
		{WindowAct{Action: "move", X: n(1)}, "x"},
		{WindowAct{Action: "move", X: n(1), Y: n(40000)}, "x"},
		{WindowAct{Action: "resize", Width: 3}, "width"},
		{WindowAct{Action: "resize", X: n(1), Width: 3, Height: 4}, "x"},
		{WindowAct{Action: "move", X: n(1), Y: n(2), Width: 3}, "width"},
		{WindowAct{Action: "resize", Width: 32768, Height: 4}, "width"},
	} {
		if field, _ := c.act.Problem(); field != c.field {
			t.Errorf("%+v: %q, want %q", c.act, field, c.field)
		}
	}
}
