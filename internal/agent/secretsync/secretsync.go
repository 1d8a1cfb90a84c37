// Package secretsync hands each desktop's bureau-agent the secret values
// its services name. The agent holds them in memory only, so bureau hands
// them over whenever a desktop's agent (re)connects — after a boot, a
// restore or the agent's own restart — and whenever a secret changes.
package secretsync

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Agents hands a desktop's agent the secrets its services name.
type Agents interface {
	SyncSecrets(ctx context.Context, domain string, resolve func(names []string) map[string]string) ([]string, error)
}

// Desktops finds desktops.
type Desktops interface {
	Get(ctx context.Context, id string) (*desktop.Desktop, error)
	List(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
}

// Secrets looks secret values up for a desktop on its own: the names come
// from its agent (the guest), so owner secrets only where their owner
// allowed them on it.
type Secrets interface {
	ResolveForDesktop(ctx context.Context, owner, desktopID string, names []string) (map[string]string, error)
}

// SecretSync hands secrets to desktops' agents.
type SecretSync struct {
	Agents   Agents
	Desktops Desktops
	Secrets  Secrets
	Log      *slog.Logger
	// Retry and Within pace Booted's attempts (defaults 5 s and 15 min).
	Retry, Within time.Duration

	mu      sync.Mutex
	waiting map[string]bool
}

// Sync hands a desktop's agent its services' secrets now.
func (s *SecretSync) Sync(ctx context.Context, domain string) error {
	id, ok := desktop.IDOfDomain(domain)
	if !ok {
		return nil
	}
	d, err := s.Desktops.Get(ctx, id)
	if err != nil {
		return err
	}
	sent, err := s.Agents.SyncSecrets(ctx, domain, func(names []string) map[string]string {
		out := map[string]string{}
		for _, n := range names {
			// One at a time: a name no longer set is left out (its service
			// waits for it) without keeping the others back.
			if v, err := s.Secrets.ResolveForDesktop(ctx, d.Owner, d.ID, []string{n}); err == nil {
				out[n] = v[n]
			}
		}
		return out
	})
	if err == nil && len(sent) > 0 {
		s.Log.Info("secrets handed to the desktop's agent", "desktop", d.ID, "names", sent)
	}
	return err
}

// Booted keeps trying Sync until the desktop's agent answers (it starts a
// little after the VM does): services that name secrets wait until then.
func (s *SecretSync) Booted(ctx context.Context, domain string) {
	s.mu.Lock()
	if s.waiting == nil {
		s.waiting = map[string]bool{}
	}
	if s.waiting[domain] {
		s.mu.Unlock()
		return
	}
	s.waiting[domain] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, domain)
		s.mu.Unlock()
	}()
	retry, within := s.Retry, s.Within
	if retry == 0 {
		retry = 5 * time.Second
	}
	if within == 0 {
		within = 15 * time.Minute
	}
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := s.Sync(cctx, domain)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// Changed hands the new values to every running desktop that may use a
// secret of owner (desktopID "": any of theirs).
func (s *SecretSync) Changed(ctx context.Context, owner, desktopID string) {
	list, err := s.Desktops.List(ctx, desktop.Filter{Owner: owner})
	if err != nil {
		s.Log.Warn("secret sync", "owner", owner, "err", err)
		return
	}
	for _, d := range list {
		if d.State != desktop.StateRunning || desktopID != "" && d.ID != desktopID {
			continue
		}
		if err := s.Sync(ctx, d.DomainName()); err != nil {
			s.Log.Info("secret sync: the desktop's agent did not take the new values; it gets them when it next connects", "desktop", d.ID, "err", err)
		}
	}
}
