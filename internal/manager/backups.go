package manager

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/backup"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/secrets"
)

// TargetRequest asks for a new backup target.
type TargetRequest struct {
	Name  string
	Kind  string // desktop.TargetS3 or desktop.TargetDir
	Dir   string
	S3    desktop.S3Location
	Actor string
}

// BackupRequest asks for a backup of a desktop's data disk.
type BackupRequest struct {
	// Target is the target's id or name ("" = the only one there is).
	Target string
	Actor  string
}

// BackupFilter narrows a list of backups.
type BackupFilter = desktop.BackupFilter

// RestoreRequest asks for a new desktop from a backup.
type RestoreRequest struct {
	Name  string
	Owner string
	Actor string
	// Unlimited skips the owner's quota (admins).
	Unlimited bool
}

// BackupsConfig turns backups on (Config.Backups): where targets, backups
// and schedules are recorded (store.BackupRecords is all three), the
// install's backup key (chunks and manifests are encrypted with it; a fresh
// install with the same key reads them), and the key target secrets are
// sealed with (the secrets key).
type BackupsConfig struct {
	Targets   TargetRecords
	Records   BackupRecords
	Schedules ScheduleRecords
	Key       []byte
	SealKey   []byte
	// AtOnce bounds the backups and restores that read or write disks at
	// the same time on this host (0 = 2).
	AtOnce int
	// Ended, when set, is told of every backup that completed or failed
	// (metrics).
	Ended func(*desktop.Backup)
}

// TargetRecords keeps backup targets, their S3 secret sealed.
type TargetRecords interface {
	CreateTarget(ctx context.Context, t *desktop.BackupTarget, sealed string) error
	Target(ctx context.Context, idOrName string) (*desktop.BackupTarget, string, error)
	Targets(ctx context.Context) ([]*desktop.BackupTarget, error)
	DeleteTarget(ctx context.Context, id string) error
}

// BackupRecords keeps backups.
type BackupRecords interface {
	CreateBackup(ctx context.Context, b *desktop.Backup) error
	UpdateBackup(ctx context.Context, b *desktop.Backup) error
	GetBackup(ctx context.Context, id string) (*desktop.Backup, error)
	ListBackups(ctx context.Context, f desktop.BackupFilter) ([]*desktop.Backup, error)
	FailRunning(ctx context.Context, why string) (int64, error)
	DeleteBackup(ctx context.Context, id string) error
}

// ScheduleRecords keeps desktops' backup schedules.
type ScheduleRecords interface {
	PutSchedule(ctx context.Context, s *desktop.BackupSchedule) error
	Schedule(ctx context.Context, desktopID string) (*desktop.BackupSchedule, error)
	DeleteSchedule(ctx context.Context, desktopID string) error
	DueSchedules(ctx context.Context, now time.Time) ([]*desktop.BackupSchedule, error)
	ScheduleNext(ctx context.Context, desktopID string, at time.Time) error
}

// Backups copies desktops' data disks to backup targets and restores them
// into new desktops or over a stopped desktop's data disk; its exported
// methods are the API's Backups. A backup
// marks the data disk with an internal snapshot and reads that snapshot's
// clusters (consistent while the VM runs: they are copy-on-write); the next
// backup compares its mark with the previous one to read only what changed
// (backup_take.go). Restores are creates whose data disk comes from the
// target (backup_restore.go), or write it over a stopped desktop's
// (backup_onto.go).
type Backups struct {
	ops       *runner
	targets   TargetRecords
	records   BackupRecords
	schedules ScheduleRecords
	vms       markVMs
	hosts     diskHosts
	creates   restoreCreates
	snaps     restoreSnapshots
	log       *slog.Logger

	key   []byte
	seal  cipher.AEAD
	ended func(*desktop.Backup)
	// slots bounds the backups and restores moving data at once.
	slots chan struct{}

	// files are the backups opened to read their files (backup_files.go).
	files *BackupFiles

	// locks keep sweeps of a target apart from its readers and writers
	// (backup_keep.go).
	locks targetLocks

	mu sync.Mutex
	// running are the backups taken now, by desktop.
	running map[string]string
	// failures counts each desktop's failed backups in a row, for the
	// retries of its schedule (backup_retry.go).
	failures map[string]int
}

// markVMs marks a running VM's data disk with an internal snapshot and
// removes such marks (QMP, quiesced by the guest agent when it answers).
type markVMs interface {
	LiveDiskSnapshot(ctx context.Context, name, snap string, files []string) (quiesced bool, err error)
	DeleteLiveDiskSnapshot(ctx context.Context, name, snap string, files []string) error
}

// restoreCreates makes the desktop a restore fills (creator.Create).
type restoreCreates interface {
	Create(ctx context.Context, req CreateRequest) (*desktop.Desktop, error)
}

