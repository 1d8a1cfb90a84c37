// Package config reads bureau's settings from the environment (BUREAU_*);
// command-line flags override them in cmd/bureau.
package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is every setting bureau has.
type Config struct {
	DataDir      string // BUREAU_DATA_DIR: images, desktops, SQLite database
	Listen       string // BUREAU_LISTEN
	DatabaseURL  string // BUREAU_DATABASE_URL: postgres://… or a SQLite path
	LibvirtURI   string // BUREAU_LIBVIRT_URI
	Accelerator  string // BUREAU_ACCELERATOR: auto, kvm or tcg
	DefaultImage string // BUREAU_DEFAULT_IMAGE
	ImageCache   string // BUREAU_IMAGE_CACHE: built images by recipe hash
	RecipeDir    string // BUREAU_RECIPE_DIR: the default image's recipe
	AdminToken   string // BUREAU_ADMIN_TOKEN: the first admin token's secret
	LogFormat    string // BUREAU_LOG_FORMAT: json or text
	DefaultPlan  string // BUREAU_DEFAULT_PLAN: quota plan of owners without their own
	// TCGCacheMiB (BUREAU_TCG_CACHE_MIB) is each desktop's QEMU translation
	// cache under TCG; 0 keeps QEMU's 1 GiB. See BENCHMARKS.md, density.
	TCGCacheMiB int
	// NetworkSubnet (BUREAU_NETWORK_SUBNET) is the desktops' private
	// network behind NAT; it must not overlap the host's own networks.
	NetworkSubnet string
	// NetworkOwnerRanges (BUREAU_NETWORK_OWNER_RANGES) are the private
	// IPv4 ranges (comma-separated CIDRs) owners may open in their
	// desktops' network policies; anything else private or reserved only
	// an admin opens, and link-local (cloud metadata) nobody. Default none.
	NetworkOwnerRanges string
	// ReconcileSeconds (BUREAU_RECONCILE_SECONDS) is how often every
	// desktop is compared with its VM to repair missed events and finish
	// interrupted operations.
	ReconcileSeconds int
	// NapAfterSeconds (BUREAU_NAP_AFTER_SECONDS) and SleepAfterSeconds
	// (BUREAU_SLEEP_AFTER_SECONDS) are new desktops' idle tiers when the
	// create request names none (0 = skip the tier); IdleCheckSeconds
	// (BUREAU_IDLE_CHECK_SECONDS) how often quiet desktops are looked for.
	NapAfterSeconds, SleepAfterSeconds, IdleCheckSeconds int
	// MemoryLowMiB (BUREAU_MEMORY_LOW_MIB): with less host memory
	// available, the longest-idle desktops are moved down a tier (slept,
	// then hibernated) one per idle check; 0 = never.
	MemoryLowMiB int
	// SaveAsIs (BUREAU_SAVE_AS_IS=1) hibernates running desktops without
	// first dropping their guests' page cache: a bigger save image, slower
	// to write and restore, but files the guest had cached stay cached.
	SaveAsIs bool
	// WarmSpares (BUREAU_WARM_SPARES) is how many desktops of each ready
	// template are kept restored ahead, paused, for creates to take
	// (0 = none; each holds up to its RAM on the host).
	WarmSpares int
	// Placement (BUREAU_PLACEMENT) "on" places a create that names no
	// host on the host that weighs most (free memory after reservations,
	// free disk, fewest desktops), among those carrying the labels it
	// asks for; "auto" (the default) does so once bureau has a remote
	// host; "off" runs it on bureau's own host.
	Placement string
	// MemoryRatioPercent (BUREAU_MEMORY_RATIO_PERCENT, default 150) is
	// the share of a host's RAM desktops may be given in all, placed by
	// bureau on that host.
	MemoryRatioPercent int
	// HostAddress (BUREAU_HOST_ADDRESS) is this host's address other
	// hosts' migration streams connect to; unset, desktops are not moved
	// here from other hosts.
	HostAddress string
	// HostCheckSeconds (BUREAU_HOST_CHECK_SECONDS) is how often every
	// libvirt host is asked for its state and capacity.
	HostCheckSeconds int
	// StepsKeep (BUREAU_STEPS_KEEP) is how many of each desktop's newest
	// steps the step log keeps, with their thumbnails (0: all).
	StepsKeep int
	// StepThumbnails (BUREAU_STEP_THUMBNAILS) is which pictures of the
	// screen a step keeps: "both" (before and after), "after" (saves the
	// picture taken before each call, ~30 ms on the call's path) or "off".
	StepThumbnails string
	// RecordingMaxSeconds (BUREAU_RECORDING_MAX_SECONDS) bounds one
	// recording; RecordingsKeepMiB (BUREAU_RECORDINGS_KEEP_MIB) is what a
	// desktop's recordings may take on disk (the oldest go first).
	RecordingMaxSeconds int
	RecordingsKeepMiB   int
	// LiveFramebuffer (BUREAU_LIVE_FRAMEBUFFER, default on; "off") keeps
	// a live copy of a looked-at desktop's screen from its display's
	// change reports: screenshots read it and "settled" waits on them.
	// Off, every screenshot is a hypervisor screen dump.
	LiveFramebuffer bool
	// AgentBinary (BUREAU_AGENT_BIN) is the bureau-agent bureau installs
	// in desktops and updates them to; "" is bureau-agent next to the
	// bureau binary.
	AgentBinary string
	// AgentViaStream (BUREAU_AGENT_VIA_STREAM=1) reaches bureau-agent
	// through libvirt's channel stream even on a local host, as on a
	// remote one.
	AgentViaStream bool
	// PreviewDomain (BUREAU_PREVIEW_DOMAIN) is the domain under which
	// live URLs are served as <port>-<desktop>.<domain> (default
	// "localhost", which browsers resolve to this machine without DNS;
	// "" serves the /preview/ path form only).
	PreviewDomain string

	// PublicURL (BUREAU_PUBLIC_URL) is the address people and programs
	// reach bureau by, e.g. https://bureau.example.com: links bureau
	// hands out (console, share links, live URLs, OpenAPI servers) use
	// it rather than the request's host. "" builds them from the request.
	PublicURL string
	// TLS (BUREAU_TLS) is how bureau serves HTTPS: "off" (plain HTTP, on
	// the loopback or behind a TLS proxy), "files" (TLSCert and TLSKey,
	// BUREAU_TLS_CERT and BUREAU_TLS_KEY, loaded again when they change)
	// or "auto" (certificates from an ACME CA for PublicURL's host and
	// live URL names of existing desktops). With TLS on, Listen defaults
	// to :443 and HTTPListen (BUREAU_HTTP_LISTEN, "off" for none) to :80,
	// which redirects to HTTPS and answers the CA's http-01 challenges.
	TLS, TLSCert, TLSKey, HTTPListen string
	// ACMEDirectory (BUREAU_ACME_DIRECTORY) is the ACME CA's directory
	// URL (default Let's Encrypt's); ACMEEmail (BUREAU_ACME_EMAIL) the
	// account's contact; ACMERoots (BUREAU_ACME_ROOTS) a PEM file of the
	// only CAs trusted for the directory's HTTPS (a private CA's).
	ACMEDirectory, ACMEEmail, ACMERoots string
	// TrustedProxies (BUREAU_TRUSTED_PROXIES) are the addresses or CIDRs,
	// comma-separated, of reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto bureau believes; from anyone else they are
	// ignored. Default none.
	TrustedProxies string
	// Webhooks (docs/webhooks.md): WebhookRetrySchedule
	// (BUREAU_WEBHOOK_RETRY_SCHEDULE) the delays before each retry,
	// comma-separated durations; WebhookDisableAfter
	// (BUREAU_WEBHOOK_DISABLE_AFTER) how long an endpoint may keep failing
	// before it is disabled; WebhookAllowPrivate
	// (BUREAU_WEBHOOK_ALLOW_PRIVATE) CIDRs webhooks may reach though
	// private or local; WebhookKeepDays (BUREAU_WEBHOOK_KEEP_DAYS) how
	// long finished deliveries are kept. Checked by webhooks.ParseConfig.
	WebhookRetrySchedule, WebhookDisableAfter, WebhookAllowPrivate string
	WebhookKeepDays                                                int
	// AuditRetentionDays (BUREAU_AUDIT_RETENTION_DAYS, default 180; 0
	// keeps them forever) is how long audit log entries are kept
	// (docs/audit.md).
	AuditRetentionDays int
	// OIDC is single sign-on (BUREAU_OIDC_*, docs/sign-in.md), checked by OIDC.Check.
	OIDC OIDC

	// Client side.
	URL   string // BUREAU_URL
	Token string // BUREAU_TOKEN
}

