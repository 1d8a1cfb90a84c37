package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

// stepsRetryEvery is how long a follow waits before it reconnects to a
// stream that broke off.
var stepsRetryEvery = 2 * time.Second

// streamRefusal is a stream's last word: an unauthorized or error event.
type streamRefusal struct{ event, message string }

func (e *streamRefusal) Error() string {
	if e.event == "unauthorized" {
		return "the step stream ended: the token is no longer valid: " + e.message
	}
	return "the step stream ended with an error: " + e.message
}

// streamBroken is a stream that broke off (bureau restarted, the network
// dropped): the follow reconnects.
type streamBroken struct{ err error }

func (e *streamBroken) Error() string {
	if e.err == nil {
		return "the server closed it"
	}
	return e.err.Error()
}

// followSteps prints the steps numbered above after, then each new one,
// until interrupted or the server refuses; a stream that breaks off is
// reopened after the last step printed.
func followSteps(ctx context.Context, c *client, base string, after int64, p *stepPrinter, errw io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for first := true; ; first = false {
		opened, err := streamSteps(ctx, c, base, &after, p)
		if ctx.Err() != nil {
			return nil // interrupted
		}
		var broken *streamBroken
		switch {
		case opened && errors.As(err, &broken):
			fmt.Fprintf(errw, "bureau: the step stream broke off (%v); reconnecting…\n", err)
		case !opened && !first && !refused(err):
			// bureau is still out of reach (or restarting): try again
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(stepsRetryEvery):
		}
	}
}

// refused says the server turned the request down (a 4xx: the desktop
// is gone, the token no longer valid), which trying again cannot mend.
func refused(err error) bool {
	var api *apiError
	return errors.As(err, &api) && api.Status < 500
}

// streamSteps prints the steps of one connection to the stream, moving
// after along; opened says the stream was opened.
func streamSteps(ctx context.Context, c *client, base string, after *int64, p *stepPrinter) (opened bool, err error) {
	body, err := c.stream(ctx, "GET", base+"?follow=true&after="+strconv.FormatInt(*after, 10))
	if err != nil {
		return false, err
	}
	defer body.Close()
	err = readSSE(body, func(event string, data []byte) error {
		switch event {
		case "step":
			var st steps.Step
			if err := json.Unmarshal(data, &st); err != nil {
				return fmt.Errorf("a step the server sent: %w", err)
			}
			if st.Seq <= *after {
				return nil // shown before a reconnect
			}
			*after = st.Seq
			return p.print(&st)
		case "unauthorized", "error":
			var m struct{ Message string }
			if json.Unmarshal(data, &m) != nil || m.Message == "" {
				m.Message = string(data)
			}
			return &streamRefusal{event, m.Message}
		}
		return nil
	})
	if err == nil || errors.As(err, new(*readError)) {
		return true, &streamBroken{err}
	}
	return true, err
}

// readError is a failure to read a stream (not a refusal in it).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// readSSE calls on for each server-sent event of r (its name, "message"
// when it has none, and its data) until r ends or on fails; comments
// (keepalives) are skipped.
func readSSE(r io.Reader, on func(event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event string
	var data [][]byte
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		switch {
		case len(line) == 0:
			if event != "" || data != nil {
				if event == "" {
					event = "message"
				}
				if err := on(event, bytes.Join(data, []byte("\n"))); err != nil {
					return err
				}
			}
			event, data = "", nil
		case line[0] == ':':
		default:
			name, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(name) {
			case "event":
				event = string(value)
			case "data":
				data = append(data, append([]byte(nil), value...))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return &readError{err}
	}
	return nil
}
