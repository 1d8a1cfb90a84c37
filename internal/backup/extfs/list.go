package extfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	statInode = regexp.MustCompile(`(?m)^Inode: (\d+)\s+Type: ([^\n]*?)\s+Mode:\s+(\d+)`)
	statSize  = regexp.MustCompile(`(?m)^User:.*\bSize: (\d+)`)
	statMtime = regexp.MustCompile(`(?m)^\s*mtime: 0x([0-9a-f]+)`)
	// lsEntry is one entry of `ls -p`: /inode/mode/uid/gid/name/size/ (a
	// name holds no slash, but may hold a newline).
	lsEntry = regexp.MustCompile(`(?m)^/(\d+)/(\d+)/\d+/\d+/([^/]*)/(\d*)/\n`)
)

// parseStat reads debugfs's stat of one inode.
func parseStat(out string) (*Entry, error) {
	m := statInode.FindStringSubmatch(out)
	if m == nil {
		return nil, errors.New("debugfs stat: no inode in its answer")
	}
	e := &Entry{}
	e.inode, _ = strconv.ParseUint(m[1], 10, 64)
	e.Type = statType(m[2])
	mode, _ := strconv.ParseUint(m[3], 8, 32)
	e.Mode = permMode(uint32(mode))
	if s := statSize.FindStringSubmatch(out); s != nil {
		e.Size, _ = strconv.ParseInt(s[1], 10, 64)
	}
	if t := statMtime.FindStringSubmatch(out); t != nil {
		sec, _ := strconv.ParseUint(t[1], 16, 64)
		e.ModTime = time.Unix(int64(sec), 0).UTC()
	}
	if e.Type == TypeSymlink {
		const tag = "Fast link dest: \""
		if i := strings.Index(out, tag); i >= 0 {
			rest := out[i+len(tag):]
			if int64(len(rest)) >= e.Size {
				e.LinkTarget = rest[:e.Size]
			}
		}
	}
	return e, nil
}

func statType(t string) string {
	switch t {
	case "regular":
		return TypeFile
	case "directory":
		return TypeDir
	case "symlink":
		return TypeSymlink
	}
	return TypeOther
}

// permMode keeps the permission, setuid, setgid and sticky bits of a
// Unix mode.
func permMode(m uint32) fs.FileMode {
	out := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		out |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		out |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}

// List returns what the folder dir holds, sorted by name (no . or ..): the
// first limit (0 = all) and whether more were left out.
func (f *FS) List(ctx context.Context, dir string, limit int) ([]Entry, bool, error) {
	d, err := f.Stat(ctx, dir)
	if err != nil {
		return nil, false, err
	}
	if d.Type != TypeDir {
		return nil, false, fmt.Errorf("%s is a %s, not a folder: %w", dir, d.Type, ErrBadPath)
	}
	var out strings.Builder
	stderr, err := f.run(ctx, fmt.Sprintf("ls -p <%d>", d.inode), &out)
	if err != nil {
		return nil, false, err
	}
	if err := failed(dir, stderr); err != nil {
		return nil, false, err
	}
	var list []Entry
	for _, m := range lsEntry.FindAllStringSubmatch(out.String(), -1) {
		if m[3] == "." || m[3] == ".." || m[3] == "" {
			continue
		}
		ino, _ := strconv.ParseUint(m[1], 10, 64)
		list = append(list, Entry{Name: m[3], inode: ino})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	truncated := limit > 0 && len(list) > limit
	if truncated {
		list = list[:limit]
	}
	if err := f.statAll(ctx, dir, list); err != nil {
		return nil, false, err
	}
	return list, truncated, nil
}

// statAll fills entries' details with one debugfs process: a stat of each
// inode, in order.
func (f *FS) statAll(ctx context.Context, dir string, list []Entry) error {
	if len(list) == 0 {
		return nil
	}
	var cmds strings.Builder
	for _, e := range list {
		fmt.Fprintf(&cmds, "stat <%d>\n", e.inode)
	}
	out, err := f.runFile(ctx, cmds.String())
	if err != nil {
		return err
	}
	blocks := splitStats(out)
	for i := range list {
		b, ok := blocks[list[i].inode]
		if !ok {
			return fmt.Errorf("%s: debugfs did not describe %s", dir, list[i].Name)
		}
		e, err := parseStat(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path.Join(dir, list[i].Name), err)
		}
		e.Name = list[i].Name
		if err := f.slowLink(ctx, e); err != nil {
			return err
		}
		list[i] = *e
	}
	return nil
}

// splitStats cuts the answer to a command file of stats into each
// inode's, by the "debugfs: stat <N>" line debugfs echoes before each.
func splitStats(out string) map[uint64]string {
	blocks := map[uint64]string{}
	const echo = "debugfs: stat <"
	parts := strings.Split(out, "\n"+echo)
	parts[0] = strings.TrimPrefix(parts[0], echo)
	for _, p := range parts {
		end := strings.Index(p, ">")
		if end < 0 {
			continue
		}
		ino, err := strconv.ParseUint(p[:end], 10, 64)
		if err != nil {
			continue
		}
		blocks[ino] = p[end+1:]
	}
	return blocks
}