// FromEnv returns the configuration with defaults filled in.
func FromEnv() Config {
	c := Config{
		DataDir:      env("BUREAU_DATA_DIR", "/var/lib/bureau"),
		Listen:       env("BUREAU_LISTEN", "127.0.0.1:8080"),
		DatabaseURL:  os.Getenv("BUREAU_DATABASE_URL"),
		LibvirtURI:   env("BUREAU_LIBVIRT_URI", "qemu:///system"),
		Accelerator:  env("BUREAU_ACCELERATOR", "auto"),
		DefaultImage: env("BUREAU_DEFAULT_IMAGE", "debian-12-desktop"),
		ImageCache:   env("BUREAU_IMAGE_CACHE", "/var/cache/bureau/images"),
		RecipeDir:    env("BUREAU_RECIPE_DIR", "images/desktop"),
		AdminToken:   os.Getenv("BUREAU_ADMIN_TOKEN"),
		LogFormat:    env("BUREAU_LOG_FORMAT", "json"),
		DefaultPlan:  env("BUREAU_DEFAULT_PLAN", "free"),
		URL:          env("BUREAU_URL", "http://127.0.0.1:8080"),
		Token:        os.Getenv("BUREAU_TOKEN"),
		TCGCacheMiB:  envInt("BUREAU_TCG_CACHE_MIB", 256),

		ReconcileSeconds:    envInt("BUREAU_RECONCILE_SECONDS", 60),
		NapAfterSeconds:     envInt("BUREAU_NAP_AFTER_SECONDS", 120),
		SleepAfterSeconds:   envInt("BUREAU_SLEEP_AFTER_SECONDS", 600),
		IdleCheckSeconds:    envInt("BUREAU_IDLE_CHECK_SECONDS", 15),
		HostCheckSeconds:    envInt("BUREAU_HOST_CHECK_SECONDS", 10),
		StepsKeep:           envInt("BUREAU_STEPS_KEEP", 5000),
		StepThumbnails:      env("BUREAU_STEP_THUMBNAILS", "both"),
		RecordingMaxSeconds: envInt("BUREAU_RECORDING_MAX_SECONDS", 3600),
		RecordingsKeepMiB:   envInt("BUREAU_RECORDINGS_KEEP_MIB", 2048),
		LiveFramebuffer:     env("BUREAU_LIVE_FRAMEBUFFER", "on") != "off",
		MemoryLowMiB:        envInt("BUREAU_MEMORY_LOW_MIB", 2048),
		SaveAsIs:            os.Getenv("BUREAU_SAVE_AS_IS") == "1",
		WarmSpares:          envInt("BUREAU_WARM_SPARES", 1),
		Placement:           env("BUREAU_PLACEMENT", "auto"),
		HostAddress:         os.Getenv("BUREAU_HOST_ADDRESS"),
		MemoryRatioPercent:  envInt("BUREAU_MEMORY_RATIO_PERCENT", 150),
		AgentBinary:         os.Getenv("BUREAU_AGENT_BIN"),
		AgentViaStream:      os.Getenv("BUREAU_AGENT_VIA_STREAM") == "1",
		PreviewDomain:       strings.TrimPrefix(strings.ToLower(env("BUREAU_PREVIEW_DOMAIN", "localhost")), "*."),

		NetworkSubnet:      env("BUREAU_NETWORK_SUBNET", "10.120.0.0/16"),
		NetworkOwnerRanges: os.Getenv("BUREAU_NETWORK_OWNER_RANGES"),

		PublicURL:      strings.TrimSuffix(os.Getenv("BUREAU_PUBLIC_URL"), "/"),
		TLS:            env("BUREAU_TLS", "off"),
		TLSCert:        os.Getenv("BUREAU_TLS_CERT"),
		TLSKey:         os.Getenv("BUREAU_TLS_KEY"),
		HTTPListen:     os.Getenv("BUREAU_HTTP_LISTEN"),
		ACMEDirectory:  os.Getenv("BUREAU_ACME_DIRECTORY"),
		ACMEEmail:      os.Getenv("BUREAU_ACME_EMAIL"),
		ACMERoots:      os.Getenv("BUREAU_ACME_ROOTS"),
		TrustedProxies: os.Getenv("BUREAU_TRUSTED_PROXIES"),

		WebhookRetrySchedule: os.Getenv("BUREAU_WEBHOOK_RETRY_SCHEDULE"),
		WebhookDisableAfter:  os.Getenv("BUREAU_WEBHOOK_DISABLE_AFTER"),
		WebhookAllowPrivate:  os.Getenv("BUREAU_WEBHOOK_ALLOW_PRIVATE"),
		WebhookKeepDays:      envInt("BUREAU_WEBHOOK_KEEP_DAYS", 7),

		AuditRetentionDays: envInt("BUREAU_AUDIT_RETENTION_DAYS", 180),
		OIDC: OIDC{Issuer: os.Getenv("BUREAU_OIDC_ISSUER"), ClientID: os.Getenv("BUREAU_OIDC_CLIENT_ID"),
			ClientSecretFile: os.Getenv("BUREAU_OIDC_CLIENT_SECRET_FILE"), OwnerClaim: env("BUREAU_OIDC_OWNER_CLAIM", "email"),
			GroupsClaim: env("BUREAU_OIDC_GROUPS_CLAIM", "groups"), AdminGroups: os.Getenv("BUREAU_OIDC_ADMIN_GROUPS"),
			AllowedGroups: os.Getenv("BUREAU_OIDC_ALLOWED_GROUPS"), Scopes: env("BUREAU_OIDC_SCOPES", "openid email profile groups"),
			SessionHours: env("BUREAU_OIDC_SESSION_HOURS", "12")},
	}
	if c.TLSOn() {
		if os.Getenv("BUREAU_LISTEN") == "" {
			c.Listen = ":443"
		}
		if c.HTTPListen == "" {
			c.HTTPListen = ":80"
		}
	}
	if os.Getenv("BUREAU_URL") == "" && c.PublicURL != "" {
		c.URL = c.PublicURL
	}
	return c
}

