package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the waits for a desktop to be ready (create_desktop and
// wait_ready). The API waits at most 15 minutes a call; each call asks
// for at most readySlice, so no proxy or client timeout on the way cuts
// it (`bureau mcp` gives a call 10 minutes).
const (
	defaultReadyWait = 10 * time.Minute
	maxReadyWait     = 15 * time.Minute
	readySlice       = 5 * time.Minute
)

// readyPace is the least time between two waits: a server that answers
// before its time (one that does not wait) is not asked in a busy loop.
var readyPace = time.Second

// readyOut is what create_desktop (waiting) and wait_ready answer.
type readyOut struct {
	Ready bool `json:"ready"`
	// TookS: how long the tool call took, in seconds.
	TookS      float64         `json:"took_s"`
	WaitingFor string          `json:"waiting_for,omitempty"`
	Note       string          `json:"note,omitempty"`
	Desktop    json.RawMessage `json:"desktop"`
}

// addReadyTool registers wait_ready.
func (t *desktopTools) addReadyTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "wait_ready", Description: "Wait until a desktop is ready: it runs and its desktop session is up, so exec, files, screenshot input " +
		"(click, type), the clipboard and terminals work; before that they fail with not_ready. A desktop asleep is woken, one booting waited for. " +
		"Answers {ready, took_s, waiting_for, note, desktop}: ready false when timeout_s passed first (call it again to wait longer); " +
		"an error when the desktop is stopped or failed (start_desktop first).",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, t.waitReadyTool)
}

type waitReadyIn struct {
	Desktop  string `json:"desktop" jsonschema:"the desktop's id"`
	TimeoutS *int   `json:"timeout_s,omitempty" jsonschema:"how long to wait at most, in seconds: 0 to 900, default 600"`
}

func (t *desktopTools) waitReadyTool(ctx context.Context, req *mcp.CallToolRequest, in waitReadyIn) (*mcp.CallToolResult, Out, error) {
	limit, err := readyLimit(in.TimeoutS)
	if err != nil {
		return nil, nil, err
	}
	out, err := t.waitReady(ctx, req, in.Desktop, limit, time.Now())
	if err != nil {
		return nil, nil, err
	}
	return valueResult(out)
}

// readyLimit is a tool's timeout_s (nil: the default) as a duration.
func readyLimit(s *int) (time.Duration, error) {
	if s == nil {
		return defaultReadyWait, nil
	}
	d := time.Duration(*s) * time.Second
	if *s < 0 || d > maxReadyWait {
		return 0, fmt.Errorf("timeout_s %d: want 0 to %d seconds", *s, int(maxReadyWait.Seconds()))
	}
	return d, nil
}

// waitReady waits up to limit for desktop id to be ready, the API doing
// the waiting (GET …?wait=ready) in calls of at most readySlice; began is
// when the tool call began. A desktop that will not get there by itself
// (stopped, failed) is the API's error.
func (a *api) waitReady(ctx context.Context, req *mcp.CallToolRequest, id string, limit time.Duration, began time.Time) (readyOut, error) {
	deadline := time.Now().Add(limit)
	for {
		n := min(max(time.Until(deadline), 0), readySlice)
		asked := time.Now()
		r, err := a.call(ctx, req, "GET", desktopPath(id, "?wait=ready&timeout_s="+strconv.Itoa(int(n.Round(time.Second).Seconds()))), nil, 0)
		if err != nil {
			return readyOut{}, err
		}
		var d struct {
			Ready      bool   `json:"ready"`
			State      string `json:"state"`
			WaitingFor string `json:"waiting_for"`
		}
		if err := decode(r, &d); err != nil {
			return readyOut{}, err
		}
		out := readyOut{Ready: d.Ready, WaitingFor: d.WaitingFor, Desktop: r.Body,
			TookS: math.Round(time.Since(began).Seconds()*10) / 10}
		if d.Ready {
			return out, nil
		}
		if time.Until(deadline) < time.Second/2 {
			what := d.State
			if d.WaitingFor != "" {
				what = "waiting for " + d.WaitingFor
			}
			out.Note = fmt.Sprintf("desktop %s is not ready after %d s (%s); call wait_ready to wait longer", id, int(limit.Seconds()), what)
			return out, nil
		}
		select {
		case <-ctx.Done():
			return readyOut{}, ctx.Err()
		case <-time.After(min(readyPace-time.Since(asked), time.Until(deadline))):
		}
	}
}
