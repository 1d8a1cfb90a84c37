package steps

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Kinds are the kinds of step, in the order they are listed.
var Kinds = []string{KindComputer, KindExec, KindFileWrite, KindFileDelete, KindClipboard}

// Bounds of a checkpoint policy.
const (
	DefaultKeep   = 5
	MaxKeep       = 50
	MaxEverySteps = 100000
)

// CheckpointPolicy is when bureau checkpoints a desktop by itself, just
// before a step: before every EverySteps-th step (0: never by count) and
// before every step of a kind in Before. Memory takes the RAM as well as
// the disks. The newest Keep automatic checkpoints are kept; older ones are
// deleted as new ones are taken (never the caller's own snapshots, nor the
// checkpoints asked for with checkpoint=). The zero policy (after
// Normalize) is off.
type CheckpointPolicy struct {
	EverySteps int      `json:"every_steps"`
	Before     []string `json:"before"`
	Memory     bool     `json:"memory"`
	Keep       int      `json:"keep"`
}

// DefaultCheckpointPolicy is the policy of a desktop that has none: off.
func DefaultCheckpointPolicy() CheckpointPolicy {
	return CheckpointPolicy{Before: []string{}, Keep: DefaultKeep}
}

// Normalize fills in the defaults (keep 5, no kinds) and lists the kinds
// once each, in the order of Kinds.
func (p *CheckpointPolicy) Normalize() {
	if p.Keep == 0 {
		p.Keep = DefaultKeep
	}
	kinds := []string{}
	for _, k := range Kinds {
		if slices.Contains(p.Before, k) {
			kinds = append(kinds, k)
		}
	}
	for _, k := range p.Before {
		if !slices.Contains(Kinds, k) && !slices.Contains(kinds, k) {
			kinds = append(kinds, k) // unknown: left for Validate to name
		}
	}
	p.Before = kinds
}

// Validate checks a policy.
func (p CheckpointPolicy) Validate() error {
	if p.EverySteps < 0 || p.EverySteps > MaxEverySteps {
		return &desktop.ValidationError{Field: "every_steps", Message: fmt.Sprintf("must be 0 (off) to %d", MaxEverySteps)}
	}
	if p.Keep < 1 || p.Keep > MaxKeep {
		return &desktop.ValidationError{Field: "keep", Message: fmt.Sprintf("must be 1 to %d automatic checkpoints", MaxKeep)}
	}
	for _, k := range p.Before {
		if !slices.Contains(Kinds, k) {
			return &desktop.ValidationError{Field: "before",
				Message: fmt.Sprintf("unknown step kind %q: want some of %s", k, strings.Join(Kinds, ", "))}
		}
	}
	return nil
}

// On says the policy takes checkpoints at all.
func (p CheckpointPolicy) On() bool { return p.EverySteps > 0 || len(p.Before) > 0 }

// Automatic checkpoints are named auto-<unix ms> and described as such;
// only snapshots with both are ever pruned.
const (
	autoPrefix      = "auto-"
	autoDescription = "automatic checkpoint"
)

var autoName = regexp.MustCompile(`^auto-[0-9]+$`)

// AutoCheckpoint is the name and description of an automatic checkpoint
// taken at t before a step of kind made by actor.
func AutoCheckpoint(t time.Time, kind, actor string) (name, description string) {
	return fmt.Sprintf("%s%d", autoPrefix, t.UnixMilli()), fmt.Sprintf("%s before a %s step by %s", autoDescription, kind, actor)
}

// IsAutoCheckpoint says a snapshot is one of bureau's automatic
// checkpoints.
func IsAutoCheckpoint(sn *desktop.Snapshot) bool {
	return autoName.MatchString(sn.Name) && strings.HasPrefix(sn.Description, autoDescription)
}

// Surplus are the automatic checkpoints among snaps beyond the newest
// Keep, oldest first: the ones to delete.
func (p CheckpointPolicy) Surplus(snaps []*desktop.Snapshot) []*desktop.Snapshot {
	var auto []*desktop.Snapshot
	for _, sn := range snaps {
		if IsAutoCheckpoint(sn) {
			auto = append(auto, sn)
		}
	}
	slices.SortStableFunc(auto, func(a, b *desktop.Snapshot) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if len(auto) <= p.Keep {
		return nil
	}
	return auto[:len(auto)-p.Keep]
}

// Cadence counts each desktop's steps since its last checkpoint, to say
// which step is due one. The first step after the policy is set (or
// bureau starts) is due, then every EverySteps-th after the last
// checkpoint, whoever asked for it.
type Cadence struct {
	mu    sync.Mutex
	since map[string]int // steps made since the last checkpoint
}

// Due says whether the step of kind about to be made in a desktop gets an
// automatic checkpoint under p, and counts it. asked: the call asked for a
// checkpoint itself, which counts as this step's (it is not taken twice).
// A due step counts as checkpointed: call Missed if it was not.
func (c *Cadence) Due(desktopID, kind string, p CheckpointPolicy, asked bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since == nil {
		c.since = map[string]int{}
	}
	n, seen := c.since[desktopID]
	due := p.On() && !asked && (slices.Contains(p.Before, kind) || p.EverySteps > 0 && (!seen || n+1 >= p.EverySteps))
	if due || asked {
		c.since[desktopID] = 0
	} else {
		c.since[desktopID] = n + 1
	}
	return due
}

// Missed undoes Due's count of a checkpoint that was not taken: the next
// step is due one.
func (c *Cadence) Missed(desktopID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since, desktopID)
}

// Reset forgets a desktop's count (its policy changed, or it was
// deleted): its next step is due a checkpoint.
func (c *Cadence) Reset(desktopID string) { c.Missed(desktopID) }
