package guest

import (
	"bufio"
	"bytes"
	"errors"
	"path"
	"strings"
)

// desktopEntry is what bureau reads of an application's .desktop file
// (freedesktop's Desktop Entry Specification).
type desktopEntry struct {
	path     string
	id       string // the file's name without .desktop: what gtk-launch takes
	kind     string // Type: Application, Link, Directory
	name     string
	exec     string // Exec=, its string escapes undone
	icon     string
	terminal bool
}

// parseDesktopEntry reads the [Desktop Entry] group of a .desktop file.
func parseDesktopEntry(file string, content []byte) (desktopEntry, error) {
	e := desktopEntry{path: file, id: strings.TrimSuffix(path.Base(file), ".desktop")}
	group := ""
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			group = strings.Trim(line, "[]")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || group != "Desktop Entry" {
			continue
		}
		value = unescapeEntry(strings.TrimSpace(value))
		switch strings.TrimSpace(key) {
		case "Type":
			e.kind = value
		case "Name":
			e.name = value
		case "Exec":
			e.exec = value
		case "Icon":
			e.icon = value
		case "Terminal":
			e.terminal = value == "true"
		}
	}
	if err := sc.Err(); err != nil {
		return e, err
	}
	if e.kind != "" && e.kind != "Application" {
		return e, errors.New("it is a " + e.kind + ", not an application")
	}
	if e.exec == "" {
		return e, errors.New("it has no Exec= line (a D-Bus activated app?)")
	}
	return e, nil
}

// unescapeEntry undoes a string value's escapes: \s \n \t \r \\.
func unescapeEntry(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 == len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch v[i] {
		case 's':
			b.WriteByte(' ')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		default: // not a string escape: Exec's quoting reads it
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// argv is the entry's command line with no files to open: Exec= split by
// its quoting rules and its field codes expanded (%i %c %k) or dropped
// (%f %F %u %U and the deprecated ones); a terminal app runs in
// x-terminal-emulator.
func (e desktopEntry) argv() ([]string, error) {
	words, err := splitExec(e.exec)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, w := range words {
		if !w.quoted && len(w.text) == 2 && w.text[0] == '%' {
			switch w.text[1] {
			case 'i':
				if e.icon != "" {
					out = append(out, "--icon", e.icon)
				}
				continue
			case 'f', 'F', 'u', 'U', 'd', 'D', 'n', 'N', 'v', 'm':
				continue
			}
		}
		out = append(out, e.fieldCodes(w.text))
	}
	if len(out) == 0 || out[0] == "" {
		return nil, errors.New("its Exec= names no program")
	}
	if e.terminal {
		out = append([]string{"x-terminal-emulator", "-e"}, out...)
	}
	return out, nil
}

// fieldCodes expands the field codes inside a word.
func (e desktopEntry) fieldCodes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'c':
			b.WriteString(e.name)
		case 'k':
			b.WriteString(e.path)
		case 'i':
			b.WriteString(e.icon)
		} // the others stand for files: none here
	}
	return b.String()
}

type execWord struct {
	text   string
	quoted bool
}

// splitExec splits an Exec= value into words: spaces separate them, and
// in double quotes a backslash escapes ", `, $ and \.
func splitExec(s string) ([]execWord, error) {
	var words []execWord
	var cur strings.Builder
	quoted, inQuote, have := false, false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case inQuote && ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			inQuote = !inQuote
			quoted, have = true, true
		case !inQuote && (ch == ' ' || ch == '\t' || ch == '\n'):
			if have {
				words = append(words, execWord{cur.String(), quoted})
				cur.Reset()
				quoted, have = false, false
			}
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if inQuote {
		return nil, errors.New("its Exec= has an unterminated quote")
	}
	if have {
		words = append(words, execWord{cur.String(), quoted})
	}
	return words, nil
}
