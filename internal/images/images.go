// Package images manages the base images desktops boot from: building the
// default image from its recipe (cached by the recipe's hash), importing
// cloud images by URL or path, listing and deleting them.
package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Store keeps image registrations and knows which desktops use them.
type Store interface {
	PutImage(ctx context.Context, im *desktop.Image) error
	GetImage(ctx context.Context, name string) (*desktop.Image, error)
	ListImages(ctx context.Context) ([]*desktop.Image, error)
	DeleteImage(ctx context.Context, name string) error
	ListDesktops(ctx context.Context, f desktop.Filter) ([]*desktop.Desktop, error)
}

// Service manages images under Dir.
type Service struct {
	Dir      string // registered images: <Dir>/<name>.qcow2
	CacheDir string // built images by recipe hash, shared across checkouts
	DataDir  string // imports by path may not read from here (desktops' disks, the database)
	Store    Store
	Log      *slog.Logger
	QemuImg  string
}

// Progress reports long work: a phase, a fraction done and an estimate.
type Progress struct {
	Phase   string  `json:"phase"`
	Percent float64 `json:"percent"`
	// Detail says what the phase is doing, e.g. "downloading 312/540
	// packages (210/380 MiB)".
	Detail string        `json:"detail,omitempty"`
	Done   int64         `json:"done_bytes,omitempty"`
	Total  int64         `json:"total_bytes,omitempty"`
	ETA    time.Duration `json:"eta_ns,omitempty"`
}

// ProgressFunc receives progress; it may be nil.
type ProgressFunc func(Progress)

func (f ProgressFunc) report(p Progress) {
	if f != nil {
		f(p)
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func validName(name string) error {
	if !nameRE.MatchString(name) {
		return &desktop.ValidationError{Field: "name", Message: "must be 1-63 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"}
	}
	return nil
}

// List returns the registered images.
func (s *Service) List(ctx context.Context) ([]*desktop.Image, error) {
	return s.Store.ListImages(ctx)
}

// InUseError says desktops still boot from an image.
type InUseError struct {
	Image    string
	Desktops []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("image %q is used by desktops %v; delete or reimage them first", e.Image, e.Desktops)
}

// users names the desktops that still exist over the image name.
func (s *Service) users(ctx context.Context, name string) ([]string, error) {
	ds, err := s.Store.ListDesktops(ctx, desktop.Filter{})
	if err != nil {
		return nil, err
	}
	var users []string
	for _, d := range ds {
		if d.Image == name {
			users = append(users, d.Name+" ("+d.ID+")")
		}
	}
	return users, nil
}

// Delete unregisters an image and removes its file, refusing while any
// desktop that still exists uses it (their OS disks are overlays on it).
func (s *Service) Delete(ctx context.Context, name string) error {
	im, err := s.Store.GetImage(ctx, name)
	if err != nil {
		return err
	}
	users, err := s.users(ctx, name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return &InUseError{Image: name, Desktops: users}
	}
	if err := s.Store.DeleteImage(ctx, name); err != nil {
		return err
	}
	if err := os.Remove(im.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", im.Path, err)
	}
	return nil
}

func (s *Service) path(name string) string { return filepath.Join(s.Dir, name+".qcow2") }

// register records a finished image file.
func (s *Service) register(ctx context.Context, im *desktop.Image) error {
	st, err := os.Stat(im.Path)
	if err != nil {
		return err
	}
	sum, err := fileSHA256(im.Path)
	if err != nil {
		return err
	}
	im.SizeBytes, im.SHA256, im.CreatedAt = st.Size(), sum, time.Now().UTC()
	return s.Store.PutImage(ctx, im)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ensureSpace fails early with a clear message when dir lacks need bytes.
func ensureSpace(dir string, need int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("check free space in %s: %w", dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < need {
		return &desktop.ValidationError{Field: "disk", Message: fmt.Sprintf("not enough free space in %s: need %d MiB, have %d MiB", dir, need>>20, free>>20)}
	}
	return nil
}
