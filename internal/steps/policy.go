package steps

import "context"

// CheckpointPolicy is a desktop's checkpoint policy.
func (l *Log) CheckpointPolicy(ctx context.Context, desktopID string) (CheckpointPolicy, error) {
	p, err := l.store.CheckpointPolicy(ctx, desktopID)
	if err != nil {
		return CheckpointPolicy{}, err
	}
	p.Normalize()
	return p, nil
}

// SetCheckpointPolicy checks and sets a desktop's checkpoint policy and
// answers it as kept. The desktop's next step is due a checkpoint when the
// policy counts steps.
func (l *Log) SetCheckpointPolicy(ctx context.Context, desktopID string, p CheckpointPolicy) (CheckpointPolicy, error) {
	p.Normalize()
	if err := p.Validate(); err != nil {
		return CheckpointPolicy{}, err
	}
	if err := l.store.SetCheckpointPolicy(ctx, desktopID, p); err != nil {
		return CheckpointPolicy{}, err
	}
	l.cadence.Reset(desktopID)
	return p, nil
}

// CheckpointDue says whether the step of kind about to be made in a
// desktop gets an automatic checkpoint under p (see Cadence.Due).
func (l *Log) CheckpointDue(desktopID, kind string, p CheckpointPolicy, asked bool) bool {
	return l.cadence.Due(desktopID, kind, p, asked)
}

// CheckpointMissed: the checkpoint CheckpointDue asked for was not taken;
// the next step is due one.
func (l *Log) CheckpointMissed(desktopID string) { l.cadence.Missed(desktopID) }
