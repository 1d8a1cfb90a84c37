package placement

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/hosts"
)

// Source is where the candidates come from: the hosts as the registry
// last saw them, and what bureau's desktops take on each.
type Source interface {
	ListHosts(ctx context.Context) ([]hosts.Host, error)
	HostLoads(ctx context.Context) (map[string]Load, error)
}

// Lister makes placement candidates of the recorded hosts.
type Lister struct {
	Source Source
	// LocalMemory, when set, reads bureau's own host's RAM and what it can
	// still give (MemAvailable) now, in place of its last check's figures
	// (which count page cache as used).
	LocalMemory func() (total, available int64, err error)
}

// Candidates lists every host with its load, the local one first. The
// local host is always up and ready: bureau runs there.
func (l Lister) Candidates(ctx context.Context) ([]Host, error) {
	hs, err := l.Source.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	loads, err := l.Source.HostLoads(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Host, 0, len(hs))
	for _, h := range hs {
		c := Host{Name: h.Name, Up: h.State == hosts.StateUp, Ready: h.Ready, Accelerator: h.Accelerator, Labels: h.Labels,
			MemoryMiB: h.MemoryMiB, AvailableMiB: h.FreeMemoryMiB, FreeDiskMiB: h.FreeDiskMiB, Draining: h.Draining, Load: loads[h.Name]}
		switch {
		case h.Name == hosts.LocalName:
			c.Up, c.Ready = true, true
			if l.LocalMemory != nil {
				if c.MemoryMiB, c.AvailableMiB, err = l.LocalMemory(); err != nil {
					return nil, fmt.Errorf("this host's memory: %w", err)
				}
			}
		case !c.Up:
			c.Why = fmt.Sprintf("%s: %s", h.State, h.LastError)
		case !c.Ready:
			c.Why = h.ReadyError
		}
		out = append(out, c)
	}
	return out, nil
}
