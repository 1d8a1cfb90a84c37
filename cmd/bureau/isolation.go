package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/network"
	"github.com/bureau/bureau/internal/netpolicy"
)

// The desktops' libvirt network and its bridge.
const (
	desktopNetwork = network.DesktopNetwork
	desktopBridge  = "bureau0"
)

// isolation is what keeps desktops off the host and each other.
type isolation struct {
	network   string
	subnet    netip.Prefix
	vmGroup   int
	firewall  *netpolicy.Firewall
	addresses network.Addresses
}

// setUpIsolation locks the data directory down for unprivileged QEMU,
// finds the group libvirt runs QEMU in, makes sure the desktops' network
// exists and starts the firewall that applies their policies.
func setUpIsolation(ctx context.Context, cfg *config.Config, h *hv.Hypervisor, log *slog.Logger) (*isolation, error) {
	if err := lockDownDataDir(cfg); err != nil {
		return nil, err
	}
	gid, err := qemuGroup()
	if err != nil {
		return nil, err
	}
	subnet, err := netip.ParsePrefix(cfg.NetworkSubnet)
	if err != nil {
		return nil, fmt.Errorf("network subnet %q: %w", cfg.NetworkSubnet, err)
	}
	nc, err := network.NewNetworkConfig(desktopNetwork, desktopBridge, subnet)
	if err != nil {
		return nil, err
	}
	if err := subnetFree(nc.Subnet, nc.Bridge); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, errors.New("nft (nftables) is not installed; run `make setup` or apt-get install nftables: desktops are not started without their firewall")
	}
	if err := h.EnsureNetwork(ctx, nc); err != nil {
		return nil, err
	}
	fw := netpolicy.New(netpolicy.InstanceTag(cfg.DataDir), netpolicy.Net{Bridge: nc.Bridge, Subnet: nc.Subnet, Gateway: nc.Gateway},
		net.DefaultResolver, nil, log)
	openable, err := desktop.ParseRanges(cfg.NetworkOwnerRanges)
	if err != nil {
		return nil, fmt.Errorf("BUREAU_NETWORK_OWNER_RANGES: %w", err)
	}
	fw.SetOpenable(openable)
	go fw.Refresh(ctx, time.Minute)
	log.Info("desktop isolation", "network", desktopNetwork, "bridge", nc.Bridge, "subnet", nc.Subnet, "qemu_group", gid)
	return &isolation{network: desktopNetwork, subnet: nc.Subnet, vmGroup: gid, firewall: fw,
		addresses: network.Addresses{H: h.Conn, Network: desktopNetwork}}, nil
}

// lockDownDataDir lets desktops' QEMU users pass through the data
// directory to their own files and read base images, and nothing else:
// the database and admin token are root's alone.
func lockDownDataDir(cfg *config.Config) error {
	for dir, mode := range map[string]os.FileMode{
		cfg.DataDir:                             0o711,
		filepath.Join(cfg.DataDir, "desktops"):  0o711,
		filepath.Join(cfg.DataDir, "templates"): 0o711,
		cfg.ImagesDir():                         0o755,
	} {
		if err := os.MkdirAll(dir, mode); err != nil {
			return err
		}
		if err := os.Chmod(dir, mode); err != nil {
			return err
		}
	}
	if cfg.DatabaseURL == "" {
		for _, f := range []string{"", "-wal", "-shm"} {
			if err := os.Chmod(cfg.Database()+f, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// qemuGroup is the group libvirt runs QEMU in, read off its state folder
// (libvirt-qemu on Debian, kvm on Ubuntu): that group may enter libvirt's
// per-VM folders, which each VM's own user then owns.
func qemuGroup() (int, error) {
	if fi, err := os.Stat("/var/lib/libvirt/qemu"); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Gid != 0 {
			return int(st.Gid), nil
		}
	}
	for _, name := range []string{"libvirt-qemu", "kvm"} {
		if g, err := user.LookupGroup(name); err == nil {
			return strconv.Atoi(g.Gid)
		}
	}
	return 0, errors.New("cannot tell which group libvirt runs QEMU in (no /var/lib/libvirt/qemu, no libvirt-qemu or kvm group)")
}

// subnetFree refuses a desktop subnet that overlaps one of the host's own
// networks (but the desktops' bridge).
func subnetFree(subnet netip.Prefix, bridge string) error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, ifc := range ifs {
		if ifc.Name == bridge {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			p, err := netip.ParsePrefix(ipn.String())
			if err != nil || !p.Addr().Is4() {
				continue
			}
			if p.Masked().Overlaps(subnet) {
				return fmt.Errorf("the desktops' subnet %s overlaps %s on %s: set BUREAU_NETWORK_SUBNET to a free one", subnet, p, ifc.Name)
			}
		}
	}
	return nil
}
