package manager

import (
	"context"
	"errors"
	"testing"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/hostfiles"
)

// A desktop's files are worked on through its host's: bureau's own files
// here, a remote host's through its site; a host bureau cannot reach has
// none.
func TestFilesOfADesktopAreItsHosts(t *testing.T) {
	h, files, _, _, sites := newRemoteHarness(t)
	ctx := context.Background()
	here, err := h.m.hosts.filesOf(ctx, &desktop.Desktop{ID: "a", Host: desktop.LocalHost})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := here.Files.(*hostfiles.Local); !ok || any(here.Disks) != any(here.Files) || any(here.Sizes) != any(here.Files) {
		t.Errorf("bureau's own host's files: %#v", here)
	}
	there, err := h.m.hosts.filesOf(ctx, &desktop.Desktop{ID: "b", Host: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if there.Files != files || there.Disks != files || there.Sizes != files {
		t.Errorf("host two's files: %#v", there)
	}
	if _, err := h.m.hosts.filesOf(ctx, &desktop.Desktop{ID: "c", Host: "three"}); err == nil {
		t.Error("files on a host that is not bureau's")
	}
	// A host that does not work on stopped disks refuses it, by name.
	sites.site.Disks = nil
	var ce *desktop.ConflictError
	if _, err := h.m.hosts.stoppedDisks(ctx, &desktop.Desktop{ID: "b", Name: "far", Host: "two"}); !errors.As(err, &ce) {
		t.Errorf("stopped disks on a host without them: %v", err)
	}
	h.m.hosts.sites = nil
	if _, err := h.m.hosts.filesOf(ctx, &desktop.Desktop{ID: "b", Host: "two"}); !errors.Is(err, desktop.ErrHostGone) {
		t.Errorf("files on a remote host without sites: %v", err)
	}
}
