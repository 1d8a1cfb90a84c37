package moves

import (
	"log/slog"
	"sync"
	"time"

	"libvirt.org/go/libvirt"
)

// jobStats keeps the last statistics read from a migration's source.
type jobStats struct {
	mu   sync.Mutex
	last *libvirt.DomainJobInfo
}

// poll reads the source's job statistics every migratePoll until stop is
// closed, reporting each to progress (when set).
func (j *jobStats) poll(dom *libvirt.Domain, progress func(MigrateProgress), stop <-chan struct{}) {
	tick := time.NewTicker(migratePoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		st, err := dom.GetJobStats(0)
		if err != nil || st.Type == libvirt.DOMAIN_JOB_NONE {
			continue
		}
		j.mu.Lock()
		j.last = st
		j.mu.Unlock()
		if progress != nil {
			progress(progressOf(st))
		}
	}
}

// progressOf is bureau's view of a job's statistics. With NON_SHARED_INC,
// libvirt first mirrors the disks until they are in sync, then copies
// memory (the disks stay mirrored until the switch-over).
func progressOf(st *libvirt.DomainJobInfo) MigrateProgress {
	p := MigrateProgress{
		DataTotal: st.DataTotal, DataProcessed: st.DataProcessed, DataRemaining: st.DataRemaining,
		DiskTotal: st.DiskTotal, DiskProcessed: st.DiskProcessed,
		MemTotal: st.MemTotal, MemProcessed: st.MemProcessed, MemIteration: st.MemIteration,
		Elapsed: time.Duration(st.TimeElapsed) * time.Millisecond,
	}
	switch {
	case st.MemProcessed > 0 || st.MemIteration > 0:
		p.Phase = "memory"
	case st.DiskTotal > 0:
		p.Phase = "disks"
	default:
		p.Phase = "setup"
	}
	return p
}

// jobCompletedWait is how long a finished migration waits for the
// source's job-completed event.
const jobCompletedWait = 2 * time.Second

// result is a finished migration's figures: from the source's
// job-completed event (all of them), else from the destination's
// statistics of the completed job (libvirt sends them over with the
// domain; memory only, no disks), else from the source's last poll (no
// downtime then).
func (j *jobStats) result(moved *libvirt.Domain, completed <-chan libvirt.DomainJobInfo, log *slog.Logger) *MigrateResult {
	res := &MigrateResult{}
	select {
	case st := <-completed:
		log.Debug("migration statistics from the source's job-completed event", statsAttrs(&st)...)
		return figures(&st)
	case <-time.After(jobCompletedWait):
	}
	st, err := moved.GetJobStats(libvirt.DOMAIN_JOB_STATS_COMPLETED)
	if err == nil && st.Type == libvirt.DOMAIN_JOB_COMPLETED {
		log.Debug("migration statistics from the destination", statsAttrs(st)...)
		res = figures(st)
	} else {
		log.Debug("no completed job statistics on the destination", "err", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.last != nil && j.last.DataProcessed > res.DataBytes {
		res.DataBytes = j.last.DataProcessed
	}
	return res
}

func figures(st *libvirt.DomainJobInfo) *MigrateResult {
	res := &MigrateResult{DataBytes: st.DataProcessed}
	if st.DowntimeSet {
		res.Downtime = time.Duration(st.Downtime) * time.Millisecond
	}
	return res
}

func statsAttrs(st *libvirt.DomainJobInfo) []any {
	return []any{"downtime_set", st.DowntimeSet, "downtime_ms", st.Downtime, "data_processed", st.DataProcessed,
		"disk_processed", st.DiskProcessed, "mem_processed", st.MemProcessed, "elapsed_ms", st.TimeElapsed,
		"mem_iteration", st.MemIteration, "auto_converge_throttle", st.AutoConvergeThrottle}
}
