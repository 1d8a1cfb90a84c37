// Package backup is bureau's backup repository: a desktop's data disk cut
// into cells whose contents are stored as deduplicated, compressed and
// encrypted chunks, plus one encrypted manifest per backup listing the
// chunk of every non-zero cell, in a [Target] (S3-compatible object
// storage or a directory).
//
// Layout of a target:
//
//	config              format version, repository id, key check (JSON, plain)
//	chunks/ab/abcdef…   one chunk, named by the keyed hash of its content
//	backups/<id>        one backup's manifest, written after all its chunks
package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Target stores whole objects by key ("config", "chunks/ab/abcdef…",
// "backups/<id>").
type Target interface {
	// Put stores data under key atomically: a reader sees all of it or
	// nothing.
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the object; a missing one is an error matching
	// ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Exists reports whether the object is there.
	Exists(ctx context.Context, key string) (bool, error)
	// List returns the keys under prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
}

// ErrNotFound reports an object missing from a target.
var ErrNotFound = errors.New("not found in the backup target")

// checkKey refuses keys that are empty, absolute or not clean, and keys
// with a part starting with "." (".." would climb out of the target; a
// directory target keeps its temporary files under such names).
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("backup target: empty key")
	case strings.HasPrefix(key, "/"), strings.Contains(key, "\\"), strings.ContainsRune(key, 0):
		return fmt.Errorf("backup target: bad key %q", key)
	case path.Clean(key) != key:
		return fmt.Errorf("backup target: key %q is not clean", key)
	}
	for _, part := range strings.Split(key, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("backup target: bad key %q: a part starts with '.'", key)
		}
	}
	return nil
}

// checkPrefix is checkKey for a List prefix, which may be empty or end in
// "/".
func checkPrefix(prefix string) error {
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		return checkKey(p)
	}
	if prefix == "/" {
		return errors.New(`backup target: bad prefix "/"`)
	}
	return nil
}

// describe names a target in messages.
func describe(t Target) string {
	if s, ok := t.(fmt.Stringer); ok {
		return s.String()
	}
	return "the backup target"
}