func newBackups(cfg BackupsConfig, ops *runner, vms markVMs, hosts diskHosts, creates restoreCreates, snaps restoreSnapshots, log *slog.Logger) *Backups {
	b := &Backups{ops: ops, targets: cfg.Targets, records: cfg.Records, schedules: cfg.Schedules, vms: vms, hosts: hosts, creates: creates, snaps: snaps, log: log,
		key: cfg.Key, ended: cfg.Ended, running: map[string]string{}, failures: map[string]int{}}
	b.files = newBackupFiles(b, "")
	atOnce := cfg.AtOnce
	if atOnce == 0 {
		atOnce = 2
	}
	b.slots = make(chan struct{}, max(atOnce, 1))
	if len(cfg.SealKey) == 32 {
		b.seal, _ = secrets.AEAD(cfg.SealKey)
	}
	return b
}

// Backups takes, lists, verifies and restores backups (the API's Backups).
func (m *Manager) Backups() *Backups { return m.backups }

// errBackupsOff answers every call when the install has no backup key.
var errBackupsOff = fmt.Errorf("backups are not set up on this install: %w", desktop.ErrUnavailable)

func (b *Backups) on() error {
	if b == nil || b.targets == nil || b.records == nil || b.schedules == nil || len(b.key) != 32 || b.seal == nil {
		return errBackupsOff
	}
	return nil
}

// settle marks the backups a previous run of bureau left running as failed:
// their manifests were never written, so they do not exist in the target.
func (b *Backups) settle(ctx context.Context) {
	if err := b.files.cache.Clear(ctx); err != nil {
		b.log.Warn("clearing the backups opened before bureau stopped", "err", err)
	}
	if b.on() != nil {
		return
	}
	n, err := b.records.FailRunning(ctx, "bureau stopped during the backup: nothing of it is kept; the next backup starts over")
	if err != nil {
		b.log.Error("settling interrupted backups", "err", err)
	} else if n > 0 {
		b.log.Info("backups interrupted by bureau's stop marked failed", "count", n)
	}
}

// CreateTarget records a backup target after checking bureau reaches it and
// holds the key its backups are written with.
func (b *Backups) CreateTarget(ctx context.Context, req TargetRequest) (*desktop.BackupTarget, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	t := &desktop.BackupTarget{ID: newID(), Name: req.Name, Kind: req.Kind, Dir: req.Dir, S3: req.S3,
		CreatedAt: time.Now().UTC(), CreatedBy: req.Actor}
	if t.Kind == desktop.TargetDir {
		t.S3 = desktop.S3Location{}
	} else {
		t.Dir = ""
	}
	if err := desktop.ValidateBackupTarget(t); err != nil {
		return nil, err
	}
	repo, err := b.openRepo(ctx, t)
	var unreachable *targetUnreachable
	if errors.As(err, &unreachable) {
		return nil, &desktop.ValidationError{Field: "target", Message: unreachable.Error()}
	}
	if err != nil {
		return nil, err
	}
	sealed, err := b.sealSecret(t)
	if err != nil {
		return nil, err
	}
	if err := b.targets.CreateTarget(ctx, t, sealed); err != nil {
		return nil, err
	}
	found, err := b.adopt(ctx, t, repo)
	if err != nil {
		b.log.Warn("listing the backups a new target already holds", "target", t.Name, "err", err)
	}
	b.log.Info("backup target added", "target", t.Name, "kind", t.Kind, "backups_found", found, "actor", req.Actor)
	out := *t
	out.S3.SecretKey = ""
	return &out, nil
}

