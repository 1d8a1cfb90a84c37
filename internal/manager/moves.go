package manager

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/placement"
)

// Moves moves desktops between hosts: live (migrate.go, migrate_files.go),
// cold (coldmove.go), and every desktop off a host (drain.go). It holds the
// operation core and what moves need beside it, each by the role it plays
// here; its exported methods are the API's Migrations and Drains.
type Moves struct {
	ops   *runner
	store moveStore
	vms   moveVMs
	hosts moveHosts
	net   moveNetwork
	place movePlacement
	room  hostRoom
	defs  vmConfigs
	clock clockSync
	log   *slog.Logger

	// From Config: the live mover (Mover) and the cold one (ColdMover),
	// this host's address for migration streams (HostAddress), what marks
	// hosts draining (Drains), whom to tell a desktop moved (Moved), and
	// how a drain chooses the host each desktop goes to (Placement).
	live        Mover
	cold        ColdMover
	hostAddress string
	marks       HostDrains
	onMoved     func(id, host string)
	placement   Placement

	drains drains
}

// Moves moves desktops between hosts (the API's Migrations and Drains).
func (m *Manager) Moves() *Moves { return m.moves }

// moveStore reads what a move needs and records where a desktop is:
// its reservation on the host it moves to, then the host it is on.
type moveStore interface {
	GetDesktop(ctx context.Context, id string) (*desktop.Desktop, error)
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	ListSnapshots(ctx context.Context, desktopID string) ([]*desktop.Snapshot, error)
	ListEvents(ctx context.Context, desktopID string, limit int) ([]*desktop.Event, error)
	GetImage(ctx context.Context, name string) (*desktop.Image, error)
	ReserveMove(ctx context.Context, id, to string, fits func(placement.Load) error) error
	EndMove(ctx context.Context, id string) error
	MoveDesktop(ctx context.Context, id, host, ip string, renew bool) error
	RenewedAddress(ctx context.Context, id string) error
}

// moveVMs reads a VM's state, and hibernates and wakes it around a cold
// move.
type moveVMs interface {
	State(ctx context.Context, name string) (desktop.VMState, error)
	Hibernate(ctx context.Context, name string) error
	Start(ctx context.Context, name string) error
}

// moveHosts reaches the hosts a desktop moves between: the one a move
// names, and the files on each (desktopHosts).
type moveHosts interface {
	named(ctx context.Context, host string) (*Site, error)
	filesOf(ctx context.Context, d *desktop.Desktop) (desktopFiles, error)
	imageOn(ctx context.Context, files HostFiles, d *desktop.Desktop, host, path string, label func(step string) string) error
	// sameBase refuses a desktop whose host has another build of its
	// image than bureau's own.
	sameBase(ctx context.Context, d *desktop.Desktop, path string) error
	uploadSeed(ctx context.Context, files HostFiles, path string, seed Seed, uid, gid int) error
}

// moveNetwork gives a moving desktop its address and rules on the host it
// moves to, and drops those it had on the other (network.go).
type moveNetwork interface {
	subnetOf(ctx context.Context, d *desktop.Desktop) (netip.Prefix, error)
	armNetwork(ctx context.Context, d *desktop.Desktop, reserved bool) error
	dropAddressAndRules(ctx context.Context, d *desktop.Desktop)
}

// movePlacement says whether a host may take a moving desktop, and which
// host a drain names is (placer, place.go).
type movePlacement interface {
	fitsOn(ctx context.Context, d *desktop.Desktop, memHeld bool) (func(placement.Load) error, error)
	candidate(ctx context.Context, host string) (placement.Host, error)
}

// clockSync sets a woken guest's clock, in the background (power.go).
type clockSync interface {
	syncClock(d *desktop.Desktop)
}
