package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hosts"
	"github.com/bureau/bureau/internal/hosts/prepare"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/sshlink"
	"github.com/bureau/bureau/internal/store"
)

// hostList is the hosts registry with the key bureau signs in to remote
// hosts with, as the API serves them.
type hostList struct {
	*hosts.Registry
	prep *prepare.Preparer
}

func (l hostList) SSHPublicKey() string { return l.prep.PublicKey() }

// watchHosts records the local host, readies remote ones (SSH with bureau's
// key in DATA_DIR/ssh, their desktop network and firewall) and keeps
// checking every host's libvirtd until ctx ends.
func watchHosts(ctx context.Context, cfg *config.Config, st *store.Store, accel desktop.Accelerator, log *slog.Logger) (hostList, error) {
	signer, err := sshlink.ClientKey(filepath.Join(cfg.DataDir, "ssh", "id_ed25519"))
	if err != nil {
		return hostList{}, fmt.Errorf("bureau's SSH key for remote hosts: %w", err)
	}
	prep := prepare.New(signer, cfg.DataDir, net.DefaultResolver, log)
	prep.Openable, _ = desktop.ParseRanges(cfg.NetworkOwnerRanges) // serve checked it
	prep.Desktops = func(ctx context.Context, host string) ([]*desktop.Desktop, error) {
		return st.ListDesktops(ctx, desktop.Filter{Host: host})
	}
	reg := hosts.NewRegistry(st, hv.HostDialer{ImagesDir: cfg.ImagesDir(), LocalURI: cfg.LibvirtURI}.Dial, log)
	reg.Desktops = func(ctx context.Context, host string) (int, error) {
		ds, err := st.ListDesktops(ctx, desktop.Filter{Host: host})
		return len(ds), err
	}
	reg.Single = st.Dialect() == "sqlite"
	reg.LocalURI, reg.LocalAccelerator = cfg.LibvirtURI, string(accel)
	reg.Every = time.Duration(max(cfg.HostCheckSeconds, 1)) * time.Second
	reg.Prep = prep
	reg.DefaultNetwork = hosts.Network{Bridge: desktopBridge, Subnet: cfg.NetworkSubnet}
	if err := reg.EnsureLocal(ctx); err != nil {
		return hostList{}, err
	}
	go reg.Run(ctx)
	return hostList{reg, prep}, nil
}