// adopt records the complete backups a target already holds (written by
// this install before, or by another with the same key): a fresh install
// pointed at a target lists and restores them.
func (b *Backups) adopt(ctx context.Context, t *desktop.BackupTarget, repo *backup.Repo) (int, error) {
	list, err := repo.Manifests(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range list {
		created := m.CreatedAt
		// Mark: the backup's mark may still be in the desktop's disk (the
		// target added again): the next backup reads only what changed
		// since it, or is full when it is gone.
		bk := &desktop.Backup{ID: m.ID, DesktopID: m.DesktopID, DesktopName: m.DesktopName, Owner: m.Owner, TargetID: t.ID,
			State: desktop.BackupComplete, Kind: m.Kind, WhyFull: m.WhyFull, Consistency: m.Consistency, Parent: m.Parent, Mark: markPrefix + m.ID,
			DiskBytes: m.DiskBytes, Image: m.Image, VCPUs: m.VCPUs, MemoryMiB: m.MemoryMiB, Chunks: len(m.Cells),
			StartedAt: created, FinishedAt: &created}
		if err := b.records.CreateBackup(ctx, bk); err != nil {
			b.log.Info("a backup in the new target is already recorded", "backup", m.ID, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// Targets lists the backup targets.
func (b *Backups) Targets(ctx context.Context) ([]*desktop.BackupTarget, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	return b.targets.Targets(ctx)
}

// Target returns a target by id or name.
func (b *Backups) Target(ctx context.Context, idOrName string) (*desktop.BackupTarget, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	t, _, err := b.targets.Target(ctx, idOrName)
	return t, err
}

// DeleteTarget forgets a target and the backups bureau recorded in it
// (they stay in the target); refused while a backup to it runs.
func (b *Backups) DeleteTarget(ctx context.Context, idOrName, actor string) error {
	if err := b.on(); err != nil {
		return err
	}
	t, _, err := b.targets.Target(ctx, idOrName)
	if err != nil {
		return err
	}
	busy, err := b.records.ListBackups(ctx, desktop.BackupFilter{TargetID: t.ID, State: desktop.BackupRunning})
	if err != nil {
		return err
	}
	if len(busy) > 0 {
		return &desktop.ConflictError{Message: fmt.Sprintf("backup target %s: a backup to it is running (%s of desktop %s); try again when it ends",
			t.Name, busy[0].ID, busy[0].DesktopName)}
	}
	if err := b.targets.DeleteTarget(ctx, t.ID); err != nil {
		return err
	}
	b.log.Info("backup target removed; its backups stay in it", "target", t.Name, "actor", actor)
	return nil
}

// List returns backups, newest first.
func (b *Backups) List(ctx context.Context, f BackupFilter) ([]*desktop.Backup, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	if f.TargetID != "" {
		t, _, err := b.targets.Target(ctx, f.TargetID)
		if err != nil {
			return nil, err
		}
		f.TargetID = t.ID
	}
	return b.records.ListBackups(ctx, f)
}

// Get returns one backup.
func (b *Backups) Get(ctx context.Context, id string) (*desktop.Backup, error) {
	if err := b.on(); err != nil {
		return nil, err
	}
	return b.records.GetBackup(ctx, id)
}

// target returns the target a request names: by id or name, or the only
// one when it names none.
func (b *Backups) target(ctx context.Context, idOrName string) (*desktop.BackupTarget, error) {
	if idOrName != "" {
		t, sealed, err := b.targets.Target(ctx, idOrName)
		if errors.Is(err, desktop.ErrNotFound) {
			return nil, &desktop.ValidationError{Field: "target", Message: fmt.Sprintf("no backup target %q (see GET /api/v1/backup-targets)", idOrName)}
		}
		if err != nil {
			return nil, err
		}
		return t, b.unsealSecret(t, sealed)
	}
	all, err := b.targets.Targets(ctx)
	if err != nil {
		return nil, err
	}
	switch len(all) {
	case 0:
		return nil, &desktop.ValidationError{Field: "target", Message: "no backup target is set up: an admin adds one (POST /api/v1/backup-targets)"}
	case 1:
		return b.target(ctx, all[0].ID)
	}
	return nil, &desktop.ValidationError{Field: "target", Message: fmt.Sprintf("%d backup targets are set up: name one", len(all))}
}

// reach finds the target a request names (as target does, secret unsealed)
// and opens the repository in it.
func (b *Backups) reach(ctx context.Context, idOrName string) (*desktop.BackupTarget, *backup.Repo, error) {
	t, err := b.target(ctx, idOrName)
	if err != nil {
		return nil, nil, err
	}
	repo, err := b.openRepo(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	return t, repo, nil
}

// openRepo reaches a target and opens the repository in it with the
// install's key (made on first use).
func (b *Backups) openRepo(ctx context.Context, t *desktop.BackupTarget) (*backup.Repo, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var tg backup.Target
	var err error
	if t.Kind == desktop.TargetDir {
		tg, err = backup.NewDir(t.Dir)
	} else {
		tg, err = backup.NewS3(ctx, t.S3)
	}
	if err != nil {
		return nil, &targetUnreachable{name: t.Name, err: err}
	}
	repo, err := backup.Open(ctx, tg, b.key)
	if errors.Is(err, backup.ErrWrongKey) {
		return nil, &desktop.ConflictError{Message: fmt.Sprintf("backup target %s holds backups written with another backup key: this install cannot read them (copy the backup.key of the install that wrote them into the data directory)", t.Name)}
	}
	if err != nil {
		return nil, fmt.Errorf("backup target %s: %w", t.Name, err)
	}
	return repo, nil
}

// targetUnreachable is a target bureau cannot reach or use (address,
// bucket, credentials): invalid when it is being added, unavailable (503)
// when a backup, restore or verify needs it.
type targetUnreachable struct {
	name string
	err  error
}

func (e *targetUnreachable) Error() string { return fmt.Sprintf("backup target %s: %v", e.name, e.err) }

func (e *targetUnreachable) Unwrap() []error { return []error{e.err, desktop.ErrUnavailable} }

func (b *Backups) sealSecret(t *desktop.BackupTarget) (string, error) {
	if t.S3.SecretKey == "" {
		return "", nil
	}
	nonce := make([]byte, b.seal.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := b.seal.Seal(nonce, nonce, []byte(t.S3.SecretKey), []byte("backup-target:"+t.ID))
	return base64.StdEncoding.EncodeToString(out), nil
}

func (b *Backups) unsealSecret(t *desktop.BackupTarget, sealed string) error {
	if sealed == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(sealed)
	n := b.seal.NonceSize()
	if err != nil || len(raw) < n {
		return fmt.Errorf("backup target %s: its secret key is damaged", t.Name)
	}
	plain, err := b.seal.Open(nil, raw[:n], raw[n:], []byte("backup-target:"+t.ID))
	if err != nil {
		return fmt.Errorf("backup target %s: its secret key does not open with this install's secrets key", t.Name)
	}
	t.S3.SecretKey = string(plain)
	return nil
}
