package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/network"
)

// hostSetupCommand names scripts/host-setup.sh as this bureau can run it:
// installed beside the binary (make install), else from a checkout.
func hostSetupCommand() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(filepath.Dir(exe)), "share", "bureau", "scripts", "host-setup.sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "scripts/host-setup.sh"
}

// checkAccelerator says what serve will choose, by serve's own rule
// (hv.ChooseAccelerator, with BUREAU_ACCELERATOR's override).
func checkAccelerator(override string) finding {
	accel, why, err := hv.ChooseAccelerator(override)
	if err != nil {
		return fail(err.Error(), "BUREAU_ACCELERATOR=auto (or kvm, tcg)")
	}
	if accel == desktop.AccelKVM {
		// Forced, it is still worth knowing whether KVM works here:
		// desktops would not start.
		if auto, found, _ := hv.ChooseAccelerator("auto"); override == "kvm" && auto != desktop.AccelKVM {
			return fail("BUREAU_ACCELERATOR=kvm, but "+found, "BUREAU_ACCELERATOR=auto, or make /dev/kvm usable ("+hostSetupCommand()+")")
		}
		return ok("kvm: " + why)
	}
	fix := "a host with hardware virtualization: vmx/svm in /proc/cpuinfo (bare metal, or nested virtualization turned on) and /dev/kvm usable (" + hostSetupCommand() + " sets its group)"
	if override == "tcg" || override == "qemu" {
		fix = "BUREAU_ACCELERATOR=auto where the host has KVM"
	}
	if strings.Contains(why, "software emulation") {
		return warn("TCG (~100 s to a desktop): "+why, fix)
	}
	return warn("TCG, software emulation (~100 s to a desktop): "+why, fix)
}

// checkLibvirt connects to uri as serve does (link.Open, every call with
// a deadline) and reports libvirt's and QEMU's versions.
func checkLibvirt(ctx context.Context, uri string) finding {
	fix := hostSetupCommand() + " (starts virtlogd and libvirtd), or systemctl start libvirtd"
	c, err := link.Open(ctx, uri, slog.New(slog.DiscardHandler))
	if err != nil {
		return fail(fmt.Sprintf("libvirt at %s: %v", uri, link.Message(err)), fix)
	}
	conn, err := c.Connect(ctx)
	if err != nil {
		return fail(fmt.Sprintf("libvirt at %s: %v", uri, link.Message(err)), fix)
	}
	type versions struct{ lib, qemu uint32 }
	v, err := link.Call(ctx, func() (versions, error) {
		lib, err := conn.GetLibVersion()
		if err != nil {
			return versions{}, err
		}
		qemu, err := conn.GetVersion()
		return versions{lib, qemu}, err
	})
	if err != nil {
		// A call that did not return may still hold the connection:
		// left open for the process's exit.
		return fail(fmt.Sprintf("libvirt at %s: %v", uri, link.Message(err)), fix)
	}
	c.Close()
	return ok(fmt.Sprintf("libvirt %s, QEMU %s at %s", libvirtVersion(v.lib), libvirtVersion(v.qemu), uri))
}

// libvirtVersion formats libvirt's major*1e6+minor*1e3+release.
func libvirtVersion(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
}

// tool is a program bureau runs, and what is lost without it.
type tool struct {
	name, pkg, need string
	required        bool
}

// tools are the programs bureau runs. ssh-keygen is not among them:
// desktops' SSH keys are made in Go.
var tools = []tool{
	{"qemu-img", "qemu-utils", "desktops' disks", true},
	{"nft", "nftables", "the desktops' firewall (serve does not start without it)", true},
	{"ffmpeg", "ffmpeg", "recordings", false},
	{"ssh", "openssh-client", "qemu+ssh:// hosts", false},
	{"mmdebstrap", "mmdebstrap", "bureau image build", false},
	{"extlinux", "extlinux", "bureau image build", false},
	{"mkfs.ext4", "e2fsprogs", "bureau image build", false},
}

// checkTools finds the programs bureau runs on look's PATH.
func checkTools(look func(string) (string, error)) finding {
	var missing, needs, pkgs []string
	var found []string
	required := false
	for _, t := range tools {
		if _, err := look(t.name); err != nil {
			missing = append(missing, t.name)
			needs = append(needs, t.name+": "+t.need)
			pkgs = append(pkgs, t.pkg)
			required = required || t.required
			continue
		}
		found = append(found, t.name)
	}
	if len(missing) == 0 {
		return ok(strings.Join(found, ", ") + " found")
	}
	detail := "missing " + strings.Join(needs, "; ")
	fix := hostSetupCommand() + ", or apt-get install " + strings.Join(pkgs, " ")
	if required {
		return fail(detail, fix)
	}
	return warn(detail, fix)
}

