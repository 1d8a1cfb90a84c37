// Package moves takes desktops' VMs from one host to another: live, a
// running domain with its disks (Migrate: migrate.go, migratejob.go,
// migratexml.go), or cold, one that is not running (CopyFile copies its
// files, coldcopy.go, coldstream.go, coldpipe.go; DefineOn defines it on
// the destination with its snapshots and save image, coldmove.go,
// coldxml.go, coldsave.go; UndefineOn removes it from the host it left).
// The lifecycle events a migration causes are told apart from a
// desktop's own where they arrive, in package link.
package moves

import "github.com/bureau/bureau/internal/hypervisor/libvirt/link"

// Moves moves domains between the hosts a connection reaches. Call its
// methods on bureau's own connection (the one with the remotes).
type Moves struct {
	link *link.Conn
}

// New moves domains between c's host and the remote hosts c reaches.
func New(c *link.Conn) *Moves { return &Moves{link: c} }
