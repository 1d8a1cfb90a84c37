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

// startAudit starts the audit log's writer and pruning. stop ends them
// once what was recorded is written: serve defers it so that it runs
// after the HTTP server has finished its last requests and before the
// store closes.
func startAudit(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (l *audit.Log, stop func(), err error) {
	if cfg.AuditRetentionDays < 0 {
		return nil, nil, fmt.Errorf("BUREAU_AUDIT_RETENTION_DAYS=%d: want 0 (keep forever) or more days", cfg.AuditRetentionDays)
	}
	l = audit.New(st, audit.Config{Retention: time.Duration(cfg.AuditRetentionDays) * 24 * time.Hour}, log.With("part", "audit"))
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(runCtx)
	}()
	return l, func() { cancel(); <-done }, nil
}