// checkNftables lists the host's nftables tables, which needs what
// bureau's firewall needs: nft, and root (CAP_NET_ADMIN).
func checkNftables(ctx context.Context) finding {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fail("nft is not installed", "apt-get install nftables ("+hostSetupCommand()+" does)")
	}
	out, err := exec.CommandContext(ctx, nft, "list", "tables").CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fail("nft list tables: "+msg, "run bureau as root (nftables needs CAP_NET_ADMIN); in a container, give it CAP_NET_ADMIN")
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "table ") {
			n++
		}
	}
	return ok(fmt.Sprintf("nft list tables works (%d tables)", n))
}

// hostNet is one of the host's own networks: an interface's address or
// a route's destination.
type hostNet struct {
	prefix netip.Prefix
	where  string // "address on eth0", "route on eth0"
}

// checkNetwork checks the desktops' subnet as serve takes it
// (network.NewNetworkConfig) against the host's networks but bureau's own
// bridge, which holds it once bureau ran.
func checkNetwork(subnet string, nets func() ([]hostNet, error)) finding {
	fix := "BUREAU_NETWORK_SUBNET=<a private IPv4 /16 the host does not use>"
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return fail(fmt.Sprintf("BUREAU_NETWORK_SUBNET %q: %v", subnet, err), fix)
	}
	nc, err := network.NewNetworkConfig(desktopNetwork, desktopBridge, p)
	if err != nil {
		return fail(err.Error(), fix)
	}
	have, err := nets()
	if err != nil {
		return warn("the host's networks could not be read: "+err.Error(), "run bureau doctor as root on the host bureau serves on")
	}
	clash := overlapping(nc.Subnet, have)
	if len(clash) == 0 {
		return ok(fmt.Sprintf("the desktops' subnet %s overlaps none of the host's %d networks", nc.Subnet, len(have)))
	}
	var what []string
	for _, h := range clash {
		what = append(what, h.prefix.String()+" ("+h.where+")")
	}
	if free, found := freeSubnet(have); found {
		fix = "BUREAU_NETWORK_SUBNET=" + free.String() + " (free here), or another private subnet the host does not use"
	}
	return fail(fmt.Sprintf("the desktops' subnet %s overlaps %s", nc.Subnet, strings.Join(what, ", ")), fix)
}

// overlapping are the networks of have that share addresses with subnet.
func overlapping(subnet netip.Prefix, have []hostNet) []hostNet {
	var out []hostNet
	for _, h := range have {
		if h.prefix.Masked().Overlaps(subnet) {
			out = append(out, h)
		}
	}
	return out
}

// freeSubnet is the first 10.x.0.0/16 from bureau's default on that
// overlaps none of have.
func freeSubnet(have []hostNet) (netip.Prefix, bool) {
	for i := 0; i < 256; i++ {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(120 + i), 0, 0}), 16)
		if len(overlapping(p, have)) == 0 {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// hostNetworks are the host's IPv4 interface addresses and routes, but
// the default route and bureau's own bridge.
func hostNetworks() ([]hostNet, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []hostNet
	for _, ifc := range ifs {
		if ifc.Name == desktopBridge {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, isNet := a.(*net.IPNet)
			if !isNet {
				continue
			}
			if p, err := netip.ParsePrefix(ipn.String()); err == nil && p.Addr().Is4() {
				out = append(out, hostNet{prefix: p.Masked(), where: "address on " + ifc.Name})
			}
		}
	}
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return out, nil // no procfs: the addresses still say most
	}
	defer f.Close()
	routes, err := parseRoutes(f)
	if err != nil {
		return nil, err
	}
	return append(out, routes...), nil
}

// parseRoutes reads /proc/net/route (addresses in the kernel's byte
// order, which is little-endian in hex), but the default route and
// bureau's own bridge.
func parseRoutes(r io.Reader) ([]hostNet, error) {
	var out []hostNet
	sc := bufio.NewScanner(r)
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 8 || f[0] == desktopBridge {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/net/route: %q", sc.Text())
		}
		if mask == 0 {
			continue // the default route: everything, nobody's subnet
		}
		var a, m [4]byte
		binary.LittleEndian.PutUint32(a[:], uint32(dst))
		binary.LittleEndian.PutUint32(m[:], uint32(mask))
		p := netip.PrefixFrom(netip.AddrFrom4(a), bits.OnesCount32(binary.BigEndian.Uint32(m[:])))
		out = append(out, hostNet{prefix: p.Masked(), where: "route on " + f[0]})
	}
	return out, sc.Err()
}

// Free space under which disk warns and FAILs.
const (
	diskWarnBytes = 20 << 30
	diskFailBytes = 5 << 30
)
