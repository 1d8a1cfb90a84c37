package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Store keeps the hosts.
type Store interface {
	ListHosts(ctx context.Context) ([]Host, error)
	GetHost(ctx context.Context, name string) (*Host, error)
	// InsertHost fails with ErrExists when the name or URI is taken.
	InsertHost(ctx context.Context, h *Host) error
	DeleteHost(ctx context.Context, name string) error
	// UpdateHostHealth records a check: state, facts (when up), error.
	UpdateHostHealth(ctx context.Context, h *Host) error
}

// Link is a kept connection to one host's libvirtd.
type Link interface {
	// Facts asks the host what it has; it fails once the connection is
	// lost (keepalive or a closed socket).
	Facts(ctx context.Context) (Facts, error)
	Close() error
}

// Preparer makes a remote host ready for desktops once its libvirt link
// is up: it reaches the host over SSH and puts bureau's desktop network
// and firewall in place. It is called again after every reconnect and
// while the host is not ready; it must be idempotent.
type Preparer interface {
	Prepare(ctx context.Context, h *Host, link Link) error
	// Forget drops what it keeps for a removed host.
	Forget(name string)
}

// Dialer connects to a libvirt URI.
type Dialer func(ctx context.Context, uri string) (Link, error)

// Registry records hosts and watches their connections.
type Registry struct {
	store Store
	dial  Dialer
	log   *slog.Logger
	// Single is set on a database that serves one host (SQLite).
	Single bool
	// Local is the host bureau runs on and its accelerator as chosen at
	// start-up (the CPU's flags and /dev/kvm, which a remote check cannot
	// see).
	LocalURI, LocalAccelerator string
	// Prep readies remote hosts (nil: they are only watched).
	Prep Preparer
	// Desktops, when set, counts the desktops a host runs: a host with
	// desktops is not removed.
	Desktops func(ctx context.Context, host string) (int, error)
	// OnRemove, when set, is told of a removed host.
	OnRemove func(name string)
	// DefaultNetwork is a remote host's desktop network when its request
	// names none (the local host's).
	DefaultNetwork Network
	// Every is how often each host is checked (0 = 10 s); DialTimeout
	// bounds a connect and a check (0 = 15 s).
	Every, DialTimeout time.Duration

	mu    sync.Mutex
	links map[string]*watched
}

type watched struct {
	uri  string
	link Link
	// ready: the Preparer succeeded over this link.
	ready bool
}

// NewRegistry makes a registry over store, connecting with dial.
func NewRegistry(store Store, dial Dialer, log *slog.Logger) *Registry {
	return &Registry{store: store, dial: dial, log: log, links: map[string]*watched{}}
}

// List returns every host, the local one first.
func (r *Registry) List(ctx context.Context) ([]Host, error) { return r.store.ListHosts(ctx) }

// Get returns one host.
func (r *Registry) Get(ctx context.Context, name string) (*Host, error) {
	return r.store.GetHost(ctx, name)
}

