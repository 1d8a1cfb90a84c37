package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/audit"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/store"
)

// startAudit starts the audit log's writer and pruning until ctx ends.
func startAudit(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (*audit.Log, error) {
	if cfg.AuditRetentionDays < 0 {
		return nil, fmt.Errorf("BUREAU_AUDIT_RETENTION_DAYS=%d: want 0 (keep forever) or more days", cfg.AuditRetentionDays)
	}
	l := audit.New(st, audit.Config{Retention: time.Duration(cfg.AuditRetentionDays) * 24 * time.Hour}, log.With("part", "audit"))
	go l.Run(ctx)
	return l, nil
}
