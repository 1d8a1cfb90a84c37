package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/steps"
	"github.com/gin-gonic/gin"
)

// checkpointWait is how long a checkpoint waits for another operation on
// its desktop (a snapshot, a revert, a wake) to end before it gives up.
const checkpointWait = time.Minute

// checkpointLocks takes one desktop's automatic checkpoints one at a time
// (each with the pruning after it).
type checkpointLocks struct{ m sync.Map }

func (l *checkpointLocks) of(id string) *sync.Mutex {
	mu, _ := l.m.LoadOrStore(id, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

type checkpointPolicyRequest struct {
	EverySteps *int     `json:"every_steps"`
	Before     []string `json:"before"`
	Memory     *bool    `json:"memory"`
	Keep       *int     `json:"keep"`
}

// getCheckpointPolicy answers a desktop's automatic checkpoint policy.
func (s *stepHandlers) getCheckpointPolicy(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if s.steps == nil {
		return reply{}, errNoSteps
	}
	p, err := s.steps.CheckpointPolicy(c.Request.Context(), d.ID)
	return reply{http.StatusOK, p}, err
}

// putCheckpointPolicy sets a desktop's automatic checkpoint policy whole:
// what the request leaves out takes its default (off, keep 5).
func (s *stepHandlers) putCheckpointPolicy(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if s.steps == nil {
		return reply{}, errNoSteps
	}
	var req checkpointPolicyRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	p := steps.DefaultCheckpointPolicy()
	if req.EverySteps != nil {
		p.EverySteps = *req.EverySteps
	}
	if req.Before != nil {
		p.Before = req.Before
	}
	if req.Memory != nil {
		p.Memory = *req.Memory
	}
	if req.Keep != nil {
		p.Keep = *req.Keep
		if p.Keep == 0 {
			return reply{}, &desktop.ValidationError{Field: "keep", Message: fmt.Sprintf("must be 1 to %d automatic checkpoints", steps.MaxKeep)}
		}
	}
	p, err = s.steps.SetCheckpointPolicy(c.Request.Context(), d.ID, p)
	if err != nil {
		return reply{}, err
	}
	s.log.Info("checkpoint policy set", "desktop", d.ID, "actor", actor(c), "every_steps", p.EverySteps, "before", p.Before,
		"memory", p.Memory, "keep", p.Keep)
	return reply{http.StatusOK, p}, nil
}

// checkpoint takes the snapshot a step gets just before its call runs: the
// one the call asked for with checkpoint=true (its disks) or
// checkpoint=memory (and its RAM, so running programs come back too), or
// else the one the desktop's checkpoint policy is due. It answers the
// snapshot's name ("" when none), or why the automatic checkpoint due was
// not taken: that one's failure does not fail the call, which goes on
// without it. A checkpoint the call asked for that fails fails the call.
func (s *stepRecorder) checkpoint(c *gin.Context, d *desktop.Desktop, kind string) (name, missed string, err error) {
	asked, memory, err := checkpointQuery(c)
	if err != nil {
		return "", "", err
	}
	if !asked && d.State != desktop.StateRunning && !d.State.Wakeable() {
		return "", "", nil // the call cannot change the desktop: nothing to undo
	}
	ctx := c.Request.Context()
	p, err := s.steps.CheckpointPolicy(ctx, d.ID)
	if err != nil {
		s.log.Warn("reading the checkpoint policy", "desktop", d.ID, "err", err)
		p = steps.DefaultCheckpointPolicy()
	}
	if !s.steps.CheckpointDue(d.ID, kind, p, asked) {
		if !asked {
			return "", "", nil
		}
		name := fmt.Sprintf("checkpoint-%d", time.Now().UnixMilli())
		err := s.snapshotBefore(c, d, manager.SnapshotRequest{Name: name, Description: "before a " + kind + " step by " + actor(c), Memory: &memory})
		if err != nil {
			s.steps.CheckpointMissed(d.ID)
			return "", "", fmt.Errorf("the checkpoint asked for before this call: %w", err)
		}
		return name, "", nil
	}
	name, err = s.autoCheckpoint(c, d, kind, p)
	if err != nil {
		s.steps.CheckpointMissed(d.ID)
		s.log.Warn("automatic checkpoint not taken; the call goes on without it", "desktop", d.ID, "kind", kind, "err", err)
		return "", s.textForCaller(c, "the automatic checkpoint due before this step was not taken: "+err.Error()), nil
	}
	return name, "", nil
}

// checkpointQuery reads checkpoint=: whether the call asks for one, and
// with the RAM.
func checkpointQuery(c *gin.Context) (asked, memory bool, err error) {
	switch c.Query("checkpoint") {
	case "", "false":
		return false, false, nil
	case "true", "disk":
		return true, false, nil
	case "memory":
		return true, true, nil
	}
	return false, false, &desktop.ValidationError{Field: "checkpoint", Message: "must be true (the disks), memory (the disks and RAM) or false"}
}

// autoCheckpoint takes an automatic checkpoint (auto-<unix ms>) under p,
// then deletes the automatic checkpoints beyond p.Keep, oldest first.
func (s *stepRecorder) autoCheckpoint(c *gin.Context, d *desktop.Desktop, kind string, p steps.CheckpointPolicy) (string, error) {
	mu := s.checkpoints.of(d.ID)
	mu.Lock()
	defer mu.Unlock()
	ctx := c.Request.Context()
	name, description := steps.AutoCheckpoint(time.Now(), kind, actor(c))
	memory := p.Memory && d.State != desktop.StateStopped // a stopped desktop has no RAM to keep
	if err := s.snapshotBefore(c, d, manager.SnapshotRequest{Name: name, Description: description, Memory: &memory}); err != nil {
		return "", err
	}
	s.pruneCheckpoints(ctx, d.ID, p, actor(c))
	return name, nil
}

// snapshotBefore takes a step's checkpoint, waiting for another operation
// on the desktop to end. A hibernated desktop is woken first: the call
// would wake it anyway.
func (s *stepRecorder) snapshotBefore(c *gin.Context, d *desktop.Desktop, req manager.SnapshotRequest) error {
	ctx := c.Request.Context()
	if d.State == desktop.StateHibernated {
		if _, err := s.lifecycle.Wake(ctx, d.ID, actor(c)); err != nil {
			return err
		}
	}
	req.Actor, req.Unlimited, req.Wait = actor(c), isAdmin(c), checkpointWait
	_, err := s.snapshots.CreateSnapshot(ctx, d.ID, req)
	return err
}

// pruneCheckpoints deletes a desktop's automatic checkpoints beyond the
// newest p.Keep. One that cannot be deleted now is left for the next time.
func (s *stepRecorder) pruneCheckpoints(ctx context.Context, desktopID string, p steps.CheckpointPolicy, actor string) {
	snaps, err := s.snapshots.ListSnapshots(ctx, desktopID)
	if err != nil {
		s.log.Warn("listing snapshots to prune automatic checkpoints", "desktop", desktopID, "err", err)
		return
	}
	for _, sn := range p.Surplus(snaps) {
		if err := s.snapshots.DeleteSnapshot(ctx, desktopID, sn.Name, actor); err != nil {
			s.log.Warn("pruning an automatic checkpoint", "desktop", desktopID, "snapshot", sn.Name, "err", err)
			return
		}
	}
}