// Add records a host once its libvirtd has answered and, with a Preparer,
// once it is ready for desktops; a host that does not answer is not added
// (ErrUnreachable, with libvirt's reason), nor one that cannot be made
// ready (the Preparer's reason).
func (r *Registry) Add(ctx context.Context, req AddRequest) (*Host, error) {
	if err := ValidateRequest(req); err != nil {
		return nil, err
	}
	name, uri := req.Name, req.URI
	hs, err := r.store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	// Both refused before connecting: a second host cannot work on
	// SQLite, and a second link to a host is no use.
	if r.Single && len(hs) > 0 {
		return nil, r.needsPostgres()
	}
	for _, h := range hs {
		if h.Name == name || h.URI == uri {
			return nil, fmt.Errorf("host %s (%s): %w as %s", name, uri, ErrExists, h.Name)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.dialTimeout())
	defer cancel()
	link, err := r.dial(cctx, uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, uri, err)
	}
	facts, err := link.Facts(cctx)
	if err != nil {
		link.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, uri, err)
	}
	now := time.Now().UTC()
	h := &Host{Name: name, URI: uri, Labels: req.Labels, State: StateUp, Facts: facts, SSH: req.SSH, Network: req.Network,
		LastSeenAt: &now, CreatedAt: now}
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	if h.SSH.Address == "" {
		h.SSH.Address = SSHAddressOf(uri)
	}
	if h.Network.Bridge == "" {
		h.Network.Bridge = r.DefaultNetwork.Bridge
	}
	if h.Network.Subnet == "" {
		h.Network.Subnet = r.DefaultNetwork.Subnet
	}
	if r.Prep != nil {
		if err := r.Prep.Prepare(cctx, h, link); err != nil {
			link.Close()
			r.Prep.Forget(name)
			return nil, err
		}
		h.Ready = true
	}
	if err := r.store.InsertHost(ctx, h); err != nil {
		link.Close()
		if r.Prep != nil {
			r.Prep.Forget(name)
		}
		return nil, err
	}
	r.mu.Lock()
	r.links[name] = &watched{uri: uri, link: link, ready: h.Ready}
	r.mu.Unlock()
	r.log.Info("host added", "host", name, "uri", uri, "accelerator", facts.Accelerator, "cpus", facts.CPUs, "memory_mib", facts.MemoryMiB,
		"ready", h.Ready, "bridge", h.Network.Bridge, "subnet", h.Network.Subnet)
	return h, nil
}

func (r *Registry) needsPostgres() error {
	return fmt.Errorf("%w: this bureau keeps its records in SQLite, which serves one host; run it on PostgreSQL (BUREAU_DATABASE_URL=postgres://…) to add more", ErrNeedsPostgres)
}

// Remove forgets a host. The local host runs bureau's desktops and stays.
func (r *Registry) Remove(ctx context.Context, name string) error {
	if name == LocalName {
		return fmt.Errorf("%w: the local host is the one bureau runs on; it cannot be removed", ErrInUse)
	}
	if r.Desktops != nil {
		if n, err := r.Desktops(ctx, name); err != nil {
			return err
		} else if n > 0 {
			return fmt.Errorf("%w: host %s runs %d desktops (their disks are there): delete them first", ErrInUse, name, n)
		}
	}
	if err := r.store.DeleteHost(ctx, name); err != nil {
		return err
	}
	r.drop(name)
	if r.Prep != nil {
		r.Prep.Forget(name)
	}
	if r.OnRemove != nil {
		r.OnRemove(name)
	}
	r.log.Info("host removed", "host", name)
	return nil
}

func (r *Registry) drop(name string) {
	r.mu.Lock()
	w := r.links[name]
	delete(r.links, name)
	r.mu.Unlock()
	if w != nil && w.link != nil {
		w.link.Close()
	}
}

