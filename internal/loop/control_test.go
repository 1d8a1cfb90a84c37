package loop

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTakeReleaseAndInput(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	if c := w.Control("d1"); c.Holder != HolderAgent || c.Until != nil {
		t.Fatalf("by default: %+v", c)
	}
	if err := w.AgentInput("d1", agent); err != nil {
		t.Fatalf("agent holds it: %v", err)
	}
	if !w.ConsoleInput("d1", dana, InputEvent{Key: true, KeyDown: true}) {
		t.Fatal("a console's input while the agent holds control goes through")
	}

	c := w.Take(ctx, "d1", dana, 0)
	if c.Holder != HolderPerson || c.Person != "Dana" || c.By != "console/ct_dana" || c.IdleTimeoutS != 600 ||
		c.Until == nil || c.Until.Sub(c.Since) != DefaultIdle {
		t.Fatalf("taken: %+v", c)
	}
	if st := w.Status("d1"); st.Control.Holder != HolderPerson {
		t.Fatalf("status: %+v", st)
	}
	var ic *InControlError
	if err := w.AgentInput("d1", agent); !errors.As(err, &ic) || ic.Control.Person != "Dana" {
		t.Fatalf("agent's input while Dana holds it: %v", err)
	}
	if w.ConsoleInput("d1", Person{Name: "Eve", Actor: "alice/tok_eve", Console: "ct_eve"}, InputEvent{Pointer: true}) {
		t.Fatal("another console's input went through")
	}
	if !w.ConsoleInput("d1", dana, InputEvent{Pointer: true}) {
		t.Fatal("the holder's console input was dropped")
	}
	if w.AgentInput("d2", agent) != nil {
		t.Fatal("another desktop is held")
	}

	// Sam takes over through the API: his calls, and console links his
	// token made, are his.
	w.Take(ctx, "d1", sam, time.Hour)
	if e := w.eventsOf("control_taken"); len(e) != 2 || !contains(e[1].msg, "Sam took control from Dana") || e[1].actor != "alice/tok_sam" {
		t.Fatalf("taken from Dana: %+v", e)
	}
	if err := w.AgentInput("d1", "alice/tok_sam"); err != nil {
		t.Fatalf("the token that took over: %v", err)
	}
	if w.ConsoleInput("d1", dana, InputEvent{Key: true}) {
		t.Fatal("Dana's console after Sam took over")
	}
	if !w.ConsoleInput("d1", Person{Name: "Sam", Actor: "alice/tok_sam", Console: "ct_sams"}, InputEvent{Key: true}) {
		t.Fatal("a console link Sam's token made")
	}

	if c := w.Release(ctx, "d1", dana); c.Holder != HolderAgent {
		t.Fatalf("released: %+v", c)
	}
	e := w.eventsOf("control_returned")
	if len(e) != 1 || e[0].actor != "console/ct_dana" || !contains(e[0].msg, "Dana handed control back") {
		t.Fatalf("returned: %+v", e)
	}
	w.Release(ctx, "d1", dana)
	if len(w.eventsOf("control_returned")) != 1 {
		t.Fatal("releasing what the agent holds is told")
	}
	if w.changed["d1"] != 3 {
		t.Fatalf("changed %d times, want 3", w.changed["d1"])
	}
}

func TestControlReturnsWhenIdle(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	idle := 80 * time.Millisecond
	c := w.Take(ctx, "d1", dana, idle)
	// Input half-way keeps it past the first deadline.
	time.Sleep(idle / 2)
	w.ConsoleInput("d1", dana, InputEvent{Pointer: true})
	if u := w.Control("d1").Until; !u.After(*c.Until) {
		t.Fatalf("until not moved by input: %v, was %v", u, c.Until)
	}
	time.Sleep(idle*3/4 + 5*time.Millisecond) // past the first deadline
	if w.Control("d1").Holder != HolderPerson {
		t.Fatal("control went back although Dana was typing")
	}
	eventually(t, "control back to the agent", func() bool {
		return w.Control("d1").Holder == HolderAgent && len(w.eventsOf("control_returned")) > 0
	})
	e := w.eventsOf("control_returned")
	if len(e) != 1 || e[0].actor != "bureau" || !contains(e[0].msg, "after 80ms without input from Dana") {
		t.Fatalf("returned: %+v", e)
	}
	if w.AgentInput("d1", agent) != nil {
		t.Fatal("agent's input after control came back")
	}
}

// A person whose console closes while they hold the input has LeftGrace
// to come back; input from them cancels it. Leaving a console that does
// not hold control changes nothing.
func TestHolderLeavingTheConsole(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	w.Take(ctx, "d1", dana, time.Hour)
	w.Left("d1", Person{Name: "Eve", Console: "ct_eve"})
	if u := w.Control("d1").Until; u == nil || time.Until(*u) < 59*time.Minute {
		t.Fatalf("someone else leaving moved the hand-back to %v", u)
	}
	w.Left("d1", dana)
	if u := w.Control("d1").Until; u == nil || time.Until(*u) > LeftGrace || time.Until(*u) < LeftGrace-5*time.Second {
		t.Fatalf("after Dana left, control goes back at %v", u)
	}
	w.ConsoleInput("d1", dana, InputEvent{Key: true, KeyDown: true})
	if u := w.Control("d1").Until; u == nil || time.Until(*u) < 59*time.Minute {
		t.Fatalf("Dana came back and typed, yet control goes back at %v", u)
	}
}
