package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/bureau/bureau/internal/cloudinit"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/images"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/store"
	"github.com/spf13/cobra"
)

func newLogger(format string) *slog.Logger {
	if format == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, nil))
}

// openStore opens and migrates the database.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.Database())
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx, log); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func imageService(cfg *config.Config, st *store.Store, log *slog.Logger) *images.Service {
	return &images.Service{Dir: cfg.ImagesDir(), CacheDir: cfg.ImageCache, DataDir: cfg.DataDir, Store: st, Log: log}
}

// seedWriter adapts the cloudinit package to the manager's SeedWriter;
// agent is the bureau-agent binary every seed carries (nil: none).
type seedWriter struct{ agent []byte }

func (w seedWriter) WriteSeed(ctx context.Context, path string, s manager.Seed) error {
	instance := s.InstanceID
	if instance == "" {
		instance = s.DesktopID
	}
	return cloudinit.WriteSeed(ctx, path, cloudinit.Config{DesktopID: s.DesktopID, InstanceID: instance,
		Hostname: s.Hostname, User: "agent", SSHKeys: s.SSHKeys, InstallDesktop: s.InstallDesktop, KeyboardLayout: s.KeyboardLayout, Agent: w.agent})
}

// withStore makes a cobra RunE for a command that works on this host's
// database directly: it opens and migrates the store and closes it after.
func withStore(cfg *config.Config, run func(ctx context.Context, st *store.Store, log *slog.Logger, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		log := newLogger("text")
		st, err := openStore(cmd.Context(), cfg, log)
		if err != nil {
			return err
		}
		defer st.Close()
		return run(cmd.Context(), st, log, args)
	}
}

func migrateCmd(cfg *config.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database schema",
		RunE: withStore(cfg, func(_ context.Context, st *store.Store, _ *slog.Logger, _ []string) error {
			fmt.Printf("database %s (%s) is up to date\n", cfg.Database(), st.Dialect())
			return nil
		}),
	}
}
