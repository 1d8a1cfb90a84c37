//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// backupShown is a backup row of the web console, as browser/backups.mjs
// reads it: kind and state as its tag and pill show them.
type backupShown struct {
	ID        string `json:"id"`
	DesktopID string `json:"desktop_id"`
	Desktop   string `json:"desktop"`
	Link      bool   `json:"link"`
	Target    string `json:"target"`
	Kind      string `json:"kind"`
	State     string `json:"state"`
}

// fileShown is an entry of a backup's Files view, as browser/backups.mjs
// reads it.
type fileShown struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size string `json:"size"`
}

// checkBackupsPage drives the web console's backups in a real browser
// (browser/backups.mjs, read-only): the Backups tab of desktopID and the
// admins' Backups page must each show every backup in want, and the page
// a target at least and the header's Backups link. A backup in want with
// an ID is looked up by it (its Kind and State, when set, must be the ones
// shown); one without is matched by Kind and State, in the order of want,
// against the desktop's rows newest first (the order both show). The
// desktop must exist: its tab is opened, and the page links its backups to
// it. filesOf, when set, is a complete backup of the desktop whose Files
// view is opened from the tab and walked by clicks to /home/agent/work,
// which must list big, mid, note, numbers and sub (the files TestBackups
// wrote).
func checkBackupsPage(t *testing.T, s *server, desktopID string, want []apiv1.Backup, filesOf string) {
	t.Helper()
	shot := filepath.Join(os.TempDir(), "bureau-e2e-backups.png")
	pageShot := strings.TrimSuffix(shot, ".png") + "-page.png"
	filesShot := strings.TrimSuffix(shot, ".png") + "-files.png"
	var r struct {
		Nav     bool          `json:"nav"`
		Tab     []backupShown `json:"tab"`
		Targets []struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"targets"`
		Page  []backupShown `json:"page"`
		Files *struct {
			Path    string      `json:"path"`
			Crumbs  string      `json:"crumbs"`
			Entries []fileShown `json:"entries"`
		} `json:"files"`
		Errors []string `json:"errors"`
	}
	env := []string{"DESKTOP=" + desktopID, "SCREENSHOT=" + shot, "PAGE_SCREENSHOT=" + pageShot}
	if filesOf != "" {
		env = append(env, "FILES_BACKUP="+filesOf, "FILES_PATH=/home/agent/work", "FILES_SCREENSHOT="+filesShot)
	}
	consoleScript(t, s, "backups.mjs", "the backups in the browser (see "+shot+", "+pageShot+" and "+filesShot+")", &r, env...)
	if !r.Nav || len(r.Targets) == 0 || len(r.Errors) > 0 {
		t.Errorf("the Backups page (see %s): header link %v, targets %v, page errors %q", pageShot, r.Nav, r.Targets, r.Errors)
	}
	if filesOf != "" {
		var got []string
		if r.Files != nil {
			for _, e := range r.Files.Entries {
				got = append(got, e.Name+" "+e.Type)
			}
		}
		if want := "big file,mid file,note file,numbers file,sub dir"; r.Files == nil || r.Files.Path != "/home/agent/work" || strings.Join(got, ",") != want {
			t.Errorf("the Files view of backup %s (see %s) shows %+v, want /home/agent/work listing %s", filesOf, filesShot, r.Files, want)
		}
	}
	var page []backupShown // the page's rows of this desktop
	for _, b := range r.Page {
		if b.DesktopID == desktopID {
			page = append(page, b)
			if !b.Link {
				t.Errorf("the Backups page (see %s) does not link backup %s to its desktop %s, which exists: %+v", pageShot, b.ID, desktopID, b)
			}
		}
	}
	for _, where := range []struct {
		name, shot string
		rows       []backupShown
	}{
		{"desktop " + desktopID + "'s Backups tab", shot, r.Tab},
		{"the Backups page", pageShot, page},
	} {
		if missing := unshownBackups(want, where.rows); len(missing) > 0 {
			t.Errorf("%s (see %s) does not show %s; it shows %s", where.name, where.shot, strings.Join(missing, ", "), describeShown(where.rows))
		}
	}
}

// unshownBackups says which of want rows does not show (see
// checkBackupsPage for how they are matched).
func unshownBackups(want []apiv1.Backup, rows []backupShown) []string {
	byID := map[string]backupShown{}
	for _, b := range rows {
		byID[b.ID] = b
	}
	claimed := map[string]bool{}
	for _, w := range want {
		if w.ID != "" {
			claimed[w.ID] = true
		}
	}
	var missing []string
	next := 0 // the ordered match goes on from this row
	for _, w := range want {
		if w.ID != "" {
			b, ok := byID[w.ID]
			if !ok || (w.Kind != "" && b.Kind != w.Kind) || (w.State != "" && b.State != w.State) {
				missing = append(missing, fmt.Sprintf("backup %s (%s %s)", w.ID, w.Kind, w.State))
			}
			continue
		}
		found := false
		for ; next < len(rows) && !found; next++ {
			b := rows[next]
			found = !claimed[b.ID] && b.Kind == w.Kind && b.State == w.State
		}
		if !found {
			missing = append(missing, fmt.Sprintf("a %s %s backup (in order)", w.Kind, w.State))
		}
	}
	return missing
}

func describeShown(rows []backupShown) string {
	if len(rows) == 0 {
		return "no backups"
	}
	var out []string
	for _, b := range rows {
		out = append(out, fmt.Sprintf("%s %s %s", b.ID, b.Kind, b.State))
	}
	return strings.Join(out, "; ")
}
