package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bureau/bureau/internal/steps"
)

// CheckpointPolicies keeps desktops' automatic checkpoint policies.
type CheckpointPolicies struct{ *conn }

// CheckpointPolicy returns a desktop's automatic checkpoint policy (the
// default, off, when none was set).
func (s *CheckpointPolicies) CheckpointPolicy(ctx context.Context, desktopID string) (steps.CheckpointPolicy, error) {
	p := steps.DefaultCheckpointPolicy()
	var before string
	err := s.queryRow(ctx, `SELECT every_steps, before_kinds, memory, keep FROM checkpoint_policies WHERE desktop_id=?`, desktopID).
		Scan(&p.EverySteps, &before, &p.Memory, &p.Keep)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("checkpoint policy: %w", err)
	}
	if before != "" {
		p.Before = strings.Split(before, ",")
	}
	return p, nil
}

// SetCheckpointPolicy creates or replaces a desktop's checkpoint policy.
func (s *CheckpointPolicies) SetCheckpointPolicy(ctx context.Context, desktopID string, p steps.CheckpointPolicy) error {
	_, err := s.exec(ctx, `INSERT INTO checkpoint_policies (desktop_id, every_steps, before_kinds, memory, keep, updated_at) VALUES (?,?,?,?,?,?)
ON CONFLICT (desktop_id) DO UPDATE SET every_steps=excluded.every_steps, before_kinds=excluded.before_kinds, memory=excluded.memory, keep=excluded.keep, updated_at=excluded.updated_at`,
		desktopID, p.EverySteps, strings.Join(p.Before, ","), p.Memory, p.Keep, millis(time.Now()))
	if err != nil {
		return fmt.Errorf("set checkpoint policy: %w", err)
	}
	return nil
}

// DeleteCheckpointPolicy forgets a desktop's checkpoint policy.
func (s *CheckpointPolicies) DeleteCheckpointPolicy(ctx context.Context, desktopID string) error {
	if _, err := s.exec(ctx, `DELETE FROM checkpoint_policies WHERE desktop_id=?`, desktopID); err != nil {
		return fmt.Errorf("delete checkpoint policy: %w", err)
	}
	return nil
}
