// Package apiv1 holds the shapes of the public API's version 1 responses
// (described in internal/api/openapi). They are apart from the domain
// types on purpose: a field renamed or added in the domain does not change
// what clients receive, and the API can say things in its own words. The
// converters in convert.go are the only place the two meet.
package apiv1

import "time"

// Desktop is a desktop as the API shows it.
type Desktop struct {
	ID                 string     `json:"id"`
	Owner              string     `json:"owner"`
	Name               string     `json:"name"`
	Image              string     `json:"image"`
	VCPUs              int        `json:"vcpus"`
	MemoryMiB          int        `json:"memory_mib"`
	DataDiskGiB        int        `json:"data_disk_gib"`
	State              string     `json:"state"`
	DesiredState       string     `json:"desired_state"`
	LastError          string     `json:"last_error,omitempty"`
	Operation          string     `json:"operation,omitempty"`
	OperationStep      string     `json:"operation_step,omitempty"`
	OperationStartedAt *time.Time `json:"operation_started_at,omitempty"`
	// Ready: it runs and its session is up, so exec, files and computer
	// use work (they answer 409 not_ready before). ReadyAt is when it
	// last became ready; Up how far a running desktop has come (booting,
	// agent, session) and WaitingFor what it still waits for (agent,
	// user, cloud-init, session).
	Ready       bool       `json:"ready"`
	ReadyAt     *time.Time `json:"ready_at,omitempty"`
	Up          string     `json:"up,omitempty"`
	WaitingFor  string     `json:"waiting_for,omitempty"`
	Accelerator string     `json:"accelerator"`
	// Control says who holds its mouse and keyboard (left out when bureau
	// keeps no people in the loop); NeedsHelp that a help request is
	// pending, PendingApprovals how many approval requests are.
	Control          *Control `json:"control,omitempty"`
	NeedsHelp        bool     `json:"needs_help"`
	PendingApprovals int      `json:"pending_approvals"`
	// DataDiskPath is where the data disk lives on the host (admins only).
	DataDiskPath       string        `json:"data_disk_path,omitempty"`
	IdleTimeoutSeconds int           `json:"idle_timeout_seconds"`
	NapAfterSeconds    int           `json:"nap_after_seconds"`
	SleepAfterSeconds  int           `json:"sleep_after_seconds"`
	RestartOnCrash     bool          `json:"restart_on_crash"`
	Network            NetworkPolicy `json:"network"`
	KeyboardLayout     string        `json:"keyboard_layout"`
	IP                 string        `json:"ip,omitempty"`
	// Host is the host it runs on ("local": the one bureau runs on).
	Host      string     `json:"host"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// NetworkPolicy is what a desktop may reach outside.
type NetworkPolicy struct {
	AllowOut []string `json:"allow_out"`
	DenyOut  []string `json:"deny_out"`
	DenyDNS  bool     `json:"deny_dns,omitempty"`
}

// DeleteResult says what a delete did with the data disk.
type DeleteResult struct {
	Desktop     *Desktop `json:"desktop"`
	DataDeleted bool     `json:"data_deleted"`
	// DataDiskKept is where the kept data disk is on the host (admins only).
	DataDiskKept string `json:"data_disk_kept,omitempty"`
}

// Event is one entry of a desktop's history.
type Event struct {
	ID        string    `json:"id"`
	DesktopID string    `json:"desktop_id"`
	Type      string    `json:"type"`
	Message   string    `json:"message"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
}

// Image is a base image desktops boot from.
type Image struct {
	Name       string    `json:"name"`
	OS         string    `json:"os"`
	Version    string    `json:"version"`
	Path       string    `json:"path,omitempty"` // admins only
	SizeBytes  int64     `json:"size_bytes"`
	SHA256     string    `json:"sha256"`
	RecipeHash string    `json:"recipe_hash,omitempty"`
	Source     string    `json:"source"`
	CreatedAt  time.Time `json:"created_at"`
}

// Template is a warm template: a desktop booted once and saved with its RAM.
type Template struct {
	Key       string    `json:"key"`
	Image     string    `json:"image"`
	VCPUs     int       `json:"vcpus"`
	MemoryMiB int       `json:"memory_mib"`
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	BuildTime string    `json:"build_time,omitempty"`
	// Spares is how many desktops of it are restored ahead, paused, for
	// creates to take.
	Spares int `json:"spares"`
}

