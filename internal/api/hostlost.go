package api

import (
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/hosts"
)

// hostLost says, for one response, why a remote host of a desktop does
// not answer ("" when it does), asking the hosts registry once per host.
func (s *core) hostLost(ctx context.Context) func(host string) string {
	if s.hosts == nil {
		return nil
	}
	seen := map[string]string{}
	return func(name string) string {
		if why, ok := seen[name]; ok {
			return why
		}
		why := ""
		if h, err := s.hosts.Get(ctx, name); err == nil && h.State == hosts.StateUnreachable {
			since := "never answered"
			if h.LastSeenAt != nil {
				since = "last answered " + h.LastSeenAt.Format(time.RFC3339)
			}
			why = fmt.Sprintf("its host %s does not answer (%s; %s): bureau leaves the desktop as it was until the host answers", name, since, h.LastError)
		}
		seen[name] = why
		return why
	}
}
