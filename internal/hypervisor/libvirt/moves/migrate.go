package moves

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/hypervisor/libvirt/domains"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"libvirt.org/go/libvirt"
)

// MigrateOptions says how a running domain moves to another host.
type MigrateOptions struct {
	// To is the destination host's name ("local" for this one).
	To string
	// Address is the destination's address the migration stream (and
	// disk mirror) connects to, e.g. "10.0.0.2" (127.0.0.1 in tests).
	Address string
	// Tap is the host-side NIC device name the domain gets there ("" keeps its own).
	Tap string
	// Progress, when set, is called about twice a second with the job's progress.
	Progress func(MigrateProgress)
}

// MigrateProgress is a migration job's progress as the source reports it.
type MigrateProgress struct {
	// Phase is "setup", "disks" (the disk mirror catching up) or "memory".
	Phase                                   string
	DataTotal, DataProcessed, DataRemaining uint64
	DiskTotal, DiskProcessed                uint64
	MemTotal, MemProcessed                  uint64
	MemIteration                            uint64
	Elapsed                                 time.Duration
}

// MigrateResult is what a finished migration took.
type MigrateResult struct {
	Took time.Duration
	// Downtime is the guest's pause at the switch-over as libvirt measured
	// it, 0 if it gave none.
	Downtime  time.Duration
	DataBytes uint64
}

// ErrCannotMigrate is a domain bureau will not try to move.
var ErrCannotMigrate = errors.New("cannot migrate")

const (
	// DefaultMigrateTimeout bounds a migration whose context has no deadline.
	DefaultMigrateTimeout = 30 * time.Minute
	// migratePoll is how often the job's progress is read.
	migratePoll = 500 * time.Millisecond
	// migrateAbortGrace is how long a cancelled migration may take to unwind.
	migrateAbortGrace = time.Minute
)

// migrateFlags: live, client-driven (bureau holds both connections; a
// host cannot always reach another's libvirtd), the definition moved with
// the domain, and only each disk's top image copied: the base image is on
// every host at the same path. Auto-converge slows the vCPUs of a guest
// that dirties memory faster than it copies (TCG).
const migrateFlags = libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PERSIST_DEST | libvirt.MIGRATE_UNDEFINE_SOURCE |
	libvirt.MIGRATE_NON_SHARED_INC | libvirt.MIGRATE_AUTO_CONVERGE

// Migrate moves a running domain live, with its writable disks, to the host
// opt.To. The destination must already have the disks' files at the same
// paths and virtual sizes (os.qcow2 an overlay of the same base, data.qcow2
// an empty qcow2: see DiskSizes) and every read-only file (seed.iso).
// When ctx ends first the job is aborted and the domain keeps running
// where it was. Routing the domain to its new host is the caller's.
// Call it on bureau's own connection (the one with the remotes).
func (m *Moves) Migrate(ctx context.Context, name string, opt MigrateOptions) (*MigrateResult, error) {
	begun := time.Now()
	if opt.Address == "" {
		return nil, fmt.Errorf("migrate %s: no destination address", name)
	}
	from, to := m.link.HostOf(name), link.HostName(opt.To)
	if from == to {
		return nil, fmt.Errorf("migrate %s: %w: it already runs on host %s", name, ErrCannotMigrate, to)
	}
	src, err := m.link.On(ctx, name)
	if err != nil {
		return nil, err
	}
	dst := m.link
	if to != "local" {
		if dst, err = m.link.Remote(ctx, to); err != nil {
			return nil, err
		}
	}
	dconn, err := dst.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sconn, err := src.Connect(ctx)
	if err != nil {
		return nil, err
	}
	type prepared struct {
		dom    *libvirt.Domain
		params *libvirt.DomainMigrateParameters
	}
	p, err := link.Call(ctx, func() (prepared, error) {
		dom, params, err := prepareMigration(sconn, name, opt)
		return prepared{dom, params}, err
	})
	dom, params := p.dom, p.params
	if err != nil {
		return nil, fmt.Errorf("migrate %s to %s: %w", name, to, err)
	}
	log := m.link.Log().With("domain", name, "from", from, "to", to)
	log.Info("migration starting", "disks", params.MigrateDisks)

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultMigrateTimeout)
		defer cancel()
	}
	res, err := runMigration(ctx, name, dom, sconn, dconn, params, opt.Progress, log)
	if err != nil {
		return nil, fmt.Errorf("migrate %s to %s: %w", name, to, err)
	}
	res.Took = time.Since(begun)
	log.Info("migrated", "took", res.Took, "downtime", res.Downtime, "bytes", res.DataBytes)
	return res, nil
}

