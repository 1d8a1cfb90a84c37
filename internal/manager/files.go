package manager

import (
	"context"
	"io/fs"

	"github.com/bureau/bureau/internal/desktop"
)

// HostFiles makes and removes a desktop's files on its host: bureau's own
// (hostfiles.Local) or a remote one (through libvirt's storage pools).
// Paths are the same on every host.
type HostFiles interface {
	// EnsureImage copies the base image at path to the same path on the
	// host unless a complete copy is there, reporting progress. replace
	// is asked before another image at that path (another build of it)
	// is replaced; its error keeps that file and fails the copy.
	EnsureImage(ctx context.Context, path string, replace func(ctx context.Context, why string) error, progress func(done, total int64)) error
	// MakeDir makes a desktop's folder, owned by its QEMU user.
	MakeDir(ctx context.Context, dir string, uid, gid int) error
	// Exists says whether a file is there.
	Exists(ctx context.Context, path string) (bool, error)
	// CreateOverlay makes path a qcow2 over base (at least sizeGiB), and
	// CreateDataDisk an empty qcow2 of sizeGiB, both owned by uid:gid,
	// 0600; neither replaces an existing file.
	CreateOverlay(ctx context.Context, base, path string, sizeGiB, uid, gid int) error
	CreateDataDisk(ctx context.Context, path string, sizeGiB, uid, gid int) error
	// Upload copies a file of bureau's own host to path on the host,
	// owned by uid:gid.
	Upload(ctx context.Context, local, path string, uid, gid int) error
	// Remove removes one file (none there is fine).
	Remove(ctx context.Context, path string) error
	// RemoveAllBut removes everything in dir but keep ("" for nothing),
	// and dir itself when nothing is kept; it says whether keep was there.
	RemoveAllBut(ctx context.Context, dir, keep string) (kept bool, err error)
}

// LocalFiles is what only bureau's own host keeps besides its desktops'
// files: templates' and spares' records and a warm create's SSH keys
// (small files read and written whole), a spare's seed kept in place
// (Grow, Overwrite), a reimage's new OS disk swapped in at once (Rename),
// a built template's files shared (Chmod, Disown), and the seed a remote
// host is sent (TempFile). What it makes is root's.
type LocalFiles interface {
	MkdirAll(ctx context.Context, dir string, mode fs.FileMode) error
	// ReadDir lists the names in dir (none when dir is not there).
	ReadDir(ctx context.Context, dir string) ([]string, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, b []byte, mode fs.FileMode) error
	Rename(ctx context.Context, from, to string) error
	Chmod(ctx context.Context, path string, mode fs.FileMode) error
	// Disown gives dir and everything in it to root (best effort).
	Disown(ctx context.Context, dir string)
	// Grow appends n zero bytes to a file (sparse).
	Grow(ctx context.Context, path string, n int64) error
	// Overwrite writes b over the start of a file in place and zeroes the
	// rest: a process that has it open reads the new bytes.
	Overwrite(ctx context.Context, path string, b []byte) error
	// TempFile makes an empty scratch file (pattern as os.CreateTemp's);
	// the caller removes it.
	TempFile(ctx context.Context, pattern string) (string, error)
}

// localHost is bureau's own host's files: what every desktop host does
// with its desktops' files, and what only this one keeps.
type localHost interface {
	HostFiles
	StoppedDisks
	FileSizes
	LocalFiles
}

// desktopFiles is what works on a desktop's files on the host they are
// on (filesOf).
type desktopFiles struct {
	Files HostFiles
	// Disks works on them while the VM is off (nil: not done there yet).
	Disks StoppedDisks
	// Sizes measures them (nil: not measured there).
	Sizes FileSizes
}

// desktopHosts reaches what is on a desktop's host, bureau's own or a
// remote one: its site (remote.go), its files there (filesOf), what works on
// its disks while its VM is off (stoppedDisks, stopped.go), a base image
// and a seed sent there (imageOn, uploadSeed) and its display (display.go).
type desktopHosts struct {
	// ops shows a copy's progress as the desktop's step (imageOn).
	ops *runner
	// local is bureau's own host's files (hostfiles.Local over Disks):
	// its desktops' (filesOf) and what only this host keeps.
	local localHost
	seeds SeedWriter
	// sites reaches remote hosts (Config.Sites; nil: bureau's own only).
	sites Sites
	// desktops lists the desktops on a host: those whose OS disks are
	// overlays on its copy of an image (imageOn).
	desktops interface {
		ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
	}
}

// filesOf is what works on d's files: on bureau's own host, its files
// here (hostfiles.Local); on a remote host, that host's (its Site's).
func (h *desktopHosts) filesOf(ctx context.Context, d *desktop.Desktop) (desktopFiles, error) {
	if !d.Remote() {
		return desktopFiles{Files: h.local, Disks: h.local, Sizes: h.local}, nil
	}
	s, err := h.site(ctx, d)
	if err != nil {
		return desktopFiles{}, err
	}
	return desktopFiles{Files: s.Files, Disks: s.Disks, Sizes: s.Sizes}, nil
}
