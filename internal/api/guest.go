package api

import (
	"context"
	"encoding/base64"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/gin-gonic/gin"
)

// Guest runs commands and moves files inside desktops.
type Guest interface {
	Exec(ctx context.Context, domain string, r guest.ExecRequest) (*guest.ExecResult, error)
	ExecStream(ctx context.Context, domain string, r guest.ExecRequest, out guest.StreamOutput) (*guest.ExecResult, error)
	Stat(ctx context.Context, domain, path, user string) (*guest.Stat, error)
	Read(ctx context.Context, domain string, st *guest.Stat, w io.Writer) error
	Write(ctx context.Context, domain string, req guest.WriteRequest, r io.Reader) (string, int64, error)
	Delete(ctx context.Context, domain, path, user string, recursive bool) error
	SetResolution(ctx context.Context, domain string, w, h int) error
}

// guestHandlers run commands (exec, in the foreground or as background
// processes) and move files inside desktops.
type guestHandlers struct {
	*core
	guest     Guest
	processes Processes // starts background commands
	// secretValues gives commands the secrets they name.
	secretValues SecretValues
}

// via honours ?agent=qemu-ga: the call skips bureau-agent (to compare the
// two agents, or to get past a broken bureau-agent).
func via(c *gin.Context) (context.Context, error) {
	switch c.Query("agent") {
	case "":
		return c.Request.Context(), nil
	case "qemu-ga":
		return guest.ViaQEMU(c.Request.Context()), nil
	}
	return nil, &desktop.ValidationError{Field: "agent", Message: "the only choice is qemu-ga (bureau-agent is the default)"}
}

// execCommand runs a command and answers its result, or with stream=true
// streams its output as server-sent events (see execStream).
func (s *guestHandlers) execCommand(c *gin.Context) (reply, error) {
	if _, err := s.owned(c); err != nil { // before the body says anything
		return reply{}, err
	}
	stream := false
	if v := c.Query("stream"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return reply{}, &desktop.ValidationError{Field: "stream", Message: "must be true or false"}
		}
		stream = b
	}
	var req guest.ExecRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if err := req.Validate(); err != nil {
		return reply{}, err
	}
	if req.Background && stream {
		return reply{}, &desktop.ValidationError{Field: "stream", Message: "a background process is not streamed: read its log (GET /processes/{id}/log?follow=true)"}
	}
	d, err := s.ready(c, "exec in")
	if err != nil {
		return reply{}, err
	}
	secrets, err := secretsFor(c, s.secretValues, d, req.Secrets)
	if err != nil {
		return reply{}, err
	}
	req = req.WithSecrets(secrets)
	if req.Background {
		return s.startProcess(c, d.DomainName(), req)
	}
	ctx, err := via(c)
	if err != nil {
		return reply{}, err
	}
	if stream {
		return reply{}, s.execStream(ctx, c, d, req, secrets)
	}
	res, err := s.guest.Exec(ctx, d.DomainName(), req)
	if res != nil && len(secrets) > 0 {
		res.Stdout = scrubOutput(res.Stdout, res.Encoding, secrets)
		res.Stderr = scrubOutput(res.Stderr, res.Encoding, secrets)
	}
	return reply{http.StatusOK, res}, err
}

// startProcess answers exec with "background": true: 202 and the process.
func (s *guestHandlers) startProcess(c *gin.Context, domain string, req guest.ExecRequest) (reply, error) {
	p, err := s.processes.Start(c.Request.Context(), domain, req)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusAccepted, p}, nil
}

// execStream streams a command as server-sent events: "stdout" and
// "stderr" ({"data": text}, or base64 with "encoding": "base64" when a
// chunk is not UTF-8), then "exit" ({"exit_code", "timed_out",
// "truncated", "duration_ms"}) or "error" ({"message"}). Errors before the
// command starts are ordinary JSON answers.
func (s *guestHandlers) execStream(ctx context.Context, c *gin.Context, d *desktop.Desktop, req guest.ExecRequest, secrets map[string]string) error {
	// Someone is watching the command: the desktop is not idle meanwhile.
	defer s.screen.AddViewer(d.ID)()
	sse := &sseWriter{w: c.Writer}
	out := newScrubbedOutput(sse, secrets)
	res, err := s.guest.ExecStream(ctx, d.DomainName(), req, out)
	out.flush()
	if !sse.started() {
		return err
	}
	defer sse.stop()
	switch {
	case err != nil && ctx.Err() != nil:
		// The client went away; the command was stopped.
	case err != nil:
		status, body := classify(err)
		if status >= 500 {
			s.log.Error("streamed exec failed", "desktop", d.ID, "err", err)
		}
		sse.event("error", gin.H{"message": body.Message})
	default:
		exit := gin.H{"exit_code": res.ExitCode, "timed_out": res.TimedOut, "truncated": res.Truncated, "duration_ms": res.DurationMS}
		sse.event("exit", exit)
		noteStepResult(c, exit)
	}
	return nil
}

