package apiv1

import (
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// BackupTarget is where backups go (admins): a directory, or a bucket of an
// S3-compatible store. Its secret key is never shown.
type BackupTarget struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Kind      string      `json:"kind"`
	Dir       string      `json:"dir,omitempty"`
	S3        *S3Location `json:"s3,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	CreatedBy string      `json:"created_by"`
}

// S3Location is an s3 target's bucket and access key (never its secret key).
type S3Location struct {
	Endpoint  string `json:"endpoint"`
	Bucket    string `json:"bucket"`
	Prefix    string `json:"prefix,omitempty"`
	Region    string `json:"region,omitempty"`
	AccessKey string `json:"access_key"`
	Insecure  bool   `json:"insecure"`
}

// BackupTargetRequest asks for a new backup target.
type BackupTargetRequest struct {
	Name string         `json:"name"`
	Kind string         `json:"kind"`
	Dir  string         `json:"dir,omitempty"`
	S3   *S3Credentials `json:"s3,omitempty"`
}

// S3Credentials is an s3 target's bucket with its keys, as a request gives
// them (the secret key is taken, kept encrypted, and never shown again).
type S3Credentials struct {
	Endpoint  string `json:"endpoint"`
	Bucket    string `json:"bucket"`
	Prefix    string `json:"prefix,omitempty"`
	Region    string `json:"region,omitempty"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	Insecure  bool   `json:"insecure,omitempty"`
}

// ToS3Location is the domain location a request gives (the zero one for nil).
func (s *S3Credentials) ToS3Location() desktop.S3Location {
	if s == nil {
		return desktop.S3Location{}
	}
	return desktop.S3Location{Endpoint: s.Endpoint, Bucket: s.Bucket, Prefix: s.Prefix, Region: s.Region,
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, Insecure: s.Insecure}
}

// BackupRequest asks for a backup of a desktop's data disk.
type BackupRequest struct {
	// Target is the target's id or name ("": the only one there is).
	Target string `json:"target,omitempty"`
}

// RestoreRequest asks for a new desktop from a backup (Name), or for the
// backup written over a stopped desktop's data disk (Desktop, with
// ReplaceDataDisk set): one of the two.
type RestoreRequest struct {
	Name            string `json:"name,omitempty"`
	Desktop         string `json:"desktop,omitempty"`
	ReplaceDataDisk bool   `json:"replace_data_disk,omitempty"`
}

// BackupScheduleRequest sets a desktop's backup schedule whole: a field
// left out takes its default (every 60 minutes; keep the last 0, hourly
// 24, daily 7, weekly 4).
type BackupScheduleRequest struct {
	// Target is the target's id or name ("": the only one there is).
	Target       string `json:"target,omitempty"`
	EveryMinutes *int   `json:"every_minutes,omitempty"`
	KeepLast     *int   `json:"keep_last,omitempty"`
	KeepHourly   *int   `json:"keep_hourly,omitempty"`
	KeepDaily    *int   `json:"keep_daily,omitempty"`
	KeepWeekly   *int   `json:"keep_weekly,omitempty"`
}

