package api

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/gin-gonic/gin"
)

// Processes runs commands in a desktop's background (through bureau-agent).
type Processes interface {
	Start(ctx context.Context, domain string, r guest.ExecRequest) (*guest.Process, error)
	Processes(ctx context.Context, domain string) ([]*guest.Process, error)
	Process(ctx context.Context, domain, id string) (*guest.Process, error)
	Signal(ctx context.Context, domain, id, signal string) error
	ProcessLog(ctx context.Context, domain, id string, tail int64, follow bool, w io.Writer) error
	Agent(ctx context.Context, domain string) *guest.AgentStatus
}

// processHandlers list, signal and read the logs of desktops' background
// processes, and say whether bureau-agent answers.
type processHandlers struct {
	*core
	processes Processes
}

// agentStatus says whether bureau-agent answers in the desktop.
func (s *processHandlers) agentStatus(c *gin.Context) (reply, error) {
	d, err := s.running(c, "ask the agent of")
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, s.processes.Agent(c.Request.Context(), d.DomainName())}, nil
}

func (s *processHandlers) listProcesses(c *gin.Context) (reply, error) {
	d, err := s.running(c, "list the processes of")
	if err != nil {
		return reply{}, err
	}
	ps, err := s.processes.Processes(c.Request.Context(), d.DomainName())
	return reply{http.StatusOK, gin.H{"processes": ps}}, err
}

func (s *processHandlers) getProcess(c *gin.Context) (reply, error) {
	d, err := s.running(c, "read the processes of")
	if err != nil {
		return reply{}, err
	}
	p, err := s.processes.Process(c.Request.Context(), d.DomainName(), c.Param("pid"))
	return reply{http.StatusOK, p}, err
}

// signalProcess sends ?signal= (default TERM) to a background process.
func (s *processHandlers) signalProcess(c *gin.Context) (reply, error) {
	d, err := s.running(c, "signal the processes of")
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	if err := s.processes.Signal(ctx, d.DomainName(), c.Param("pid"), c.Query("signal")); err != nil {
		return reply{}, err
	}
	p, err := s.processes.Process(ctx, d.DomainName(), c.Param("pid"))
	return reply{http.StatusAccepted, p}, err
}

// processLog answers a background process's log as text: ?tail=N bytes
// (default all), and with ?follow=true what it writes until it ends (the
// response is streamed).
func (s *processHandlers) processLog(c *gin.Context) {
	tail, follow, err := logQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.running(c, "read the processes of")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	// Errors before the first byte are ordinary answers.
	if _, err := s.processes.Process(ctx, d.DomainName(), c.Param("pid")); err != nil {
		s.fail(c, err)
		return
	}
	if follow {
		defer s.screen.AddViewer(d.ID)()
	}
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Status(http.StatusOK)
	w := &flushWriter{w: c.Writer}
	if err := s.processes.ProcessLog(ctx, d.DomainName(), c.Param("pid"), tail, follow, w); err != nil && ctx.Err() == nil {
		s.log.Error("process log", "desktop", d.ID, "process", c.Param("pid"), "err", err)
		panic(http.ErrAbortHandler) // a cut body, not a complete-looking log
	}
}

// flushWriter flushes every write, so a followed log arrives as written.
type flushWriter struct{ w gin.ResponseWriter }

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.w.Flush()
	return n, err
}

// logQuery reads a log request's ?tail=N (bytes, 0: all) and ?follow.
func logQuery(c *gin.Context) (tail int64, follow bool, err error) {
	if v := c.Query("tail"); v != "" {
		if tail, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, false, &desktop.ValidationError{Field: "tail", Message: "must be a number of bytes"}
		}
	}
	follow, err = boolQuery(c, "follow")
	return tail, follow, err
}