// Snapshot is a saved point of a desktop's disks (and RAM).
type Snapshot struct {
	ID          string     `json:"id"`
	DesktopID   string     `json:"desktop_id"`
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Scope       string     `json:"scope"`
	Memory      bool       `json:"memory"`
	Parent      string     `json:"parent,omitempty"`
	SizeBytes   int64      `json:"size_bytes"`
	CreatedAt   time.Time  `json:"created_at"`
	RevertedAt  *time.Time `json:"reverted_at,omitempty"`
}

// Token is an API token's record (never its secret).
type Token struct {
	ID           string     `json:"id"`
	Owner        string     `json:"owner"`
	Name         string     `json:"name"`
	Scope        string     `json:"scope"`
	CreatedAt    time.Time  `json:"created_at"`
	LastUsedAt   *time.Time `json:"last_used_at,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	RevokedAt    *time.Time `json:"revoked_at,omitempty"`
	DesktopID    string     `json:"desktop_id,omitempty"`
	ComputerOnly bool       `json:"computer_only,omitempty"`
	ParentID     string     `json:"parent_id,omitempty"`
	// Kind is "session" for a sign-in (docs/sign-in.md), else "api".
	Kind string `json:"kind"`
	// Role is a team token's role in its team (owner = the team), ""
	// for tokens that are not a team's; Member the person it acts for
	// (docs/teams.md).
	Role   string `json:"role"`
	Member string `json:"member"`
}

// ConsoleToken is a console link's record (never its secret).
type ConsoleToken struct {
	ID         string `json:"id"`
	DesktopID  string `json:"desktop_id"`
	Owner      string `json:"owner"`
	ViewOnly   bool   `json:"view_only"`
	ScreenOnly bool   `json:"screen_only"`
	CreatedBy  string `json:"created_by"`
	// Name is who the link is for ("Dana"), when its maker said.
	Name         string     `json:"name,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	ExpiresAt    time.Time  `json:"expires_at"`
	RevokedAt    *time.Time `json:"revoked_at,omitempty"`
	RevokeReason string     `json:"revoke_reason,omitempty"`
}

// Share is a live URL share link's record (never its secret).
type Share struct {
	ID        string     `json:"id"`
	DesktopID string     `json:"desktop_id"`
	Owner     string     `json:"owner"`
	Port      int        `json:"port"`
	ReadOnly  bool       `json:"read_only"`
	CreatedBy string     `json:"created_by,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Secret is a secret's record (never its value).
type Secret struct {
	Name      string    `json:"name"`
	Scope     string    `json:"scope"`
	DesktopID string    `json:"desktop_id,omitempty"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Desktops  []string  `json:"desktops,omitempty"`
}

// Quota is what one owner may use in total; 0 means no limit.
type Quota struct {
	Owner        string `json:"owner"`
	Plan         string `json:"plan"`
	MaxDesktops  int    `json:"max_desktops"`
	MaxVCPUs     int    `json:"max_vcpus"`
	MaxMemoryMiB int    `json:"max_memory_mib"`
	MaxDiskGiB   int    `json:"max_disk_gib"`
	MaxSnapshots int    `json:"max_snapshots"`
}

// Usage is what an owner uses now.
type Usage struct {
	Desktops  int `json:"desktops"`
	VCPUs     int `json:"vcpus"`
	MemoryMiB int `json:"memory_mib"`
	DiskMiB   int `json:"disk_mib"`
	Snapshots int `json:"snapshots"`
}

// Stats are a running desktop's resource figures.
type Stats struct {
	CPUTimeNs          uint64     `json:"cpu_time_ns"`
	VCPUs              int        `json:"vcpus"`
	MemoryMaxKiB       uint64     `json:"memory_max_kib"`
	MemoryCurrentKiB   uint64     `json:"memory_current_kib"`
	MemoryRSSKiB       uint64     `json:"memory_rss_kib"`
	MemoryAvailableKiB uint64     `json:"memory_available_kib,omitempty"`
	MemoryUnusedKiB    uint64     `json:"memory_unused_kib,omitempty"`
	MemoryUsableKiB    uint64     `json:"memory_usable_kib,omitempty"`
	Disks              []Disk     `json:"disks"`
	Networks           []NetStats `json:"networks"`
}

