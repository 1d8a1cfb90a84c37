package main

import (
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/framebuffer"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/metrics"
)

// framebufferIdle is how long bureau keeps a desktop's live framebuffer
// after the last screenshot of it.
const framebufferIdle = time.Minute

// screenForgetter drops what bureau holds of a desktop's screen when the
// desktop leaves the running state (its display pauses or goes away).
type screenForgetter interface{ Forget(domain string) }

type keepNoScreens struct{}

func (keepNoScreens) Forget(string) {}

// liveScreens is where screenshots come from: live framebuffers of the
// desktops being looked at (BUREAU_LIVE_FRAMEBUFFER, on by default), each
// falling back to the hypervisor's screen dump, or the dump alone.
func liveScreens(cfg config.Config, m *manager.Manager, h *hv.Hypervisor, met *metrics.Metrics, log *slog.Logger) (computer.Screen, screenForgetter, func()) {
	if !cfg.LiveFramebuffer {
		log.Info("live framebuffers off: every screenshot is a screen dump")
		return h, keepNoScreens{}, func() {}
	}
	k := framebuffer.NewKeeper(m.DialDisplay, h, framebufferIdle, log)
	met.CountFramebuffers(k.Count)
	return k, k, k.Close
}

// newComputer drives desktops' input through the hypervisor and reads
// their screens from screens; a "display" screenshot asks the hypervisor.
func newComputer(h *hv.Hypervisor, screens computer.Screen) *computer.Computer {
	c := computer.New(h, screens, h)
	c.Display = h
	return c
}

// A live framebuffer is what settles screenshots and verifies actions; the
// Computer finds it by this interface, so it must stay one.
var _ computer.LiveScreen = (*framebuffer.Keeper)(nil)
