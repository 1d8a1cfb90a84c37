package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/steps"
)

// stepPrinter prints steps as rows of a table under one header (fixed
// widths, so a row can be printed as soon as its step arrives), or as
// lines of JSON.
type stepPrinter struct {
	w      io.Writer
	json   bool
	headed bool
}

func newStepPrinter(w io.Writer, asJSON bool) *stepPrinter {
	return &stepPrinter{w: w, json: asJSON}
}

const stepRow = "%-6s %-19s %-11s %-22s %-6s %s\n"

func (p *stepPrinter) print(st *steps.Step) error {
	if p.json {
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	}
	if !p.headed {
		p.headed = true
		if _, err := fmt.Fprintf(p.w, stepRow, "SEQ", "TIME", "KIND", "ACTOR", "STATUS", "INPUT"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(p.w, stepRow, strconv.FormatInt(st.Seq, 10), st.At.Local().Format(time.DateTime), st.Kind,
		st.Actor, strconv.Itoa(st.Status), stepSummary(st))
	return err
}

// stepAction is a computer-use action as a step records it, in either
// shape (Anthropic's "action", OpenAI's "type").
type stepAction = computer.Action

// stepSummary is a step's input on one line: the actions of a computer
// step (`left_click (640,400); type "hello"`), the command of an exec,
// the path of a file change, the size of a clipboard text; and the error
// when it failed.
func stepSummary(st *steps.Step) string {
	var s string
	switch st.Kind {
	case steps.KindComputer:
		var in struct{ Actions []stepAction }
		json.Unmarshal(st.Input, &in)
		var parts []string
		for _, a := range in.Actions {
			parts = append(parts, actionSummary(a))
		}
		s = strings.Join(parts, "; ")
	case steps.KindExec:
		var in struct {
			Cmd        string
			Argv       []string
			Background bool
		}
		json.Unmarshal(st.Input, &in)
		s = in.Cmd
		if s == "" {
			s = argvLine(in.Argv)
		}
		if in.Background {
			s += " (background)"
		}
	case steps.KindFileWrite, steps.KindFileDelete:
		var in struct{ Path string }
		json.Unmarshal(st.Input, &in)
		s = in.Path
	case steps.KindClipboard:
		var in struct{ Chars int }
		json.Unmarshal(st.Input, &in)
		s = fmt.Sprintf("%d chars", in.Chars)
	default:
		s = string(st.Input)
	}
	s = shorten(oneLine(s), 100)
	if st.Error != "" {
		e := "error: " + shorten(oneLine(st.Error), 120)
		if s == "" {
			return e
		}
		return s + " — " + e
	}
	return s
}

// actionSummary reads e.g. `left_click (640,400)`, `type "hello"`,
// `key ctrl+s`, `scroll down 3 (500,400)`, `click right (5,5)`.
func actionSummary(a stepAction) string {
	parts := []string{a.Action}
	if a.Action == "" {
		parts[0] = a.Type
	}
	if a.Button != "" && a.Button != "left" {
		parts = append(parts, a.Button)
	}
	if a.ScrollDirection != "" {
		parts = append(parts, a.ScrollDirection)
		if a.ScrollAmount != nil {
			parts = append(parts, strconv.Itoa(*a.ScrollAmount))
		}
	}
	switch {
	case len(a.StartCoordinate) == 2 && len(a.Coordinate) == 2:
		parts = append(parts, point(a.StartCoordinate[0], a.StartCoordinate[1])+"→"+point(a.Coordinate[0], a.Coordinate[1]))
	case len(a.Coordinate) == 2:
		parts = append(parts, point(a.Coordinate[0], a.Coordinate[1]))
	case a.X != nil && a.Y != nil:
		parts = append(parts, point(*a.X, *a.Y))
	}
	if len(a.Path) > 0 {
		var path []string
		for _, p := range a.Path {
			path = append(path, point(p.X, p.Y))
		}
		parts = append(parts, strings.Join(path, "→"))
	}
	if a.ScrollX != 0 || a.ScrollY != 0 {
		parts = append(parts, fmt.Sprintf("by %d,%d", a.ScrollX, a.ScrollY))
	}
	if len(a.Keys) > 0 {
		parts = append(parts, strings.Join(a.Keys, "+"))
	}
	if a.Text != "" {
		if a.Action == "type" || a.Type == "type" {
			parts = append(parts, strconv.Quote(shorten(a.Text, 40)))
		} else {
			parts = append(parts, a.Text) // key names
		}
	}
	if len(a.Region) == 4 {
		parts = append(parts, fmt.Sprintf("[%d,%d,%d,%d]", a.Region[0], a.Region[1], a.Region[2], a.Region[3]))
	}
	return strings.Join(parts, " ")
}

func point(x, y int) string { return fmt.Sprintf("(%d,%d)", x, y) }

// argvLine shows an argv as a shell would read it (words with spaces or
// quotes quoted).
func argvLine(argv []string) string {
	var out []string
	for _, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`") {
			a = strconv.Quote(a)
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

// oneLine folds runs of white space (newlines too) into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// shorten clips s to n characters, marking the cut with "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
