package api

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/manager"
)

// fakeBackups keeps targets, backups and schedules in memory, as
// *manager.Backups answers, and records what it was asked. It returns
// targets with their secret key set, so tests see the API drop it.
type fakeBackups struct {
	mu        sync.Mutex
	desktops  *fakeDesktops
	targets   []*desktop.BackupTarget
	backups   []*desktop.Backup // oldest first
	schedules map[string]*desktop.BackupSchedule
	n         int

	lastTarget  manager.TargetRequest
	lastStart   manager.BackupRequest
	lastFilter  manager.BackupFilter
	lastRestore manager.RestoreRequest
	lastOnto    manager.RestoreOntoRequest
	verified    []string // "backup actor" per Verify
	deleted     []string // "backup actor" per Delete
	lastSched   manager.ScheduleRequest
	unscheduled []string // "desktop actor" per DeleteSchedule
	// filesOpened counts the calls on backups' files (backup_files_fake_test.go).
	filesOpened   int
	filesRestored []manager.FilesRestored
}

func (f *fakeBackups) nextID(prefix string) string {
	f.n++
	return fmt.Sprintf("%s%011x", prefix, f.n)
}

func (f *fakeBackups) CreateTarget(_ context.Context, req manager.TargetRequest) (*desktop.BackupTarget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastTarget = req
	t := &desktop.BackupTarget{Name: req.Name, Kind: req.Kind, Dir: req.Dir, S3: req.S3, CreatedAt: time.Now().UTC(), CreatedBy: req.Actor}
	if t.Kind == desktop.TargetDir {
		t.S3 = desktop.S3Location{}
	} else {
		t.Dir = ""
	}
	if err := desktop.ValidateBackupTarget(t); err != nil {
		return nil, err
	}
	if _, err := f.target(req.Name); err == nil {
		return nil, fmt.Errorf("backup target %q: %w", req.Name, desktop.ErrNameTaken)
	}
	t.ID = f.nextID("t")
	f.targets = append(f.targets, t)
	return t, nil
}

func (f *fakeBackups) target(idOrName string) (*desktop.BackupTarget, error) {
	for _, t := range f.targets {
		if t.ID == idOrName || t.Name == idOrName {
			return t, nil
		}
	}
	return nil, fmt.Errorf("backup target %s: %w", idOrName, desktop.ErrNotFound)
}

func (f *fakeBackups) Targets(context.Context) ([]*desktop.BackupTarget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.targets), nil
}

func (f *fakeBackups) Target(_ context.Context, idOrName string) (*desktop.BackupTarget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.target(idOrName)
}

func (f *fakeBackups) DeleteTarget(_ context.Context, idOrName, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.target(idOrName)
	if err != nil {
		return err
	}
	for _, b := range f.backups {
		if b.TargetID == t.ID && b.State == desktop.BackupRunning {
			return &desktop.ConflictError{Message: fmt.Sprintf("backup target %s: a backup to it is running", t.Name)}
		}
	}
	f.targets = slices.DeleteFunc(f.targets, func(x *desktop.BackupTarget) bool { return x == t })
	return nil
}

// pick resolves a backup's or schedule's target: the one named, else the
// only one there is.
func (f *fakeBackups) pick(idOrName string) (*desktop.BackupTarget, error) {
	switch {
	case idOrName != "":
		t, err := f.target(idOrName)
		if err != nil {
			return nil, &desktop.ValidationError{Field: "target", Message: fmt.Sprintf("no backup target %q", idOrName)}
		}
		return t, nil
	case len(f.targets) == 1:
		return f.targets[0], nil
	}
	return nil, &desktop.ValidationError{Field: "target", Message: fmt.Sprintf("%d backup targets are set up: name one", len(f.targets))}
}

func (f *fakeBackups) Start(_ context.Context, desktopID string, req manager.BackupRequest) (*desktop.Backup, error) {
	d, err := f.desktops.Get(context.Background(), desktopID)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastStart = req
	t, err := f.pick(req.Target)
	if err != nil {
		return nil, err
	}
	b := &desktop.Backup{ID: f.nextID("b"), DesktopID: d.ID, DesktopName: d.Name, Owner: d.Owner, TargetID: t.ID,
		State: desktop.BackupRunning, Kind: desktop.BackupFull, Image: "debian", VCPUs: 2, MemoryMiB: 2048,
		StartedAt: time.Now().UTC()}
	b.Mark = "bureau-backup-" + b.ID
	f.backups = append(f.backups, b)
	cp := *b
	return &cp, nil
}

// finish ends a backup as complete (a full one of a 10 GiB disk) or, with
// why, as failed.
func (f *fakeBackups) finish(id, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.backups {
		if b.ID == id {
			now := time.Now().UTC()
			b.FinishedAt, b.Consistency, b.WhyFull = &now, desktop.ConsistencyFilesystem, "the desktop's first backup to target nas"
			b.DiskBytes, b.ReadTotal, b.BytesRead, b.Chunks, b.ChunksNew, b.BytesNew = 10<<30, 3<<30, 3<<30, 768, 768, 1<<30
			b.State = desktop.BackupComplete
			if why != "" {
				b.State, b.Error = desktop.BackupFailed, why
			}
		}
	}
}