// sseWriter writes a streamed command's events, flushing each, with a
// comment every 15 s while the command is quiet so proxies keep the
// stream open.
type sseWriter struct {
	w    gin.ResponseWriter
	mu   sync.Mutex
	on   bool
	done chan struct{}
}

func (e *sseWriter) started() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.on
}

func (e *sseWriter) Started() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := startSSE(e.w, "bureau exec")
	e.on = true
	e.done = make(chan struct{})
	go e.keepalive(e.done)
	return err
}

func (e *sseWriter) keepalive(done chan struct{}) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			e.mu.Lock()
			io.WriteString(e.w, ": keepalive\n\n")
			e.w.Flush()
			e.mu.Unlock()
		}
	}
}

func (e *sseWriter) stop() { close(e.done) }

func (e *sseWriter) Output(stream string, b []byte) error {
	v := gin.H{"data": string(b)}
	if !utf8.Valid(b) {
		v = gin.H{"data": base64.StdEncoding.EncodeToString(b), "encoding": "base64"}
	}
	return e.event(stream, v)
}

func (e *sseWriter) event(kind string, v any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := writeEvent(e.w, kind, v); err != nil {
		return err
	}
	e.w.Flush()
	return nil
}

// getFile downloads a file (streamed, never held in memory) or lists a
// directory as JSON.
func (s *guestHandlers) getFile(c *gin.Context) {
	d, err := s.ready(c, "read files of")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, err := via(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	st, err := s.guest.Stat(ctx, d.DomainName(), c.Query("path"), c.Query("user"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if st.Dir {
		c.JSON(http.StatusOK, st)
		return
	}
	c.Header("Content-Length", strconv.FormatInt(st.Size, 10))
	c.Header("Content-Type", "application/octet-stream")
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(st.Path)}))
	c.Header("X-File-Path", st.Path)
	c.Status(http.StatusOK)
	if err := s.guest.Read(ctx, d.DomainName(), st, c.Writer); err != nil {
		if c.Request.Context().Err() != nil {
			return // the client went away or took all it wanted
		}
		// Headers are gone: cut the connection so the client sees a short
		// body rather than a complete-looking file.
		s.log.Error("download failed", "desktop", d.ID, "path", st.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// putFile uploads the request body to path (streamed), creating parent
// directories unless parents=false, with mode (octal, default 0644).
func (s *guestHandlers) putFile(c *gin.Context) (reply, error) {
	req := guest.WriteRequest{Path: c.Query("path"), User: c.Query("user"), Parents: true}
	if v := c.Query("parents"); v != "" {
		p, err := boolQuery(c, "parents")
		if err != nil {
			return reply{}, err
		}
		req.Parents = p
	}
	if v := c.Query("mode"); v != "" {
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil || m > 0o7777 {
			return reply{}, &desktop.ValidationError{Field: "mode", Message: "must be octal permission bits such as 0644"}
		}
		req.Mode = uint32(m)
	}
	d, err := s.ready(c, "write files of")
	if err != nil {
		return reply{}, err
	}
	ctx, err := via(c)
	if err != nil {
		return reply{}, err
	}
	final, n, err := s.guest.Write(ctx, d.DomainName(), req, c.Request.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, gin.H{"path": final, "size": n}}, nil
}

func (s *guestHandlers) deleteFile(c *gin.Context) (reply, error) {
	recursive, err := boolQuery(c, "recursive")
	if err != nil {
		return reply{}, err
	}
	ctx, err := via(c)
	if err != nil {
		return reply{}, err
	}
	d, err := s.ready(c, "delete files of")
	if err != nil {
		return reply{}, err
	}
	err = s.guest.Delete(ctx, d.DomainName(), c.Query("path"), c.Query("user"), recursive)
	return reply{http.StatusNoContent, nil}, err
}
