package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/backup/extfs"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// restoreBackupFiles puts a file or folder of a backup back into a running
// desktop the caller owns, through the guest's file service: a file is
// uploaded as every upload is (beside, then moved into place); a folder
// goes as a tar to a scratch file in the guest, unpacked there as the
// desktop's user.
func (s *backupHandlers) restoreBackupFiles(c *gin.Context) (reply, error) {
	b, files, err := s.backupFiles(c)
	if err != nil {
		return reply{}, err
	}
	var req apiv1.BackupFilesRestore
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	from, err := checkBackupPath("path", req.Path)
	if err != nil {
		return reply{}, err
	}
	if req.To == "" {
		req.To = from
	}
	to, err := checkBackupPath("to", req.To)
	if err != nil {
		return reply{}, err
	}
	if s.guest == nil {
		return reply{}, fmt.Errorf("this bureau reaches no guests: %w", desktop.ErrUnavailable)
	}
	d, err := s.writableDesktop(c, req.Desktop)
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	e, err := files.FileStat(ctx, b.ID, from)
	if err != nil {
		return reply{}, err
	}
	if e.Type != extfs.TypeFile && e.Type != extfs.TypeDir {
		return reply{}, &invalidPath{field: "path", msg: fmt.Sprintf("%s is a %s: restore a file or a folder", from, e.Type)}
	}
	domain := d.DomainName()
	if _, err := s.guest.Stat(ctx, domain, to, ""); err == nil && !req.Overwrite {
		return reply{}, &existsAlready{msg: fmt.Sprintf("%s exists in desktop %s (overwrite: true writes over it)", to, d.Name)}
	} else if err != nil && !errors.Is(err, desktop.ErrNotFound) {
		return reply{}, err
	}
	var n extfs.TarCount
	if e.Type == extfs.TypeFile {
		n, err = s.restoreFile(ctx, files, b.ID, from, to, domain, e)
	} else {
		n, err = s.restoreFolder(ctx, files, b.ID, from, to, domain)
	}
	if err != nil {
		return reply{}, err
	}
	files.NoteFilesRestored(ctx, manager.FilesRestored{BackupID: b.ID, DesktopID: d.ID, Path: from, To: to,
		Files: n.Files, Bytes: n.Bytes, Actor: actor(c)})
	return reply{http.StatusOK, apiv1.BackupFilesRestored{BackupID: b.ID, DesktopID: d.ID, Path: from, To: to,
		Files: n.Files, Bytes: n.Bytes}}, nil
}

// writableDesktop finds the desktop a request names (id or name) among
// those the caller may write the files of, running and ready.
func (s *backupHandlers) writableDesktop(c *gin.Context, idOrName string) (*desktop.Desktop, error) {
	if idOrName == "" {
		return nil, &desktop.ValidationError{Field: "desktop", Message: "name the desktop (id or name) to restore into"}
	}
	d, err := s.ownedRef(c, idOrName)
	if err != nil {
		return nil, err
	}
	const op = "restore files into"
	if d.State != desktop.StateRunning {
		return nil, &desktop.TransitionError{Op: op, State: d.State}
	}
	return s.readyNow(c, d, op)
}

// ownedRef is the caller's desktop with id or name ref.
func (s *backupHandlers) ownedRef(c *gin.Context, ref string) (*desktop.Desktop, error) {
	d, err := s.ownedID(c, ref)
	if errors.Is(err, desktop.ErrNotFound) {
		d, err = s.desktopNamed(c, ref)
	}
	return d, err
}

// desktopNamed finds the caller's desktop by name.
func (s *backupHandlers) desktopNamed(c *gin.Context, name string) (*desktop.Desktop, error) {
	list, err := s.lifecycle.List(c.Request.Context(), desktop.Filter{Owner: caller(c).Owner})
	if err != nil {
		return nil, err
	}
	for _, d := range list {
		if d.Name == name && d.DeletedAt == nil {
			c.Set(ctxSubjectOwner, d.Owner) // for the audit log
			return d, nil
		}
	}
	return nil, fmt.Errorf("desktop %s: %w", name, desktop.ErrNotFound)
}

// restoreFile uploads one file of the backup to `to` (parents made), with
// its mode, then sets its time.
func (s *backupHandlers) restoreFile(ctx context.Context, files BackupFiles, id, from, to, domain string, e *manager.BackupFile) (extfs.TarCount, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(files.FileRead(ctx, id, from, pw)) }()
	_, n, err := s.guest.Write(ctx, domain, guest.WriteRequest{Path: to, Mode: uint32(e.Mode.Perm()), Parents: true}, pr)
	pr.CloseWithError(err)
	if err != nil {
		return extfs.TarCount{}, err
	}
	stamp := e.ModTime.UTC().Format("2006-01-02T15:04:05Z")
	if res, err := s.guest.Exec(ctx, domain, guest.ExecRequest{Argv: []string{"touch", "-m", "-d", stamp, "--", to}}); err != nil || res.ExitCode != 0 {
		s.log.Warn("restored file keeps the time of its restore", "path", to, "err", err)
	}
	return extfs.TarCount{Files: 1, Bytes: n}, nil
}

// untarScript makes $1 and unpacks the tar $2 into it as the user (modes
// and times from the tar, owned by the user), then removes the tar.
const untarScript = `mkdir -p -- "$1" && tar -x -p --no-same-owner -f "$2" -C "$1"; rc=$?; rm -f -- "$2"; exit $rc`

// restoreFolder uploads a folder of the backup as a tar to a scratch file
// in the guest and unpacks it into `to`.
func (s *backupHandlers) restoreFolder(ctx context.Context, files BackupFiles, id, from, to, domain string) (extfs.TarCount, error) {
	tmp := "/tmp/.bureau-restore-" + randomSuffix() + ".tar"
	pr, pw := io.Pipe()
	counted := make(chan extfs.TarCount, 1)
	go func() {
		n, err := files.FileTar(ctx, id, from, pw)
		counted <- n
		pw.CloseWithError(err)
	}()
	_, _, err := s.guest.Write(ctx, domain, guest.WriteRequest{Path: tmp, Mode: 0o600, Parents: true}, pr)
	pr.CloseWithError(err)
	n := <-counted
	if err != nil {
		s.guest.Exec(context.WithoutCancel(ctx), domain, guest.ExecRequest{Argv: []string{"rm", "-f", "--", tmp}})
		return n, err
	}
	res, err := s.guest.Exec(ctx, domain, guest.ExecRequest{Argv: []string{"/bin/sh", "-c", untarScript, "sh", to, tmp}, TimeoutS: 3600})
	if err != nil {
		return n, err
	}
	if res.ExitCode != 0 {
		return n, fmt.Errorf("unpack %s into %s: exit %d: %s", from, to, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return n, nil
}

func randomSuffix() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
