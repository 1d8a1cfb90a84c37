package libvirt

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/bureau/bureau/internal/hosts"
)

// A host's disk is the filesystem of bureau's images folder
// (DATA_DIR/images, the same path on every host), where base images and,
// beside it, desktops' disks live. The local host's is measured here
// with statfs; a remote host's through the storage pool whose target is
// that folder (made on the first image copy), else through any running
// pool of bureau's under DATA_DIR (a desktop's folder). A health check
// never makes, starts or builds a pool: with none, the disk stays
// unmeasured (0).

// HostDialer dials hosts for the registry and tells each link where its
// disk is.
type HostDialer struct {
	// ImagesDir is bureau's images folder ("" leaves disks unmeasured).
	ImagesDir string
	// LocalURI is the host bureau runs on: its folder is on this
	// machine, measured without libvirt.
	LocalURI string
}

// Dial is DialHost, for a link that measures the host's disk too.
func (d HostDialer) Dial(ctx context.Context, uri string) (hosts.Link, error) {
	l, err := dialHost(ctx, uri)
	if err != nil {
		return nil, err
	}
	if d.ImagesDir != "" {
		l.imagesDir, l.local = filepath.Clean(d.ImagesDir), uri == d.LocalURI
	}
	return l, nil
}

// disk measures the link's host's disk, in MiB (0, 0 when it cannot). It
// runs within the caller's call.
func (l *HostLink) disk() (total, free int64) {
	switch {
	case l.imagesDir == "":
		return 0, 0
	case l.local:
		return statfsMiB(l.imagesDir)
	default:
		return l.storage().DiskOf(l.imagesDir)
	}
}

// statfsMiB is the size and free space of the filesystem holding dir, or
// of its parent while dir is not made yet. Free space is counted as
// libvirt's dir pools count it on remote hosts (free blocks, root's
// reserve included; df shows less), so hosts compare alike.
func statfsMiB(dir string) (total, free int64) {
	for _, d := range []string{dir, filepath.Dir(dir)} {
		var st syscall.Statfs_t
		if syscall.Statfs(d, &st) != nil {
			continue
		}
		unit := uint64(st.Frsize)
		if unit == 0 {
			unit = uint64(st.Bsize)
		}
		return int64(st.Blocks * unit >> 20), int64(st.Bfree * unit >> 20)
	}
	return 0, 0
}
