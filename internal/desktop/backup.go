package desktop

import (
	"fmt"
	"regexp"
	"time"
)

// Backup target kinds.
const (
	TargetS3  = "s3"  // S3-compatible object storage
	TargetDir = "dir" // a directory: local disk or a mounted share
)

// BackupTarget is where backups go: a bucket (and prefix) of an
// S3-compatible store, or a directory. Its secret key is kept encrypted
// and never shown.
type BackupTarget struct {
	ID   string
	Name string
	Kind string
	// Dir is a dir target's directory.
	Dir string
	// S3 is an s3 target's address and credentials.
	S3        S3Location
	CreatedAt time.Time
	CreatedBy string
}

// S3Location is a bucket of an S3-compatible store. SecretKey is empty
// when it is read back from the store unless asked for by the manager.
type S3Location struct {
	Endpoint  string // host:port
	Bucket    string
	Prefix    string
	Region    string
	AccessKey string
	SecretKey string
	// Insecure speaks plain HTTP (a store on loopback or a private net).
	Insecure bool
}

// Backup states.
const (
	BackupRunning  = "running"
	BackupComplete = "complete"
	BackupFailed   = "failed"
)

// Backup kinds.
const (
	BackupFull        = "full"
	BackupIncremental = "incremental"
)

// Backup consistency: what the guest's filesystems were when the disk was
// marked.
const (
	ConsistencyFilesystem = "filesystem" // frozen by the guest agent
	ConsistencyCrash      = "crash"      // as after a power cut
	ConsistencyStopped    = "stopped"    // the desktop was not running
)

// Backup is one copy of a desktop's data disk in a target. Only a complete
// backup can be restored; its manifest is written last.
type Backup struct {
	ID          string
	DesktopID   string
	DesktopName string
	Owner       string
	TargetID    string
	State       string
	Kind        string
	// WhyFull says why a backup is full rather than incremental (the
	// first, the previous one's mark gone from the disk, …).
	WhyFull     string
	Consistency string
	// Parent is the backup an incremental one was taken against.
	Parent string
	// Mark is the internal snapshot in the data disk that the backup read
	// (and the next one compares with).
	Mark string
	// DiskBytes is the data disk's virtual size; Image, VCPUs and
	// MemoryMiB the desktop's at the time, for a restore.
	DiskBytes int64
	Image     string
	VCPUs     int
	MemoryMiB int
	// Progress: bytes of the disk read (out of ReadTotal), chunks, and
	// bytes (compressed, encrypted) uploaded because the target lacked them.
	BytesRead  int64
	ReadTotal  int64
	Chunks     int
	ChunksNew  int
	BytesNew   int64
	StartedAt  time.Time
	FinishedAt *time.Time
	Error      string
}

// BackupCheck is the result of verifying a backup: every chunk it uses
// read back and checked against its hash.
type BackupCheck struct {
	BackupID string
	Chunks   int
	Missing  []string
	Corrupt  []string
	OK       bool
	Took     time.Duration
}

// BackupFilter narrows a list of backups; empty fields match all.
type BackupFilter struct {
	Owner     string // "" = every owner's (admins)
	DesktopID string
	TargetID  string
	State     string
}

var targetName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidateBackupTarget checks a target's name, kind and location.
func ValidateBackupTarget(t *BackupTarget) error {
	if !targetName.MatchString(t.Name) {
		return &ValidationError{Field: "name", Message: "1-63 characters: lower-case letters, digits or '-', starting with a letter or digit"}
	}
	switch t.Kind {
	case TargetDir:
		if t.Dir == "" || t.Dir[0] != '/' {
			return &ValidationError{Field: "dir", Message: "an absolute directory path"}
		}
	case TargetS3:
		switch {
		case t.S3.Endpoint == "":
			return &ValidationError{Field: "s3.endpoint", Message: "the store's host:port is required"}
		case t.S3.Bucket == "":
			return &ValidationError{Field: "s3.bucket", Message: "a bucket is required"}
		case t.S3.AccessKey == "" || t.S3.SecretKey == "":
			return &ValidationError{Field: "s3.access_key", Message: "access_key and secret_key are required"}
		}
	default:
		return &ValidationError{Field: "kind", Message: `must be "s3" or "dir"`}
	}
	return nil
}

// BackupSchedule backs a desktop up every EveryMinutes to a target, then
// thins its backups there out: the newest KeepLast, and the newest of each
// of the last KeepHourly hours, KeepDaily days and KeepWeekly weeks stay
// (the newest backup always does: the next one is taken against it).
type BackupSchedule struct {
	DesktopID    string
	TargetID     string
	EveryMinutes int
	KeepLast     int
	KeepHourly   int
	KeepDaily    int
	KeepWeekly   int
	NextAt       time.Time
	UpdatedAt    time.Time
	UpdatedBy    string
}

// Default backup schedule: hourly; keep 24 hourly, 7 daily, 4 weekly.
const (
	DefaultBackupEvery  = 60
	DefaultKeepHourly   = 24
	DefaultKeepDaily    = 7
	DefaultKeepWeekly   = 4
	MaxBackupKeep       = 1000
	MaxBackupEveryHours = 24 * 7
)

// ValidateBackupSchedule checks a schedule's period and retention.
func ValidateBackupSchedule(s *BackupSchedule) error {
	if s.EveryMinutes < 1 || s.EveryMinutes > MaxBackupEveryHours*60 {
		return &ValidationError{Field: "every_minutes", Message: fmt.Sprintf("from 1 to %d (a week)", MaxBackupEveryHours*60)}
	}
	for _, k := range []struct {
		field string
		n     int
	}{{"keep_last", s.KeepLast}, {"keep_hourly", s.KeepHourly}, {"keep_daily", s.KeepDaily}, {"keep_weekly", s.KeepWeekly}} {
		if k.n < 0 || k.n > MaxBackupKeep {
			return &ValidationError{Field: k.field, Message: fmt.Sprintf("from 0 to %d", MaxBackupKeep)}
		}
	}
	return nil
}