// EnsureLocal records the local host on first start, and again when
// bureau's libvirt URI changed.
func (r *Registry) EnsureLocal(ctx context.Context) error {
	if h, err := r.store.GetHost(ctx, LocalName); err == nil && h.URI == r.LocalURI {
		return nil
	} else if err == nil {
		if err := r.store.DeleteHost(ctx, LocalName); err != nil {
			return fmt.Errorf("recording the local host's new URI: %w", err)
		}
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	h := &Host{Name: LocalName, URI: r.LocalURI, Labels: map[string]string{}, State: StateConnecting,
		Facts: Facts{Accelerator: r.LocalAccelerator}, CreatedAt: time.Now().UTC()}
	if err := r.store.InsertHost(ctx, h); err != nil && !errors.Is(err, ErrExists) {
		return fmt.Errorf("recording the local host: %w", err)
	}
	return nil
}

// Run checks every host now and then until ctx ends.
func (r *Registry) Run(ctx context.Context) {
	every := r.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	defer r.closeAll()
	for {
		r.CheckAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Registry) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, w := range r.links {
		if w.link != nil {
			w.link.Close()
		}
		delete(r.links, name)
	}
}

// CheckAll checks every host at once and records what each said.
func (r *Registry) CheckAll(ctx context.Context) {
	hs, err := r.store.ListHosts(ctx)
	if err != nil {
		r.log.Warn("hosts not checked", "err", err)
		return
	}
	known := map[string]bool{}
	var wg sync.WaitGroup
	for i := range hs {
		known[hs[i].Name] = true
		wg.Add(1)
		go func(h *Host) {
			defer wg.Done()
			r.check(ctx, h)
		}(&hs[i])
	}
	wg.Wait()
	r.mu.Lock()
	var gone []string
	for name := range r.links {
		if !known[name] {
			gone = append(gone, name)
		}
	}
	r.mu.Unlock()
	for _, name := range gone {
		r.drop(name)
	}
}

// check asks one host for its facts over its kept link, connecting again
// when there is none (or its URI changed), and records the answer. A
// failed check drops the link: the next one reconnects.
func (r *Registry) check(ctx context.Context, h *Host) {
	cctx, cancel := context.WithTimeout(ctx, r.dialTimeout())
	defer cancel()
	facts, err := r.facts(cctx, h)
	if ctx.Err() != nil {
		return
	}
	was := h.State
	if err != nil {
		h.State, h.LastError = StateUnreachable, err.Error()
	} else {
		now := time.Now().UTC()
		if h.Name == LocalName && r.LocalAccelerator != "" {
			facts.Accelerator = r.LocalAccelerator
		}
		h.State, h.Facts, h.LastError, h.LastSeenAt = StateUp, facts, "", &now
		r.prepare(cctx, h)
	}
	if h.State != was {
		r.log.Info("host "+string(h.State), "host", h.Name, "uri", h.URI, "was", was, "err", h.LastError)
	}
	if err := r.store.UpdateHostHealth(ctx, h); err != nil && !errors.Is(err, ErrNotFound) {
		r.log.Warn("host check not recorded", "host", h.Name, "err", err)
	}
}

// prepare readies a remote host over a link that has not readied it yet
// (a new one, or after a failure), and records whether that worked.
func (r *Registry) prepare(ctx context.Context, h *Host) {
	if r.Prep == nil || h.Name == LocalName {
		h.Ready, h.ReadyError = h.Name == LocalName, ""
		return
	}
	r.mu.Lock()
	w := r.links[h.Name]
	r.mu.Unlock()
	if w == nil {
		return
	}
	if w.ready {
		h.Ready, h.ReadyError = true, ""
		return
	}
	err := r.Prep.Prepare(ctx, h, w.link)
	if err != nil {
		if h.Ready || h.ReadyError != err.Error() {
			r.log.Warn("host not ready for desktops", "host", h.Name, "err", err)
		}
		h.Ready, h.ReadyError = false, err.Error()
		return
	}
	if !h.Ready {
		r.log.Info("host ready for desktops", "host", h.Name)
	}
	h.Ready, h.ReadyError = true, ""
	r.mu.Lock()
	if r.links[h.Name] == w {
		w.ready = true
	}
	r.mu.Unlock()
}

func (r *Registry) facts(ctx context.Context, h *Host) (Facts, error) {
	r.mu.Lock()
	w := r.links[h.Name]
	r.mu.Unlock()
	if w == nil || w.uri != h.URI {
		if w != nil {
			r.drop(h.Name)
		}
		link, err := r.dial(ctx, h.URI)
		if err != nil {
			return Facts{}, err
		}
		w = &watched{uri: h.URI, link: link}
		r.mu.Lock()
		if old := r.links[h.Name]; old != nil && old.link != nil {
			old.link.Close()
		}
		r.links[h.Name] = w
		r.mu.Unlock()
	}
	facts, err := w.link.Facts(ctx)
	if err != nil {
		r.mu.Lock()
		if r.links[h.Name] == w {
			delete(r.links, h.Name)
		}
		r.mu.Unlock()
		w.link.Close()
		return Facts{}, err
	}
	return facts, nil
}

func (r *Registry) dialTimeout() time.Duration {
	if r.DialTimeout > 0 {
		return r.DialTimeout
	}
	return 15 * time.Second
}