// prepareMigration looks the domain up, refuses what cannot move and builds
// the job's parameters. The caller frees the domain.
func prepareMigration(conn *libvirt.Connect, name string, opt MigrateOptions) (*libvirt.Domain, *libvirt.DomainMigrateParameters, error) {
	dom, err := conn.LookupDomainByName(name)
	if err != nil {
		return nil, nil, link.Translate(name, err)
	}
	params, err := migrationParams(dom, opt)
	if err != nil {
		dom.Free()
		if !errors.Is(err, ErrCannotMigrate) {
			err = link.Translate(name, err)
		}
		return nil, nil, err
	}
	return dom, params, nil
}

func migrationParams(dom *libvirt.Domain, opt MigrateOptions) (*libvirt.DomainMigrateParameters, error) {
	s, reason, err := dom.GetState()
	if err != nil {
		return nil, err
	}
	if s != libvirt.DOMAIN_RUNNING {
		return nil, fmt.Errorf("%w: it is %s, and only a running desktop moves live", ErrCannotMigrate, domains.VMState(s, reason))
	}
	// libvirt refuses "cannot migrate domain with N snapshots".
	if n, err := dom.SnapshotNum(0); err != nil {
		return nil, err
	} else if n > 0 {
		return nil, fmt.Errorf("%w: it has %d snapshot(s) kept by libvirt (with memory), and libvirt cannot migrate those; delete them first", ErrCannotMigrate, n)
	}
	xml, err := dom.GetXMLDesc(libvirt.DOMAIN_XML_MIGRATABLE)
	if err != nil {
		return nil, err
	}
	destXML, disks, err := migrationXML(xml, opt.Tap)
	if err != nil {
		return nil, err
	}
	addr := opt.Address
	if strings.Contains(addr, ":") && !strings.HasPrefix(addr, "[") {
		addr = "[" + addr + "]" // IPv6
	}
	return &libvirt.DomainMigrateParameters{
		URISet: true, URI: "tcp://" + addr,
		// The incoming stream and the disks' NBD server listen there only.
		ListenAddressSet: true, ListenAddress: opt.Address,
		DestXMLSet: true, DestXML: destXML,
		PersistXMLSet: true, PersistXML: destXML,
		MigrateDisksSet: len(disks) > 0, MigrateDisks: disks,
	}, nil
}

// runMigration runs the job, polling its progress, and aborts it when ctx
// ends. A job that finished anyway is a success: the domain moved.
func runMigration(ctx context.Context, name string, dom *libvirt.Domain, sconn, dconn *libvirt.Connect,
	params *libvirt.DomainMigrateParameters, progress func(MigrateProgress), log *slog.Logger) (*MigrateResult, error) {
	// The source's final statistics (disks included) come as an event.
	completed := make(chan libvirt.DomainJobInfo, 1)
	if id, err := sconn.DomainEventJobCompletedRegister(dom, func(_ *libvirt.Connect, _ *libvirt.Domain, ev *libvirt.DomainEventJobCompleted) {
		select {
		case completed <- ev.Info:
		default:
		}
	}); err == nil {
		defer sconn.DomainEventDeregister(id)
	} else {
		log.Debug("job-completed events unavailable", "err", err)
	}
	type outcome struct {
		dom *libvirt.Domain
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		d, err := dom.Migrate3(dconn, params, migrateFlags)
		done <- outcome{d, err}
	}()
	var last jobStats
	stopPoll := make(chan struct{})
	var polling sync.WaitGroup
	polling.Go(func() { last.poll(dom, progress, stopPoll) })
	finish := func(o outcome) (*MigrateResult, error) {
		close(stopPoll)
		polling.Wait()
		dom.Free()
		if o.err != nil {
			return nil, link.Translate(name, o.err)
		}
		defer o.dom.Free()
		return last.result(o.dom, completed, log), nil
	}

	var o outcome
	select {
	case o = <-done:
		return finish(o)
	case <-ctx.Done():
	}
	// Cancelled: abort until the job ends (it may not have begun on the
	// source yet, when AbortJob says there is none).
	grace := time.NewTimer(migrateAbortGrace)
	defer grace.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := dom.AbortJob(); err != nil && !link.IsCode(err, libvirt.ERR_OPERATION_INVALID) {
			log.Warn("abort migration", "err", err)
		}
		select {
		case o = <-done:
			if o.err == nil {
				log.Warn("migration finished before it could be aborted")
				return finish(o)
			}
			_, err := finish(o)
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-grace.C:
			// The domain handle is left to the running call.
			close(stopPoll)
			return nil, fmt.Errorf("%w: the aborted migration did not end within %s", ctx.Err(), migrateAbortGrace)
		case <-tick.C:
		}
	}
}