func (f *fakeBackups) List(_ context.Context, flt manager.BackupFilter) ([]*desktop.Backup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastFilter = flt
	if flt.TargetID != "" {
		t, err := f.target(flt.TargetID)
		if err != nil {
			return nil, err
		}
		flt.TargetID = t.ID
	}
	var out []*desktop.Backup
	for _, b := range slices.Backward(f.backups) {
		if (flt.Owner == "" || b.Owner == flt.Owner) && (flt.DesktopID == "" || b.DesktopID == flt.DesktopID) &&
			(flt.TargetID == "" || b.TargetID == flt.TargetID) && (flt.State == "" || b.State == flt.State) {
			cp := *b
			out = append(out, &cp)
		}
	}
	return out, nil
}

func (f *fakeBackups) get(id string) (*desktop.Backup, error) {
	for _, b := range f.backups {
		if b.ID == id {
			cp := *b
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("backup %s: %w", id, desktop.ErrNotFound)
}

func (f *fakeBackups) Get(_ context.Context, id string) (*desktop.Backup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.get(id)
}

// restorable is backup id if a restore may read it (complete), recording
// the request first (note, under the lock).
func (f *fakeBackups) restorable(id string, note func()) (*desktop.Backup, error) {
	f.mu.Lock()
	note()
	b, err := f.get(id)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if b.State != desktop.BackupComplete {
		return nil, &desktop.ConflictError{Message: fmt.Sprintf("backup %s is %s: only a complete backup can be restored", b.ID, b.State)}
	}
	return b, nil
}

// Restore adds the desktop to the fake desktops directly: quotas are the
// manager's (the request's Unlimited says whether they apply).
func (f *fakeBackups) Restore(_ context.Context, id string, req manager.RestoreRequest) (*desktop.Desktop, error) {
	b, err := f.restorable(id, func() { f.lastRestore = req })
	if err != nil {
		return nil, err
	}
	if err := desktop.ValidateName(req.Name); err != nil {
		return nil, err
	}
	fd := f.desktops
	fd.mu.Lock()
	defer fd.mu.Unlock()
	d := &desktop.Desktop{ID: fmt.Sprintf("d%d", len(fd.desktops)+1), Owner: req.Owner, Name: req.Name, State: desktop.StateCreating,
		Spec: desktop.Spec{Image: b.Image, VCPUs: b.VCPUs, MemoryMiB: b.MemoryMiB, DataDiskGiB: int(b.DiskBytes >> 30)}}
	fd.desktops[d.ID] = d
	cp := *d
	return &cp, nil
}

func (f *fakeBackups) RestoreOnto(_ context.Context, id string, req manager.RestoreOntoRequest) (*desktop.Desktop, error) {
	if _, err := f.restorable(id, func() { f.lastOnto = req }); err != nil {
		return nil, err
	}
	if !req.ReplaceDataDisk {
		return nil, &desktop.ValidationError{Field: "replace_data_disk", Message: "say so"}
	}
	fd := f.desktops
	fd.mu.Lock()
	defer fd.mu.Unlock()
	d, ok := fd.desktops[req.Desktop]
	if !ok {
		return nil, desktop.ErrNotFound
	}
	if _, err := desktop.Begin(desktop.OpRestoreData, d.State); err != nil {
		return nil, err
	}
	d.State, d.Operation = desktop.StateReverting, string(desktop.OpRestoreData)
	cp := *d
	return &cp, nil
}

func (f *fakeBackups) Verify(_ context.Context, id, actor string) (*desktop.BackupCheck, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.get(id)
	if err != nil {
		return nil, err
	}
	if b.State != desktop.BackupComplete {
		return nil, &desktop.ConflictError{Message: fmt.Sprintf("backup %s is %s: only a complete backup can be verified", b.ID, b.State)}
	}
	f.verified = append(f.verified, id+" "+actor)
	return &desktop.BackupCheck{BackupID: id, Chunks: b.Chunks, OK: true, Took: 1500 * time.Millisecond}, nil
}

func (f *fakeBackups) Delete(_ context.Context, id, actor string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.get(id)
	if err != nil {
		return err
	}
	if b.State == desktop.BackupRunning {
		return &desktop.ConflictError{Message: fmt.Sprintf("backup %s is running: it can be deleted once it ends", b.ID)}
	}
	f.backups = slices.DeleteFunc(f.backups, func(x *desktop.Backup) bool { return x.ID == id })
	f.deleted = append(f.deleted, id+" "+actor)
	return nil
}

// SetSchedule takes the manager's defaults and validation; the desktop
// must be there.
func (f *fakeBackups) SetSchedule(_ context.Context, desktopID string, req manager.ScheduleRequest) (*desktop.BackupSchedule, error) {
	d, err := f.desktops.Get(context.Background(), desktopID)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastSched = req
	t, err := f.pick(req.Target)
	if err != nil {
		return nil, err
	}
	s, err := req.Schedule(d.ID, t.ID, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	if f.schedules == nil {
		f.schedules = map[string]*desktop.BackupSchedule{}
	}
	f.schedules[d.ID] = s
	cp := *s
	return &cp, nil
}

func (f *fakeBackups) Schedule(_ context.Context, desktopID string) (*desktop.BackupSchedule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schedules[desktopID]
	if !ok {
		return nil, fmt.Errorf("desktop %s has no backup schedule: %w", desktopID, desktop.ErrNotFound)
	}
	cp := *s
	return &cp, nil
}

func (f *fakeBackups) DeleteSchedule(_ context.Context, desktopID, actor string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.schedules, desktopID)
	f.unscheduled = append(f.unscheduled, desktopID+" "+actor)
	return nil
}
