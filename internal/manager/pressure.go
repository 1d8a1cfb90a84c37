package manager

import (
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// HostMemory reads how much memory the host can still give.
type HostMemory interface {
	AvailableMemoryMiB() (int, error)
}

// candidate is a desktop the idle monitor watches, as it was at a check.
type candidate struct {
	d     *desktop.Desktop
	cur   tier
	quiet time.Duration
	since time.Time
	// noSleep: its last sleep could not push memory out.
	noSleep bool
}

// pressureQuiet is how long a running desktop must be unused before
// memory pressure may put it to sleep: one in use is never frozen.
const pressureQuiet = time.Minute

// relieve moves the longest-idle desktop one tier down that frees memory
// when the host runs short: running or napping → sleeping (hibernated if
// it cannot sleep), sleeping → hibernated. One desktop per check, so the
// next check sees what that freed. Nothing is ever stopped or killed, and
// a desktop with a console viewer or used within a minute is left alone.
func (i *idler) relieve(cands []candidate) {
	if i.memory == nil || i.lowMiB <= 0 {
		return
	}
	avail, err := i.memory.AvailableMemoryMiB()
	if err != nil || avail >= i.lowMiB || i.spares.relieve(avail) {
		return
	}
	var pick *candidate
	for k := range cands {
		c := &cands[k]
		if c.cur == tierAwake && c.quiet < pressureQuiet {
			continue
		}
		if pick == nil || c.quiet > pick.quiet {
			pick = c
		}
	}
	if pick == nil {
		i.log.Warn("host memory low and every desktop is in use: nothing to move down", "available_mib", avail)
		return
	}
	due := tierSleep
	if pick.cur == tierSleep || pick.noSleep {
		due = tierHibernate
	}
	why := fmt.Sprintf("host memory low (%d MiB available, under %d MiB): the longest-idle desktop, quiet for %s, goes %s",
		avail, i.lowMiB, pick.quiet.Round(time.Second), tierNames[due])
	i.lowerFor(pick.d, pick.cur, due, pick.since, "pressure", why)
}

// keepsMargin says whether the host keeps its low-memory margin
// (Config.MemoryLowMiB) with memMiB more of it resident; true when host
// memory is not read.
func (i *idler) keepsMargin(memMiB int) bool {
	if i.memory == nil {
		return true
	}
	avail, err := i.memory.AvailableMemoryMiB()
	return err == nil && avail-memMiB >= max(i.lowMiB, 0)
}
