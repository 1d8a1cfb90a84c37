package loop

import (
	"context"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

func TestHumanSteps(t *testing.T) {
	w := newWorld(t, nil)
	w.quiet, w.longest = 30*time.Millisecond, time.Minute
	w.mu.Lock()
	w.recording = time.Now().Add(-1500 * time.Millisecond)
	w.mu.Unlock()

	for _, ev := range []InputEvent{
		{Key: true, KeyDown: true}, {Key: true}, // one key press
		{Pointer: true},             // a move
		{Pointer: true, Buttons: 1}, // a click
		{Pointer: true, Buttons: 1}, // a drag
		{Pointer: true},             // the release
		{Pointer: true, Buttons: 1}, // another click
		{Clipboard: true},
	} {
		if !w.ConsoleInput("d1", dana, ev) {
			t.Fatal("dropped")
		}
	}
	// Another session's input is another step; input that is dropped is
	// none.
	w.ConsoleInput("d1", Person{Name: "Eve", Console: "ct_eve"}, InputEvent{Key: true, KeyDown: true})
	eventually(t, "two human steps", func() bool { return len(w.stepsOf(steps.KindHuman)) == 2 })
	var st *steps.Step
	for _, s := range w.stepsOf(steps.KindHuman) {
		if s.Actor == "console/ct_dana" {
			st = s
		}
	}
	if st == nil || st.DesktopID != "d1" || st.Status != 200 || st.DurationMS < 0 {
		t.Fatalf("Dana's step: %+v", st)
	}
	in := fields(t, st.Input)
	if in["person"] != "Dana" || in["session"] != "ct_dana" || in["keys"] != 1.0 || in["clicks"] != 2.0 ||
		in["pointer_moves"] != 3.0 || in["clipboard"] != 1.0 {
		t.Fatalf("input: %s", st.Input)
	}
	rec := fields(t, st.Result)["recording"].(map[string]any)
	if off := rec["offset_ms"].(float64); rec["id"] != "rec_1" || off < 1500 || off > 2500 {
		t.Fatalf("result: %s", st.Result)
	}

	// Nothing recorded: no recording in the result. A person holding
	// control drops others' input, which makes no step.
	w.mu.Lock()
	w.recording = time.Time{}
	w.mu.Unlock()
	w.Take(context.Background(), "d1", dana, time.Minute)
	w.ConsoleInput("d1", Person{Name: "Eve", Console: "ct_eve"}, InputEvent{Key: true, KeyDown: true})
	w.ConsoleInput("d1", dana, InputEvent{Key: true, KeyDown: true})
	eventually(t, "a third step", func() bool { return len(w.stepsOf(steps.KindHuman)) == 3 })
	time.Sleep(2 * w.quiet)
	list := w.stepsOf(steps.KindHuman)
	if len(list) != 3 || list[2].Actor != "console/ct_dana" || string(list[2].Result) != "{}" {
		t.Fatalf("steps: %d, last %+v", len(list), list[len(list)-1])
	}
}

func TestLongInputIsCut(t *testing.T) {
	w := newWorld(t, nil)
	w.quiet, w.longest = 40*time.Millisecond, 50*time.Millisecond
	for range 12 {
		w.ConsoleInput("d1", dana, InputEvent{Key: true, KeyDown: true})
		time.Sleep(10 * time.Millisecond)
	}
	eventually(t, "all input recorded", func() bool {
		n := 0
		for _, s := range w.stepsOf(steps.KindHuman) {
			n += int(fields(t, s.Input)["keys"].(float64))
		}
		return n == 12
	})
	list := w.stepsOf(steps.KindHuman)
	if len(list) < 2 {
		t.Fatalf("%d steps for 120ms of typing cut at 50ms", len(list))
	}
	for _, s := range list {
		if s.DurationMS > 60 {
			t.Errorf("a step of %d ms", s.DurationMS)
		}
	}
}

// A pointer passing over the screen and the clipboard noVNC hands over on
// its own are no step: the person pressed nothing.
func TestHoveringIsNoStep(t *testing.T) {
	w := newWorld(t, nil)
	w.quiet, w.longest = 20*time.Millisecond, time.Minute
	for _, ev := range []InputEvent{{Pointer: true}, {Clipboard: true}, {Pointer: true}, {Key: true}} {
		w.ConsoleInput("d1", dana, ev)
	}
	time.Sleep(10 * w.quiet)
	if list := w.stepsOf(steps.KindHuman); len(list) != 0 {
		t.Fatalf("hovering made steps: %+v", list[0])
	}
}
