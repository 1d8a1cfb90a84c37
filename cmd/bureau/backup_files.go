package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// backupFilesCmds are "bureau backup ls|get|restore-file": a backup's
// files read without restoring it.
func backupFilesCmds(cfg *config.Config) []*cobra.Command {
	ls := &cobra.Command{
		Use:   "ls ID [PATH]",
		Short: "List a folder of a backup (a path of the desktop, under /home; default /home)",
		Args:  cobra.RangeArgs(1, 2),
	}
	ls.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		p := "/home"
		if len(args) == 2 {
			p = args[1]
		}
		var fs apiv1.BackupFiles
		if err := c.do(ctx, "GET", backupFilesPath(args[0], "", p), nil, &fs); err != nil {
			return err
		}
		return backupFilesTable(ls.OutOrStdout(), fs)
	})

	var out string
	var force bool
	get := &cobra.Command{
		Use:   "get ID PATH",
		Short: "Download a file of a backup, or a folder as a tar (-o FILE; - for stdout)",
		Long: `Download a file of a backup, or a folder as an uncompressed tar of what it
holds, without restoring the backup. The local file is named by -o (- writes
to stdout), else by the file's base name or the folder's name with .tar;
an existing local file is kept unless --force.`,
		Args: cobra.ExactArgs(2),
	}
	get.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		return getBackupFile(ctx, c, args[0], args[1], out, force, get.OutOrStdout(), get.ErrOrStderr())
	})
	get.Flags().StringVarP(&out, "output", "o", "", "where to write it (- for stdout; default: its name here)")
	get.Flags().BoolVar(&force, "force", false, "write over an existing local file")

	var desktopRef, to string
	var overwrite bool
	restoreFile := &cobra.Command{
		Use:   "restore-file ID PATH --desktop D",
		Short: "Put a file or folder of a backup back into a running desktop",
		Long: `Put a file or folder of a backup back into a running desktop (any of yours,
--desktop by name or id) at --to (default: the same path). A path that exists
there is kept unless --overwrite (a folder's files are then written over what
is there; nothing else in it is removed).`,
		Args: cobra.ExactArgs(2),
	}
	restoreFile.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		var r apiv1.BackupFilesRestored
		req := apiv1.BackupFilesRestore{Path: args[1], Desktop: desktopRef, To: to, Overwrite: overwrite}
		if err := c.do(ctx, "POST", "/api/v1/backups/"+url.PathEscape(args[0])+"/files/restore", req, &r); err != nil {
			return err
		}
		fmt.Fprintf(restoreFile.OutOrStdout(), "%s restored to %s in desktop %s: %d files, %s\n", r.Path, r.To, desktopRef, r.Files, byteCount(r.Bytes))
		return nil
	})
	restoreFile.Flags().StringVar(&desktopRef, "desktop", "", "the desktop to put it into (name or id; required)")
	restoreFile.MarkFlagRequired("desktop")
	restoreFile.Flags().StringVar(&to, "to", "", "where in the desktop (default: PATH)")
	restoreFile.Flags().BoolVar(&overwrite, "overwrite", false, "write over what is there")
	return []*cobra.Command{ls, get, restoreFile}
}

func backupFilesPath(id, sub, p string) string {
	return "/api/v1/backups/" + url.PathEscape(id) + "/files" + sub + "?path=" + url.QueryEscape(p)
}

// backupFilesTable prints a folder's entries (or the one file asked for).
func backupFilesTable(out io.Writer, fs apiv1.BackupFiles) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TYPE\tMODE\tSIZE\tMODIFIED\tNAME")
	row := func(typ, mode string, size int64, mod time.Time, name, target string) {
		if target != "" {
			name += " -> " + target
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", typ, mode, size, mod.Local().Format("2006-01-02 15:04"), name)
	}
	if fs.Type != "dir" {
		row(fs.Type, fs.Mode, fs.Size, fs.Modified, path.Base(fs.Path), fs.LinkTarget)
	}
	for _, e := range fs.Entries {
		row(e.Type, e.Mode, e.Size, e.Modified, e.Name, e.LinkTarget)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if fs.Truncated {
		fmt.Fprintf(out, "(the first %d entries; the folder holds more)\n", len(fs.Entries))
	}
	return nil
}

// getBackupFile downloads a path of a backup to out ("" = its name here).
func getBackupFile(ctx context.Context, c *client, id, p, out string, force bool, stdout, stderr io.Writer) error {
	body, header, err := c.streamHeaders(ctx, "GET", backupFilesPath(id, "/content", p))
	if err != nil {
		return err
	}
	defer body.Close()
	if out == "-" {
		_, err := io.Copy(stdout, body)
		return err
	}
	if out == "" {
		out = path.Base(p)
		if _, params, err := mime.ParseMediaType(header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
			out = filepath.Base(params["filename"])
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(out, flags, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists here: --force writes over it, -o names another file", out)
	}
	if err != nil {
		return err
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return fmt.Errorf("download %s: %w", p, err)
	}
	fmt.Fprintf(stderr, "%s: %s written\n", out, byteCount(n))
	return nil
}

func byteCount(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// streamHeaders sends a request and returns the body and headers of a
// successful answer (no timeout: a download lasts).
func (c *client) streamHeaders(ctx context.Context, method, p string) (io.ReadCloser, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+p, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach bureau at %s: %w", c.base, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, nil, errorFrom(resp.StatusCode, data)
	}
	return resp.Body, resp.Header, nil
}