// BackupSchedule backs a desktop up every EveryMinutes to a target, then
// thins its backups there out by the Keep counts (the newest always stays).
type BackupSchedule struct {
	DesktopID    string    `json:"desktop_id"`
	TargetID     string    `json:"target_id"`
	EveryMinutes int       `json:"every_minutes"`
	KeepLast     int       `json:"keep_last"`
	KeepHourly   int       `json:"keep_hourly"`
	KeepDaily    int       `json:"keep_daily"`
	KeepWeekly   int       `json:"keep_weekly"`
	NextAt       time.Time `json:"next_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	UpdatedBy    string    `json:"updated_by"`
}

// Backup is one backup of a desktop's data disk, as it goes (state
// running, its progress) and once it ended.
type Backup struct {
	ID          string `json:"id"`
	DesktopID   string `json:"desktop_id"`
	DesktopName string `json:"desktop_name"`
	Owner       string `json:"owner"`
	TargetID    string `json:"target_id"`
	State       string `json:"state"`
	Kind        string `json:"kind"`
	WhyFull     string `json:"why_full,omitempty"`
	// Consistency is empty until the disk is marked.
	Consistency string `json:"consistency"`
	Parent      string `json:"parent,omitempty"`
	DiskBytes   int64  `json:"disk_bytes"`
	Image       string `json:"image"`
	VCPUs       int    `json:"vcpus"`
	MemoryMiB   int    `json:"memory_mib"`
	// Progress: bytes of the disk read out of ReadTotal; chunks, those new
	// to the target and the bytes uploaded for them.
	BytesRead  int64      `json:"bytes_read"`
	ReadTotal  int64      `json:"read_total"`
	Chunks     int        `json:"chunks"`
	ChunksNew  int        `json:"chunks_new"`
	BytesNew   int64      `json:"bytes_new"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// BackupCheck is what verifying a backup found.
type BackupCheck struct {
	BackupID string   `json:"backup_id"`
	Chunks   int      `json:"chunks"`
	Missing  []string `json:"missing"`
	Corrupt  []string `json:"corrupt"`
	OK       bool     `json:"ok"`
	TookMs   int64    `json:"took_ms"`
}

// FromBackupTarget is t as the API shows it: never its secret key.
func FromBackupTarget(t *desktop.BackupTarget) *BackupTarget {
	if t == nil {
		return nil
	}
	out := &BackupTarget{ID: t.ID, Name: t.Name, Kind: t.Kind, Dir: t.Dir, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy}
	if t.Kind != desktop.TargetDir {
		out.S3 = &S3Location{Endpoint: t.S3.Endpoint, Bucket: t.S3.Bucket, Prefix: t.S3.Prefix, Region: t.S3.Region,
			AccessKey: t.S3.AccessKey, Insecure: t.S3.Insecure}
	}
	return out
}

// FromBackup is b as the API shows it (without its mark, bureau's own).
func FromBackup(b *desktop.Backup) *Backup {
	if b == nil {
		return nil
	}
	return &Backup{ID: b.ID, DesktopID: b.DesktopID, DesktopName: b.DesktopName, Owner: b.Owner, TargetID: b.TargetID,
		State: b.State, Kind: b.Kind, WhyFull: b.WhyFull, Consistency: b.Consistency, Parent: b.Parent,
		DiskBytes: b.DiskBytes, Image: b.Image, VCPUs: b.VCPUs, MemoryMiB: b.MemoryMiB,
		BytesRead: b.BytesRead, ReadTotal: b.ReadTotal, Chunks: b.Chunks, ChunksNew: b.ChunksNew, BytesNew: b.BytesNew,
		StartedAt: b.StartedAt, FinishedAt: b.FinishedAt, Error: b.Error}
}

// FromBackupCheck is c as the API shows it; its lists are never null.
func FromBackupCheck(c *desktop.BackupCheck) *BackupCheck {
	if c == nil {
		return nil
	}
	orEmpty := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return &BackupCheck{BackupID: c.BackupID, Chunks: c.Chunks, Missing: orEmpty(c.Missing), Corrupt: orEmpty(c.Corrupt),
		OK: c.OK, TookMs: c.Took.Milliseconds()}
}

// FromBackupSchedule is s as the API shows it.
func FromBackupSchedule(s *desktop.BackupSchedule) *BackupSchedule {
	if s == nil {
		return nil
	}
	return &BackupSchedule{DesktopID: s.DesktopID, TargetID: s.TargetID, EveryMinutes: s.EveryMinutes,
		KeepLast: s.KeepLast, KeepHourly: s.KeepHourly, KeepDaily: s.KeepDaily, KeepWeekly: s.KeepWeekly,
		NextAt: s.NextAt, UpdatedAt: s.UpdatedAt, UpdatedBy: s.UpdatedBy}
}
