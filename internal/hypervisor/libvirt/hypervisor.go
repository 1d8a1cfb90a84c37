// Package libvirt is what the rest of bureau holds of QEMU through
// libvirtd. Open gives the Hypervisor, a façade over one libvirt
// connection composed of one type per concern, each in its own package
// under this one:
//
//   - link: the connection itself, routing each domain's calls to its
//     host, deadlines, lifecycle events, QMP, libvirt's errors.
//   - domains: definitions, lifecycle, power, snapshots, save images,
//     statistics, memory.
//   - pools: storage pools and volumes, base image copies, a remote
//     desktop's files (Files), a host's disk.
//   - moves: live migration and cold moves between hosts.
//   - guestchan: QEMU's guest agent and bureau-agent's channel.
//   - display: screenshots and keyboard and pointer input.
//   - network: the desktops' network, their DHCP addresses, a NIC.
//
// DialHost and HostDialer give the hosts registry its HostLinks
// (hostlink.go, hostdisk.go), and ChooseAccelerator picks KVM or TCG for
// this machine (accel.go). Every libvirt call carries a deadline so a
// wedged guest or daemon never hangs the caller.
package libvirt

import (
	"context"
	"log/slog"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/display"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/domains"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/guestchan"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/moves"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/network"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/pools"
)

// Hypervisor is a connection to one libvirtd, and through it to the
// remote hosts it routes domains to (SetRemotes). Its methods are those of
// the concern types it embeds, which all share the one connection.
type Hypervisor struct {
	// *link.Conn: Events, Resync, SetRemotes, Remote, ForgetRemote,
	// Close.
	*link.Conn
	*domains.Domains
	*pools.Storage
	*moves.Moves
	// *guestchan.Channel: DialAgent; its AgentViaStream is set here.
	*guestchan.Channel
	*guestchan.Agent
	// *display.Screen: Screenshot; its ScreenDir is set here.
	*display.Screen
	*display.Input
	*network.Network
}

// Open connects to libvirtd at uri (e.g. qemu:///system) and starts
// delivering lifecycle events of bureau's domains on Events.
func Open(ctx context.Context, uri string, log *slog.Logger) (*Hypervisor, error) {
	c, err := link.Open(ctx, uri, log)
	if err != nil {
		return nil, err
	}
	agent := guestchan.NewAgent(c)
	return &Hypervisor{
		Conn:    c,
		Domains: domains.New(c, agent),
		Storage: pools.NewStorage(c),
		Moves:   moves.New(c),
		Channel: guestchan.NewChannel(c),
		Agent:   agent,
		Screen:  display.NewScreen(c),
		Input:   display.NewInput(c),
		Network: network.New(c),
	}, nil
}
