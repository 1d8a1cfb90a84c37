package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// Settings changes a desktop's settings (PATCH).
type Settings interface {
	SetIdleTiers(ctx context.Context, id string, t manager.IdleTiers, actor string) (*desktop.Desktop, error)
	SetRestartOnCrash(ctx context.Context, id string, on bool, actor string) (*desktop.Desktop, error)
	SetKeyboardLayout(ctx context.Context, id, layout, actor string) (*desktop.Desktop, error)
	SetNetworkPolicy(ctx context.Context, id string, p desktop.NetworkPolicy, actor string) (*desktop.Desktop, error)
}

type updateDesktopRequest struct {
	IdleTimeout    *int                 `json:"idle_timeout_seconds"`
	NapAfter       *int                 `json:"nap_after_seconds"`
	SleepAfter     *int                 `json:"sleep_after_seconds"`
	RestartOnCrash *bool                `json:"restart_on_crash"`
	Network        *apiv1.NetworkPolicy `json:"network"`
	KeyboardLayout *string              `json:"keyboard_layout"`
}

// policies says whether the request changes one of the desktop's
// policies (anything but the keyboard layout).
func (r updateDesktopRequest) policies() bool {
	return r.IdleTimeout != nil || r.NapAfter != nil || r.SleepAfter != nil || r.RestartOnCrash != nil || r.Network != nil
}

// mayOpen refuses a non-admin's network policy that opens private or
// reserved ranges beyond the install's OwnerOpenable (kept: entries the
// desktop's policy has already, which an admin opened).
func (s *desktopHandlers) mayOpen(c *gin.Context, p desktop.NetworkPolicy, kept []string) error {
	if isAdmin(c) {
		return nil
	}
	if bad := p.ReservedOpens(s.ownerOpenable, kept); len(bad) > 0 {
		return fmt.Errorf("network.allow_out: %s opens private or reserved addresses (the host's LAN, other networks, cloud metadata); "+
			"only an admin may open them (owners may open BUREAU_NETWORK_OWNER_RANGES): %w", strings.Join(bad, ", "), desktop.ErrForbidden)
	}
	return nil
}

// updateDesktop changes a desktop's settings (PATCH): idle tiers,
// restart policy, network policy, keyboard layout (running desktops). The request is checked whole before any
// of it is applied.
func (s *desktopHandlers) updateDesktop(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	var req updateDesktopRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if caller(c).Scope == desktop.ScopeDesktop && req.policies() {
		// An agent holding its desktop's token must not loosen the rules
		// it runs under (what it reaches, when it sleeps, how it restarts).
		return reply{}, fmt.Errorf("a desktop token may change only keyboard_layout; network, idle and restart policies are its owner's: %w", desktop.ErrForbidden)
	}
	tiers := manager.IdleTiers{NapAfter: req.NapAfter, SleepAfter: req.SleepAfter, HibernateAfter: req.IdleTimeout}
	if tiers != (manager.IdleTiers{}) {
		if err := tiers.Check(*d); err != nil {
			return reply{}, err
		}
	}
	if req.KeyboardLayout != nil {
		if err := desktop.ValidateKeyboardLayout(*req.KeyboardLayout); err != nil {
			return reply{}, err
		}
		if *req.KeyboardLayout != d.KeyboardLayout && d.State != desktop.StateRunning {
			return reply{}, &desktop.TransitionError{Op: "change the keyboard layout of", State: d.State}
		}
	}
	if req.Network != nil {
		policy := req.Network.ToNetworkPolicy()
		if err := policy.Validate(); err != nil {
			return reply{}, err
		}
		if err := s.mayOpen(c, policy, d.Network.AllowOut); err != nil {
			return reply{}, err
		}
		if d, err = s.settings.SetNetworkPolicy(c.Request.Context(), d.ID, policy, actor(c)); err != nil {
			return reply{}, err
		}
	}
	if tiers != (manager.IdleTiers{}) {
		if d, err = s.settings.SetIdleTiers(c.Request.Context(), d.ID, tiers, actor(c)); err != nil {
			return reply{}, err
		}
	}
	if req.RestartOnCrash != nil {
		if d, err = s.settings.SetRestartOnCrash(c.Request.Context(), d.ID, *req.RestartOnCrash, actor(c)); err != nil {
			return reply{}, err
		}
	}
	if req.KeyboardLayout != nil && *req.KeyboardLayout != d.KeyboardLayout {
		if d, err = s.settings.SetKeyboardLayout(c.Request.Context(), d.ID, *req.KeyboardLayout, actor(c)); err != nil {
			return reply{}, err
		}
		// Typing maps characters to keys for the new layout at once.
		s.computer.Forget(d.DomainName())
	}
	return reply{http.StatusOK, d}, nil
}