// Disk is one disk's I/O counters and sizes.
type Disk struct {
	Name            string `json:"name"`
	Path            string `json:"path,omitempty"` // admins only
	ReadBytes       uint64 `json:"read_bytes"`
	WriteBytes      uint64 `json:"write_bytes"`
	ReadRequests    uint64 `json:"read_requests"`
	WriteRequests   uint64 `json:"write_requests"`
	AllocationBytes uint64 `json:"allocation_bytes"`
	CapacityBytes   uint64 `json:"capacity_bytes"`
}

// NetStats are one network interface's counters.
type NetStats struct {
	Name    string `json:"name"`
	RxBytes uint64 `json:"rx_bytes"`
	TxBytes uint64 `json:"tx_bytes"`
}

// URL is one port's live URL.
type URL struct {
	Port int `json:"port"`
	// URL is the wildcard-host form (when the client can resolve it),
	// PathURL the /preview/ form on bureau's own host.
	URL     string `json:"url,omitempty"`
	PathURL string `json:"path_url"`
	Public  bool   `json:"public"`
	Service string `json:"service,omitempty"`
	Shares  int    `json:"shares"`
}

// ShareCreated is a new share link: its record and its URLs, which carry
// the secret and are shown once.
type ShareCreated struct {
	Share   *Share `json:"share"`
	URL     string `json:"url,omitempty"`
	PathURL string `json:"path_url"`
}

// Host is a libvirt host desktops run on, as bureau last checked it.
type Host struct {
	Name   string            `json:"name"`
	URI    string            `json:"uri"`
	Labels map[string]string `json:"labels"`
	// State is connecting, up or unreachable.
	State          string `json:"state"`
	Hostname       string `json:"hostname"`
	LibvirtVersion string `json:"libvirt_version"`
	Accelerator    string `json:"accelerator"`
	CPUs           int    `json:"cpus"`
	MemoryMiB      int64  `json:"memory_mib"`
	FreeMemoryMiB  int64  `json:"free_memory_mib"`
	// DiskMiB and FreeDiskMiB: the filesystem of bureau's data directory
	// there (0 until measured).
	DiskMiB     int64 `json:"disk_mib"`
	FreeDiskMiB int64 `json:"free_disk_mib"`
	// Desktops is how many live desktops are placed there;
	// CommittedMemoryMiB the memory of those that hold RAM now (not
	// stopped, hibernated, crashed or in error).
	Desktops           int   `json:"desktops"`
	CommittedMemoryMiB int64 `json:"committed_memory_mib"`
	// Draining: bureau is moving every desktop off it and places none
	// there; Drain is its drain under way, or its last one since bureau
	// started.
	Draining bool   `json:"draining"`
	Drain    *Drain `json:"drain,omitempty"`
	// SSHAddress and SSHHostKey: how bureau reaches a remote host over SSH
	// (empty for the local one). Bridge and Subnet: bureau's desktop
	// network there.
	SSHAddress string `json:"ssh_address,omitempty"`
	SSHHostKey string `json:"ssh_host_key,omitempty"`
	Bridge     string `json:"bridge,omitempty"`
	Subnet     string `json:"subnet,omitempty"`
	// Ready: bureau's network and firewall are in place there; ReadyError
	// says what is not.
	Ready      bool       `json:"ready"`
	ReadyError string     `json:"ready_error,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
}

// Drain is a host's drain: every desktop moved off it, one at a time.
type Drain struct {
	StartedAt time.Time  `json:"started_at"`
	Done      bool       `json:"done"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Moving is the id of the desktop being moved now.
	Moving string `json:"moving,omitempty"`
	Moved  int    `json:"moved"`
	// Left names the desktops that could not be moved (by id) and why.
	Left map[string]string `json:"left"`
}

// PlacementRequest asks bureau to pick a desktop's host (when the create
// request names none): one whose labels include all of Labels.
type PlacementRequest struct {
	Labels map[string]string `json:"labels"`
}