// TLSOn says whether bureau serves HTTPS itself.
func (c Config) TLSOn() bool {
	m := strings.ToLower(strings.TrimSpace(c.TLS))
	return m != "" && m != "off"
}

// Public parses PublicURL: nil when unset; an error that says what is
// wrong when it is not a bare http(s)://host[:port] address.
func (c Config) Public() (*url.URL, error) {
	if c.PublicURL == "" {
		return nil, nil
	}
	u, err := url.Parse(c.PublicURL)
	bad := func(why string) error {
		return fmt.Errorf("BUREAU_PUBLIC_URL=%q: %s (want e.g. https://bureau.example.com)", c.PublicURL, why)
	}
	switch {
	case err != nil:
		return nil, bad(err.Error())
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("it needs a scheme, http:// or https://")
	case u.Host == "" || u.Hostname() == "":
		return nil, bad("it names no host")
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, bad("bureau is served at a host's root: no path, query, fragment or user")
	case c.TLSOn() && u.Scheme != "https":
		return nil, bad("BUREAU_TLS is on, so people reach bureau by https://")
	}
	u.Host = strings.ToLower(u.Host)
	return u, nil
}

// Agent is the bureau-agent binary's path.
func (c Config) Agent() string {
	if c.AgentBinary != "" {
		return c.AgentBinary
	}
	exe, err := os.Executable()
	if err != nil {
		return "bureau-agent"
	}
	return filepath.Join(filepath.Dir(exe), "bureau-agent")
}

// Database is the database URL, defaulting to SQLite in the data dir.
func (c Config) Database() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return filepath.Join(c.DataDir, "bureau.db")
}

// ImagesDir holds registered base images.
func (c Config) ImagesDir() string { return filepath.Join(c.DataDir, "images") }

// AdminTokenFile is where the first admin token is saved (mode 0600) so the
// CLI on the same host can use it.
func (c Config) AdminTokenFile() string { return filepath.Join(c.DataDir, "admin-token") }

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}
