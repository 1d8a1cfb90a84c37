// Package api is bureau's HTTP surface: a gin router, token authentication,
// handlers that return values, and one mapping from errors to responses.
// Nothing imports this package; it declares the interfaces it uses.
package api

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/bureau/bureau/internal/mcptools"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Desktops is the desktop service the API drives, by role. Only Deps
// holds it whole: each handler type keeps the roles it uses.
type Desktops interface {
	Lifecycle
	Persistence
	Settings
	Screen
	Quotas
}

// Deps are what the API needs.
type Deps struct {
	Desktops Desktops
	// Snapshots takes, lists, reverts to and deletes desktops' snapshots
	// (the step log's checkpoints too); Templates builds and lists warm
	// templates.
	Snapshots Snapshots
	Templates Templates
	Computer  Computer
	Guest     Guest
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
	// PublicURL (nil: unset) is the address people reach bureau by:
	// links bureau hands out use it rather than the request's host.
	PublicURL *url.URL
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (none: nobody's).
	TrustedProxies []netip.Prefix
	// TLS, when bureau serves HTTPS itself, says what its certificates
	// are (for /api/v1/info and health); nil when it does not.
	TLS TLSState
	// CertificateNames, when set, says whether a live URL name
	// (<port>-<desktop>.<domain>) may get a TLS certificate: a trusted
	// proxy that gets certificates on demand asks GET /tls/allowed.
	CertificateNames func(ctx context.Context, name string) error
	// OwnerOpenable are the private ranges owners may open in network
	// policies (BUREAU_NETWORK_OWNER_RANGES); others need an admin.
	OwnerOpenable []netip.Prefix
	// Clipboard reads and sets desktops' clipboards (for the API and the
	// console page).
	Clipboard Clipboard
	Tokens    Tokens
	Consoles  Consoles
	// Windows lists and arranges the windows of desktops' sessions and
	// launches apps there (nil: 503).
	Windows Windows
	// UI reads and drives the accessibility trees of desktops' sessions
	// (nil: 503).
	UI UI
	// People keeps people in the loop of desktops (docs/people.md): who
	// holds their input, help requests, approval gates (nil: none; the
	// routes answer 503 and nothing is guarded).
	People People
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
	// Backups copies desktops' data disks to backup targets and restores
	// them into new desktops (nil: none taken); BackupSchedules takes them
	// by itself and thins them out (nil: none scheduled); BackupFiles reads
	// backups' files without restoring them (nil: it cannot).
	Backups         Backups
	BackupSchedules BackupSchedules
	BackupFiles     BackupFiles
	// Webhooks registers owners' webhook endpoints (nil: none; the
	// routes answer 503).
	Webhooks Webhooks
	// Teams keeps teams and their members (docs/teams.md; nil: none, the
	// routes answer 503 and no team tokens are minted).
	Teams Teams
	// Audit keeps the audit log of state-changing calls and console
	// sessions (nil: none kept; GET /api/v1/audit answers 503).
	Audit Audit
	// SignIn is single sign-on (docs/sign-in.md; nil: no sign-in cookie
	// is taken, and /auth/* answer as when it is off).
	SignIn SignIn
	// Web is the browser front end (web.Static): the web console and the
	// console page.
	Web fs.FS
	// Readiness follows whether running desktops are ready (their
	// session is up); calls that need it answer 409 not_ready before.
	Readiness Readiness
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

// New builds the router. Each feature's handlers are a type of their
// own (handlers.go) holding the dependencies they use; the request
// plumbing they share is core's.
func New(d Deps) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// Request cancellation reaches handlers through c (a context.Context).
	r.ContextWithFallback = true
	r.HandleMethodNotAllowed = true
	h := newHandlers(d)
	s := h.core
	// gin believes X-Forwarded-For (ClientIP) from trusted proxies only;
	// the list was checked when Deps was made.
	if err := r.SetTrustedProxies(trustedProxyList(d.TrustedProxies)); err != nil {
		panic(err)
	}
	r.Use(s.origin.mark, s.logRequests, gin.CustomRecovery(s.recovered), h.preview.livePreviewHost)
	r.NoRoute(func(c *gin.Context) { s.fail(c, errNoRoute) })
	r.NoMethod(func(c *gin.Context) { s.fail(c, errNoMethod) })
	r.GET("/healthz", h.site.health)
	r.GET("/api/v1/openapi.json", h.site.openAPI)
	if d.CertificateNames != nil {
		r.GET("/tls/allowed", h.site.certificateAllowed)
	}

	// The agent's input waits while a person holds the desktop's, and
	// gated calls for a person's approval (h.people.gates.guard).
	v1 := r.Group("/api/v1", s.audited, s.authenticate, s.touchActivity, h.people.gates.guard, h.webhooks.quotaRefusals)
	v1.GET("/info", s.handle(h.site.info))
	v1.GET("/session", s.handle(s.session))
	h.signin.authRoutes(r)
	v1.GET("/tls", s.handle(h.site.tlsStatus))
	v1.GET("/events", s.handle(h.live.auditLog))
	v1.GET("/templates", s.handle(h.templates.listTemplates))
	v1.POST("/templates", s.rateLimited(rateHeavy, s.handle(h.templates.buildTemplate)))
	v1.GET("/quota", s.handle(h.quotas.getQuota))
	v1.GET("/quotas/:owner", s.handle(h.quotas.getQuota))
	v1.PUT("/quotas/:owner", s.handle(h.quotas.putQuota))
	v1.GET("/hosts", s.handle(h.hosts.listHosts))
	v1.POST("/hosts", s.handle(h.hosts.addHost))
	v1.GET("/hosts/:name", s.handle(h.hosts.getHost))
	v1.DELETE("/hosts/:name", s.handle(h.hosts.removeHost))
	v1.POST("/hosts/:name/drain", s.handle(h.hosts.drainHost))
	v1.DELETE("/hosts/:name/drain", s.handle(h.hosts.undrainHost))
	v1.GET("/events/stream", h.live.streamEvents)
	v1.POST("/events/stream-token", s.rateLimited(rateStream, s.handle(h.live.createStreamToken)))
	v1.GET("/desktops/:id/stats", s.handle(h.live.desktopStats))
	if d.Metrics != nil {
		r.GET("/metrics", s.authenticate, h.site.metrics)
	}
	v1.GET("/desktops", s.handle(h.desktops.listDesktops))
	v1.POST("/desktops", s.rateLimited(rateHeavy, s.handle(h.desktops.createDesktop)))
	v1.GET("/desktops/:id", s.handle(h.desktops.getDesktop))
	v1.DELETE("/desktops/:id", s.handle(h.desktops.deleteDesktop))
	v1.PATCH("/desktops/:id", s.handle(h.desktops.updateDesktop))
	v1.POST("/desktops/:id/start", s.handle(h.desktops.startDesktop))
	v1.POST("/desktops/:id/stop", s.handle(h.desktops.stopDesktop))
	v1.POST("/desktops/:id/reboot", s.handle(h.desktops.rebootDesktop))
	v1.POST("/desktops/:id/pause", s.handle(h.desktops.pauseDesktop))
	v1.POST("/desktops/:id/resume", s.handle(h.desktops.resumeDesktop))
	v1.POST("/desktops/:id/hibernate", s.handle(h.desktops.hibernateDesktop))
	v1.POST("/desktops/:id/reimage", s.rateLimited(rateHeavy, s.handle(h.desktops.reimageDesktop)))
	v1.POST("/desktops/:id/migrate", s.rateLimited(rateHeavy, s.handle(h.hosts.migrateDesktop)))
	v1.DELETE("/desktops/:id/migrate", s.handle(h.hosts.cancelMigration))
	v1.POST("/desktops/:id/data-disk", s.handle(h.desktops.resizeDataDisk))
	v1.GET("/desktops/:id/snapshots", s.handle(h.snapshots.listSnapshots))
	v1.POST("/desktops/:id/snapshots", s.rateLimited(rateHeavy, s.handle(h.snapshots.createSnapshot)))
	v1.POST("/desktops/:id/snapshots/:name/revert", s.handle(h.snapshots.revertSnapshot))
	v1.DELETE("/desktops/:id/snapshots/:name", s.handle(h.snapshots.deleteSnapshot))
	v1.GET("/desktops/:id/events", s.handle(h.desktops.desktopEvents))
	v1.GET("/desktops/:id/screenshot", s.rateLimited(rateScreen, h.computer.screenshot))
	v1.POST("/desktops/:id/computer", s.rateLimited(rateScreen, h.recorder.stepped(steps.KindComputer, s.handle(h.computer.computerAction))))
	v1.POST("/desktops/:id/exec", h.recorder.stepped(steps.KindExec, s.handle(h.guest.execCommand)))
	v1.GET("/desktops/:id/agent", s.handle(h.processes.agentStatus))
	v1.GET("/desktops/:id/processes", s.handle(h.processes.listProcesses))
	v1.GET("/desktops/:id/processes/:pid", s.handle(h.processes.getProcess))
	v1.DELETE("/desktops/:id/processes/:pid", s.handle(h.processes.signalProcess))
	v1.GET("/desktops/:id/processes/:pid/log", h.processes.processLog)
	v1.Any("/desktops/:id/ports/:port/*path", h.ports.portProxy)
	v1.GET("/desktops/:id/pty", h.terminals.pty)
	h.services.serviceRoutes(v1)
	h.windows.windowRoutes(v1)
	h.ui.uiRoutes(v1)
	h.secrets.secretRoutes(v1)
	h.people.peopleRoutes(v1)
	h.webhooks.webhookRoutes(v1)
	h.teams.teamRoutes(v1)
	h.audit.auditRoutes(v1)
	if d.Previews != nil && d.URLs != nil {
		h.urls.urlRoutes(r, v1, h.preview.previewPath)
	}
	v1.GET("/desktops/:id/files", h.guest.getFile)
	v1.PUT("/desktops/:id/files", h.recorder.stepped(steps.KindFileWrite, s.handle(h.guest.putFile)))
	v1.DELETE("/desktops/:id/files", h.recorder.stepped(steps.KindFileDelete, s.handle(h.guest.deleteFile)))
	v1.GET("/desktops/:id/clipboard", s.handle(h.clipboard.getClipboard))
	v1.PUT("/desktops/:id/clipboard", h.recorder.stepped(steps.KindClipboard, s.handle(h.clipboard.putClipboard)))
	h.steps.stepsRoutes(v1)
	h.recordings.recordingsRoutes(v1)
	h.backups.backupRoutes(v1)
	v1.POST("/desktops/:id/resolution", s.handle(h.computer.setResolution))
	v1.POST("/desktops/:id/console", s.handle(h.consoles.createConsole))
	v1.GET("/desktops/:id/console", s.handle(h.consoles.listConsoles))
	v1.DELETE("/desktops/:id/console/:token_id", s.handle(h.consoles.revokeConsole))
	// Console-token routes: a browser cannot send a bearer header on a
	// WebSocket, so these take ?token= instead.
	consoleAuth := s.auditedBy(h.consoles.consoleAuth)
	r.GET("/api/v1/desktops/:id/console/session", consoleAuth, s.handle(h.consoles.consoleSession))
	r.GET("/api/v1/desktops/:id/vnc", consoleAuth, h.consoles.vnc)
	r.GET("/api/v1/desktops/:id/console/clipboard", consoleAuth, s.handle(h.clipboard.consoleGetClipboard))
	r.PUT("/api/v1/desktops/:id/console/clipboard", consoleAuth, s.handle(h.clipboard.consolePutClipboard))
	r.GET("/api/v1/desktops/:id/console/pty", consoleAuth, h.terminals.consolePTY)
	h.people.consoleRoutes(r, consoleAuth)
	h.site.routeWeb(r)
	v1.GET("/images", s.handle(h.images.listImages))
	v1.POST("/images", s.rateLimited(rateHeavy, s.handle(h.images.importImage)))
	v1.DELETE("/images/:name", s.handle(h.images.deleteImage))
	// MCP (streamable HTTP): tools that call this API in process with the
	// caller's own token.
	mcpServer := mcptools.NewServer(mcptools.InProcess{Handler: r}, mcptools.BearerFromRequest, d.Info["version"])
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	r.Any("/mcp", s.audited, s.authenticate, s.mcpOrigin, gin.WrapH(mcpHandler))
	v1.GET("/tokens", s.handle(h.tokens.listTokens))
	v1.POST("/tokens", s.handle(h.tokens.createToken))
	v1.DELETE("/tokens/:id", s.handle(h.tokens.revokeToken))
	return r
}
