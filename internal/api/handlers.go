package api

import (
	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/auth"
)

// handlers are the API's handler types, one per feature, each given only
// the dependencies (roles of Deps) it uses and the shared core.
type handlers struct {
	core       *core
	site       *siteHandlers
	live       *liveHandlers
	desktops   *desktopHandlers
	snapshots  *snapshotHandlers
	quotas     *quotaHandlers
	templates  *templateHandlers
	hosts      *hostHandlers
	images     *imageHandlers
	computer   *computerHandlers
	guest      *guestHandlers
	processes  *processHandlers
	clipboard  *clipboardHandlers
	windows    *windowHandlers
	ui         *uiHandlers
	terminals  *terminalHandlers
	services   *serviceHandlers
	ports      *portHandlers
	urls       *urlHandlers
	preview    *previewHandlers
	consoles   *consoleHandlers
	tokens     *tokenHandlers
	secrets    *secretHandlers
	steps      *stepHandlers
	recorder   *stepRecorder
	recordings *recordingHandlers
	backups    *backupHandlers
	people     *peopleHandlers
	webhooks   *webhookHandlers
	teams      *teamHandlers
	audit      *auditHandlers
	signin     *signinHandlers
}

func newHandlers(d Deps) handlers {
	s := &core{lifecycle: d.Desktops, screen: d.Desktops, tokens: d.Tokens, streams: auth.NewStreamGrants(), hosts: d.Hosts,
		log: d.Log, observe: d.Observe, redact: newRedactor(d.HostDirs), limits: newLimiter(),
		origin: &origin{public: d.PublicURL, trusted: d.TrustedProxies}, readiness: d.Readiness, people: d.People, signin: d.SignIn, teams: d.Teams}
	if d.Audit != nil {
		s.audit = &auditor{log: d.Audit, unauth: &audit.Window{Max: maxUnauthenticatedPerSecond}}
	}
	links := &liveLinks{domain: d.PreviewDomain, origin: s.origin}
	// Services show their live URLs only where bureau serves them.
	var serviceLinks *liveLinks
	if d.Previews != nil {
		serviceLinks = links
	}
	ports := &portHandlers{core: s, ports: d.Ports}
	return handlers{
		core: s,
		site: &siteHandlers{core: s, about: d.Info, web: d.Web, consoles: d.Consoles, prometheus: d.Metrics, tls: d.TLS, certNames: d.CertificateNames},
		live: &liveHandlers{core: s, live: d.Live, stats: d.Stats},
		desktops: &desktopHandlers{core: s, persistence: d.Desktops, settings: d.Desktops,
			computer: d.Computer, keptRecordings: d.KeptRecordings, secrets: d.Secrets, urls: d.URLs, ownerOpenable: d.OwnerOpenable},
		snapshots: &snapshotHandlers{core: s, snapshots: d.Snapshots},
		quotas:    &quotaHandlers{core: s, quotas: d.Desktops},
		templates: &templateHandlers{core: s, templates: d.Templates},
		hosts:     &hostHandlers{core: s, hostLoads: d.HostLoads, drains: d.Drains, migrations: d.Migrations},
		images:    &imageHandlers{core: s, images: d.Images},
		computer:  &computerHandlers{core: s, computer: d.Computer, guest: d.Guest, recordings: d.Recordings, ui: d.UI},
		guest:     &guestHandlers{core: s, guest: d.Guest, processes: d.Processes, secretValues: d.SecretValues},
		processes: &processHandlers{core: s, processes: d.Processes},
		clipboard: &clipboardHandlers{core: s, clipboard: d.Clipboard},
		windows:   &windowHandlers{core: s, windows: d.Windows},
		ui:        &uiHandlers{core: s, ui: d.UI},
		terminals: &terminalHandlers{core: s, terminals: d.Terminals},
		services: &serviceHandlers{core: s, services: d.Services, secretValues: d.SecretValues, secrets: d.Secrets,
			links: serviceLinks},
		ports: ports,
		urls:  &urlHandlers{core: s, previews: d.Previews, urls: d.URLs, services: d.Services, links: links},
		preview: &previewHandlers{core: s, previews: d.Previews,
			observe: d.ObserveLiveURL, proxy: ports, links: links},
		consoles: &consoleHandlers{core: s, consoles: d.Consoles, countBytes: d.ConsoleBytes},
		tokens:   &tokenHandlers{core: s, consoles: d.Consoles},
		secrets:  &secretHandlers{core: s, secrets: d.Secrets, changed: d.SecretsChanged},
		steps:    &stepHandlers{core: s, steps: d.Steps, snapshots: d.Snapshots},
		recorder: &stepRecorder{core: s, steps: d.Steps, computer: d.Computer, snapshots: d.Snapshots,
			thumbnails: d.StepThumbnails},
		recordings: &recordingHandlers{core: s, recordings: d.Recordings, kept: d.KeptRecordings},
		backups:    &backupHandlers{core: s, backups: d.Backups, schedules: d.BackupSchedules, files: d.BackupFiles, guest: d.Guest},
		people:     newPeopleHandlers(s, d),
		webhooks:   &webhookHandlers{core: s, hooks: d.Webhooks},
		teams:      &teamHandlers{core: s, consoles: d.Consoles},
		audit:      &auditHandlers{core: s, entries: d.Audit},
		signin:     &signinHandlers{core: s, consoles: d.Consoles},
	}
}
