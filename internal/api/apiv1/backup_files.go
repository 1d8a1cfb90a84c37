package apiv1

import "time"

// BackupFile is a file, folder, symlink or other thing in a backup, at
// its path in the desktop (under /home).
type BackupFile struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, dir, symlink, other
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"` // octal permission bits, "0644"
	Modified   time.Time `json:"modified"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// BackupFiles describes a path of a backup and, for a folder, what it
// holds, sorted by name (entries is [] unless type is dir).
type BackupFiles struct {
	BackupID   string       `json:"backup_id"`
	Path       string       `json:"path"`
	Type       string       `json:"type"`
	Size       int64        `json:"size"`
	Mode       string       `json:"mode"`
	Modified   time.Time    `json:"modified"`
	LinkTarget string       `json:"link_target,omitempty"`
	Entries    []BackupFile `json:"entries"`
	// Truncated: the folder holds more than the entries listed.
	Truncated bool `json:"truncated,omitempty"`
}

// BackupFilesRestore asks to put a file or folder of a backup back into a
// running desktop.
type BackupFilesRestore struct {
	Path    string `json:"path"`
	Desktop string `json:"desktop"`
	// To defaults to Path.
	To        string `json:"to,omitempty"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// BackupFilesRestored counts what a restore of files wrote.
type BackupFilesRestored struct {
	BackupID  string `json:"backup_id"`
	DesktopID string `json:"desktop_id"`
	Path      string `json:"path"`
	To        string `json:"to"`
	Files     int    `json:"files"`
	Bytes     int64  `json:"bytes"`
}
