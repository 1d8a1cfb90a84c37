// Package api is bureau's HTTP surface: a gin router, token authentication,
// handlers that return values, and one mapping from errors to responses.
// Nothing imports this package; it declares the interfaces it uses.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/mcptools"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Desktops is the desktop service the API drives, by role.
type Desktops interface {
	Lifecycle
	Persistence
	Settings
	Screen
	Quotas
	Templates
}

// Lifecycle creates, lists, powers and deletes desktops.
type Lifecycle interface {
	Create(ctx context.Context, req manager.CreateRequest) (*desktop.Desktop, error)
	Get(ctx context.Context, id string) (*desktop.Desktop, error)
	List(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	Start(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Stop(ctx context.Context, id, actor string, opts manager.StopOptions) (*desktop.Desktop, error)
	Reboot(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Delete(ctx context.Context, id, actor string, deleteData bool) (*manager.DeleteResult, error)
	Events(ctx context.Context, id string, limit int) ([]*desktop.Event, error)
	// Wake resumes a paused or hibernated desktop and waits until it runs.
	Wake(ctx context.Context, id, actor string) (*desktop.Desktop, error)
}

// Persistence pauses, hibernates, snapshots, reimages and grows desktops.
type Persistence interface {
	Pause(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Resume(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	Hibernate(ctx context.Context, id, actor string) (*desktop.Desktop, error)
	CreateSnapshot(ctx context.Context, id string, req manager.SnapshotRequest) (*desktop.Snapshot, error)
	ListSnapshots(ctx context.Context, id string) ([]*desktop.Snapshot, error)
	RevertSnapshot(ctx context.Context, id, name, actor string) (*desktop.Desktop, error)
	DeleteSnapshot(ctx context.Context, id, name, actor string) error
	Reimage(ctx context.Context, id, image, actor string) (*desktop.Desktop, error)
	ResizeDataDisk(ctx context.Context, id string, req manager.ResizeRequest) (*desktop.Desktop, error)
}

// Settings changes a desktop's settings (PATCH).
type Settings interface {
	SetIdleTiers(ctx context.Context, id string, t manager.IdleTiers, actor string) (*desktop.Desktop, error)
	SetRestartOnCrash(ctx context.Context, id string, on bool, actor string) (*desktop.Desktop, error)
	SetKeyboardLayout(ctx context.Context, id, layout, actor string) (*desktop.Desktop, error)
	SetNetworkPolicy(ctx context.Context, id string, p desktop.NetworkPolicy, actor string) (*desktop.Desktop, error)
}

// Screen is the console's side: the display, and use that keeps a desktop
// awake.
type Screen interface {
	// DialVNC connects to a running desktop's display (RFB).
	DialVNC(ctx context.Context, id string) (net.Conn, error)
	// Touch records use of a desktop; AddViewer counts a console viewer
	// until done is called. Both keep a desktop from idle hibernation.
	Touch(id string)
	AddViewer(id string) (done func())
	// Prewake restores a hibernated desktop paused ahead of a likely use
	// (why says what makes it likely), in the background; other states
	// are left alone.
	Prewake(ctx context.Context, id, actor, why string)
}

// Tokens issues and checks API tokens.
type Tokens interface {
	Authenticate(ctx context.Context, secret string) (*desktop.Token, error)
	Create(ctx context.Context, req auth.CreateRequest) (string, *desktop.Token, error)
	List(ctx context.Context, owner string) ([]*desktop.Token, error)
	// Revoke revokes a token and the tokens it minted, and says how many.
	Revoke(ctx context.Context, id string) ([]string, error)
	// Usable returns a token by id if it may still authenticate.
	Usable(ctx context.Context, id string) (*desktop.Token, error)
}

// Deps are what the API needs.
type Deps struct {
	Desktops Desktops
	Computer Computer
	Guest    Guest
	// Processes, Ports and Terminals are reached through bureau-agent.
	Processes Processes
	Ports     Ports
	Terminals Terminals
	// Services are supervised by bureau-agent; SecretValues gives them
	// (and exec) the secrets they name.
	Services     Services
	SecretValues SecretValues
	// Secrets are set and listed by name; SecretsChanged (may be nil) is
	// told after each change, to hand new values to running desktops.
	Secrets        Secrets
	SecretsChanged func(owner, desktopID string)
	// Previews and URLs serve and manage live URLs: /preview/<desktop>/<port>/
	// and, when PreviewDomain is set, http(s)://<port>-<desktop>.<PreviewDomain>/.
	Previews      Previews
	URLs          URLs
	PreviewDomain string
	// OwnerOpenable are the private ranges owners may open in network
	// policies (BUREAU_NETWORK_OWNER_RANGES); others need an admin.
	OwnerOpenable []netip.Prefix
	// Clipboard reads and sets desktops' clipboards (for the API and the
	// console page).
	Clipboard Clipboard
	Tokens    Tokens
	Consoles  Consoles
	// Hosts are the libvirt hosts desktops run on; HostLoads, when set,
	// what bureau's desktops take on each; Migrations, when set, moves
	// desktops between them.
	Migrations Migrations
	// Drains, when set, move every desktop off a host.
	Drains    Drains
	Hosts     Hosts
	HostLoads HostLoads
	Images    Images
	// Steps is each desktop's step log (nil: none kept); StepThumbnails
	// which pictures of the screen its steps keep (StepThumbnailModes;
	// "" is "both").
	Steps          Steps
	StepThumbnails string
	// Recordings records desktops' screens (nil: none made);
	// KeptRecordings keeps them past their desktop (nil with it).
	Recordings     Recordings
	KeptRecordings KeptRecordings
	// Web is the browser front end (web.Static): the web console and the
	// console page.
	Web fs.FS
	// Live feeds state changes and the audit log; Stats reads VM figures.
	Live  Live
	Stats Stats
	// Metrics serves /metrics (Prometheus) when set; Observe records each
	// request's latency.
	Metrics http.Handler
	Observe func(method, route string, status int, took time.Duration)
	// ObserveLiveURL records each request to a live URL (may be nil).
	ObserveLiveURL func(desktopID string, port, status int, toApp, toClient int64, took time.Duration)
	// ConsoleBytes counts bytes through the console proxy (may be nil).
	ConsoleBytes func(direction string, n int)
	Log          *slog.Logger
	// Info is served by GET /api/v1/info (accelerator, version…).
	Info map[string]string
	// HostDirs are the host's directories (data, libvirt's save
	// directory); paths under them are hidden from non-admins in messages.
	HostDirs []string
}

type server struct {
	Deps
	limits  *limiter
	streams *auth.StreamGrants
	redact  *redactor
	shots   stepShots
	// checkpoints takes each desktop's automatic checkpoints one at a time.
	checkpoints checkpointLocks
}

// New builds the router.
func New(d Deps) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// Request cancellation reaches handlers through c (a context.Context).
	r.ContextWithFallback = true
	r.HandleMethodNotAllowed = true
	s := &server{Deps: d, limits: newLimiter(), streams: auth.NewStreamGrants(), redact: newRedactor(d.HostDirs)}
	r.Use(s.logRequests, gin.CustomRecovery(s.recovered), s.livePreviewHost)
	r.NoRoute(func(c *gin.Context) { s.fail(c, errNoRoute) })
	r.NoMethod(func(c *gin.Context) { s.fail(c, errNoMethod) })
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/api/v1/openapi.json", s.openAPI)

	v1 := r.Group("/api/v1", s.authenticate, s.touchActivity)
	v1.GET("/info", s.handle(s.info))
	v1.GET("/events", s.handle(s.auditLog))
	v1.GET("/templates", s.handle(s.listTemplates))
	v1.POST("/templates", s.rateLimited(rateHeavy, s.handle(s.buildTemplate)))
	v1.GET("/quota", s.handle(s.getQuota))
	v1.GET("/quotas/:owner", s.handle(s.getQuota))
	v1.PUT("/quotas/:owner", s.handle(s.putQuota))
	v1.GET("/hosts", s.handle(s.listHosts))
	v1.POST("/hosts", s.handle(s.addHost))
	v1.GET("/hosts/:name", s.handle(s.getHost))
	v1.DELETE("/hosts/:name", s.handle(s.removeHost))
	v1.POST("/hosts/:name/drain", s.handle(s.drainHost))
	v1.DELETE("/hosts/:name/drain", s.handle(s.undrainHost))
	v1.GET("/events/stream", s.streamEvents)
	v1.POST("/events/stream-token", s.rateLimited(rateStream, s.handle(s.createStreamToken)))
	v1.GET("/desktops/:id/stats", s.handle(s.desktopStats))
	if d.Metrics != nil {
		r.GET("/metrics", s.authenticate, func(c *gin.Context) {
			if err := requireAdmin(c); err != nil {
				s.fail(c, err)
				return
			}
			d.Metrics.ServeHTTP(c.Writer, c.Request)
		})
	}
	v1.GET("/desktops", s.handle(s.listDesktops))
	v1.POST("/desktops", s.rateLimited(rateHeavy, s.handle(s.createDesktop)))
	v1.GET("/desktops/:id", s.handle(s.getDesktop))
	v1.DELETE("/desktops/:id", s.handle(s.deleteDesktop))
	v1.PATCH("/desktops/:id", s.handle(s.updateDesktop))
	v1.POST("/desktops/:id/start", s.handle(s.startDesktop))
	v1.POST("/desktops/:id/stop", s.handle(s.stopDesktop))
	v1.POST("/desktops/:id/reboot", s.handle(s.rebootDesktop))
	v1.POST("/desktops/:id/pause", s.handle(s.pauseDesktop))
	v1.POST("/desktops/:id/resume", s.handle(s.resumeDesktop))
	v1.POST("/desktops/:id/hibernate", s.handle(s.hibernateDesktop))
	v1.POST("/desktops/:id/reimage", s.rateLimited(rateHeavy, s.handle(s.reimageDesktop)))
	v1.POST("/desktops/:id/migrate", s.rateLimited(rateHeavy, s.handle(s.migrateDesktop)))
	v1.DELETE("/desktops/:id/migrate", s.handle(s.cancelMigration))
	v1.POST("/desktops/:id/data-disk", s.handle(s.resizeDataDisk))
	v1.GET("/desktops/:id/snapshots", s.handle(s.listSnapshots))
	v1.POST("/desktops/:id/snapshots", s.rateLimited(rateHeavy, s.handle(s.createSnapshot)))
	v1.POST("/desktops/:id/snapshots/:name/revert", s.handle(s.revertSnapshot))
	v1.DELETE("/desktops/:id/snapshots/:name", s.handle(s.deleteSnapshot))
	v1.GET("/desktops/:id/events", s.handle(s.desktopEvents))
	v1.GET("/desktops/:id/screenshot", s.rateLimited(rateScreen, s.screenshot))
	v1.POST("/desktops/:id/computer", s.rateLimited(rateScreen, s.stepped(steps.KindComputer, s.handle(s.computerAction))))
	v1.POST("/desktops/:id/exec", s.stepped(steps.KindExec, s.handle(s.execCommand)))
	v1.GET("/desktops/:id/agent", s.handle(s.agentStatus))
	v1.GET("/desktops/:id/processes", s.handle(s.listProcesses))
	v1.GET("/desktops/:id/processes/:pid", s.handle(s.getProcess))
	v1.DELETE("/desktops/:id/processes/:pid", s.handle(s.signalProcess))
	v1.GET("/desktops/:id/processes/:pid/log", s.processLog)
	v1.Any("/desktops/:id/ports/:port/*path", s.portProxy)
	v1.GET("/desktops/:id/pty", s.pty)
	s.serviceRoutes(v1)
	s.secretRoutes(v1)
	if d.Previews != nil && d.URLs != nil {
		s.urlRoutes(r, v1)
	}
	v1.GET("/desktops/:id/files", s.getFile)
	v1.PUT("/desktops/:id/files", s.stepped(steps.KindFileWrite, s.handle(s.putFile)))
	v1.DELETE("/desktops/:id/files", s.stepped(steps.KindFileDelete, s.handle(s.deleteFile)))
	v1.GET("/desktops/:id/clipboard", s.handle(s.getClipboard))
	v1.PUT("/desktops/:id/clipboard", s.stepped(steps.KindClipboard, s.handle(s.putClipboard)))
	s.stepsRoutes(v1)
	s.recordingsRoutes(v1)
	v1.POST("/desktops/:id/resolution", s.handle(s.setResolution))
	v1.POST("/desktops/:id/console", s.handle(s.createConsole))
	v1.GET("/desktops/:id/console", s.handle(s.listConsoles))
	v1.DELETE("/desktops/:id/console/:token_id", s.handle(s.revokeConsole))
	// Console-token routes: a browser cannot send a bearer header on a
	// WebSocket, so these take ?token= instead.
	r.GET("/api/v1/desktops/:id/console/session", s.consoleAuth, s.handle(s.consoleSession))
	r.GET("/api/v1/desktops/:id/vnc", s.consoleAuth, s.vnc)
	r.GET("/api/v1/desktops/:id/console/clipboard", s.consoleAuth, s.handle(s.consoleGetClipboard))
	r.PUT("/api/v1/desktops/:id/console/clipboard", s.consoleAuth, s.handle(s.consolePutClipboard))
	r.GET("/api/v1/desktops/:id/console/pty", s.consoleAuth, s.consolePTY)
	s.routeWeb(r)
	v1.GET("/images", s.handle(s.listImages))
	v1.POST("/images", s.rateLimited(rateHeavy, s.handle(s.importImage)))
	v1.DELETE("/images/:name", s.handle(s.deleteImage))
	// MCP (streamable HTTP): tools that call this API in process with the
	// caller's own token.
	mcpServer := mcptools.NewServer(mcptools.InProcess{Handler: r}, mcptools.BearerFromRequest, d.Info["version"])
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	r.Any("/mcp", s.authenticate, mcpOrigin, gin.WrapH(mcpHandler))
	v1.GET("/tokens", s.handle(s.listTokens))
	v1.POST("/tokens", s.handle(s.createToken))
	v1.DELETE("/tokens/:id", s.handle(s.revokeToken))
	return r
}

// reply is what a handler returns: a status and a JSON body.
type reply struct {
	status int
	body   any
}

// handle adapts a value-returning handler: errors go through fail, and
// the body is what the caller may see (host paths for admins only).
func (s *server) handle(h func(c *gin.Context) (reply, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		r, err := h(c)
		if err != nil {
			s.fail(c, err)
			return
		}
		noteStepResult(c, r.body)
		if c.Writer.Written() { // the handler streamed its own response
			return
		}
		if r.body == nil {
			c.Status(r.status)
			return
		}
		c.JSON(r.status, s.forCaller(c, r.body))
	}
}

func (s *server) info(c *gin.Context) (reply, error) {
	return reply{http.StatusOK, s.Info}, nil
}

// logRequests logs each request with an id (X-Request-Id, taken from the
// client when it sends a sane one) and records its latency.
func (s *server) logRequests(c *gin.Context) {
	start := time.Now()
	id := c.GetHeader("X-Request-Id")
	if len(id) == 0 || len(id) > 64 {
		id = newRequestID()
	}
	c.Set(ctxRequestID, id)
	c.Header("X-Request-Id", id)
	c.Next()
	took := time.Since(start)
	s.Log.Info("request", "method", c.Request.Method, "path", c.FullPath(), "status", c.Writer.Status(),
		"duration_ms", took.Milliseconds(), "owner", c.GetString(ctxOwner), "desktop", c.Param("id"),
		"request_id", c.GetString(ctxRequestID))
	if s.Observe != nil {
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		s.Observe(c.Request.Method, route, c.Writer.Status(), took)
	}
}

func (s *server) recovered(c *gin.Context, v any) {
	s.Log.Error("handler panic", "panic", v, "path", c.Request.URL.Path)
	s.fail(c, errPanic)
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
