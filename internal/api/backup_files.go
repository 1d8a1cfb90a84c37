package api

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/backup/extfs"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	"github.com/bureau/bureau/internal/manager"
	"github.com/gin-gonic/gin"
)

// BackupFiles reads the files of a backup without restoring it
// (*manager.BackupFiles): paths are the desktop's, under /home; a path the
// backup lacks is desktop.ErrNotFound. NoteFilesRestored records on a
// desktop that files were put back into it.
type BackupFiles interface {
	FileStat(ctx context.Context, backupID, path string) (*manager.BackupFile, error)
	FileList(ctx context.Context, backupID, path string, limit int) ([]manager.BackupFile, bool, error)
	FileRead(ctx context.Context, backupID, path string, w io.Writer) error
	FileTar(ctx context.Context, backupID, path string, w io.Writer) (extfs.TarCount, error)
	NoteFilesRestored(ctx context.Context, r manager.FilesRestored)
}

// backupGuest is what putting a backup's files back into a desktop uses of
// the guest's file service.
type backupGuest interface {
	Stat(ctx context.Context, domain, path, user string) (*guest.Stat, error)
	Write(ctx context.Context, domain string, req guest.WriteRequest, r io.Reader) (string, int64, error)
	Exec(ctx context.Context, domain string, r guest.ExecRequest) (*guest.ExecResult, error)
}

// maxBackupList bounds a folder's listing.
const maxBackupList = 10000

// invalidPath is a 400 (invalid_path): a path the contract refuses.
type invalidPath struct{ field, msg string }

func (e *invalidPath) Error() string { return e.msg }

// existsAlready is a 409 (exists): a restore would write over a path.
type existsAlready struct{ msg string }

func (e *existsAlready) Error() string { return e.msg }

func (s *backupHandlers) backupFileRoutes(v1 *gin.RouterGroup) {
	v1.GET("/backups/:backup/files", s.handle(s.listBackupFiles))
	v1.GET("/backups/:backup/files/content", s.backupFileContent)
	// Not counted with the heavy requests: what is heavy here, opening a
	// backup, is bounded by the two backups open at once.
	v1.POST("/backups/:backup/files/restore", s.handle(s.restoreBackupFiles))
}

// checkBackupPath checks a path as the contract asks: absolute, under
// /home, no "..", no control character or double quote, 4096 bytes at most.
func checkBackupPath(field, p string) (string, error) {
	bad := func(why string) error {
		return &invalidPath{field: field, msg: fmt.Sprintf("%s %q: %s", field, p, why)}
	}
	switch {
	case p == "":
		return "", &invalidPath{field: field, msg: field + " is missing"}
	case len(p) > 4096:
		return "", &invalidPath{field: field, msg: field + " is longer than 4096 bytes"}
	case !strings.HasPrefix(p, "/"):
		return "", bad("not absolute")
	case strings.ContainsRune(p, '"'):
		return "", bad(`holds a "`)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", &invalidPath{field: field, msg: field + " holds a control character"}
		}
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", bad("holds ..")
		}
	}
	p = path.Clean(p)
	if p != manager.HomeRoot && !strings.HasPrefix(p, manager.HomeRoot+"/") {
		return "", bad("not under " + manager.HomeRoot + " (a backup holds the desktop's /home)")
	}
	return p, nil
}

// backupFiles returns the backup in the path, if the caller may read it,
// and its files.
func (s *backupHandlers) backupFiles(c *gin.Context) (*desktop.Backup, BackupFiles, error) {
	b, err := s.ownedBackup(c)
	if err != nil {
		return nil, nil, err
	}
	if s.files == nil {
		return nil, nil, fmt.Errorf("this bureau cannot read backups' files: %w", desktop.ErrUnavailable)
	}
	return b, s.files, nil
}

// unixMode writes permission bits as octal ("0644", "4755").
func unixMode(m fs.FileMode) string {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return fmt.Sprintf("%04o", v)
}

func fromBackupFile(p string, e *manager.BackupFile) apiv1.BackupFile {
	return apiv1.BackupFile{Name: path.Base(p), Path: p, Type: e.Type, Size: e.Size, Mode: unixMode(e.Mode),
		Modified: e.ModTime, LinkTarget: e.LinkTarget}
}

// listBackupFiles describes a path of a backup and lists a folder.
func (s *backupHandlers) listBackupFiles(c *gin.Context) (reply, error) {
	b, files, err := s.backupFiles(c)
	if err != nil {
		return reply{}, err
	}
	p := c.Query("path")
	if _, given := c.GetQuery("path"); !given {
		p = manager.HomeRoot
	}
	if p, err = checkBackupPath("path", p); err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	e, err := files.FileStat(ctx, b.ID, p)
	if err != nil {
		return reply{}, err
	}
	f := fromBackupFile(p, e)
	out := apiv1.BackupFiles{BackupID: b.ID, Path: p, Type: f.Type, Size: f.Size, Mode: f.Mode, Modified: f.Modified,
		LinkTarget: f.LinkTarget, Entries: []apiv1.BackupFile{}}
	if e.Type == extfs.TypeDir {
		list, truncated, err := files.FileList(ctx, b.ID, p, maxBackupList)
		if err != nil {
			return reply{}, err
		}
		for i := range list {
			out.Entries = append(out.Entries, fromBackupFile(path.Join(p, list[i].Name), &list[i]))
		}
		out.Truncated = truncated
	}
	return reply{http.StatusOK, out}, nil
}

// backupFileContent downloads a file of a backup, or a folder as a tar.
func (s *backupHandlers) backupFileContent(c *gin.Context) {
	b, files, err := s.backupFiles(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	p, err := checkBackupPath("path", c.Query("path"))
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	e, err := files.FileStat(ctx, b.ID, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	name := path.Base(p)
	switch e.Type {
	case extfs.TypeFile:
		c.Header("Content-Type", "application/octet-stream")
		c.Header("Content-Length", strconv.FormatInt(e.Size, 10))
	case extfs.TypeDir:
		c.Header("Content-Type", "application/x-tar")
		name += ".tar"
	default:
		what := "a symlink to " + e.LinkTarget + ": ask for its target instead"
		if e.Type != extfs.TypeSymlink {
			what = "neither a file nor a folder"
		}
		s.fail(c, &invalidPath{field: "path", msg: fmt.Sprintf("%s is %s", p, what)})
		return
	}
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	c.Status(http.StatusOK)
	if e.Type == extfs.TypeFile {
		err = files.FileRead(ctx, b.ID, p, c.Writer)
	} else {
		_, err = files.FileTar(ctx, b.ID, p, c.Writer)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		// Headers are gone: cut the connection so the client sees a short
		// body rather than a complete-looking one.
		s.log.Error("backup file download failed", "backup", b.ID, "path", p, "err", err)
		panic(http.ErrAbortHandler)
	}
}
