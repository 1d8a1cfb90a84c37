package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/store"
)

// watchHosts records the local host and keeps checking every host's
// libvirtd until ctx ends.
func watchHosts(ctx context.Context, cfg *config.Config, st *store.Store, accel desktop.Accelerator, log *slog.Logger) (*hosts.Registry, error) {
	reg := hosts.NewRegistry(st, hv.DialHost, log)
	reg.Single = st.Dialect() == "sqlite"
	reg.LocalURI, reg.LocalAccelerator = cfg.LibvirtURI, string(accel)
	reg.Every = time.Duration(max(cfg.HostCheckSeconds, 1)) * time.Second
	if err := reg.EnsureLocal(ctx); err != nil {
		return nil, err
	}
	go reg.Run(ctx)
	return reg, nil
}
