package store

import (
	"context"
	"fmt"

	"github.com/bureau/bureau/internal/desktop"
)

// Images keeps the registered base images desktops boot from.
type Images struct{ *conn }

const imageCols = `name, os, version, path, size_bytes, sha256, recipe_hash, source, created_at`

// PutImage registers an image, replacing a registration of the same name.
func (s *Images) PutImage(ctx context.Context, im *desktop.Image) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("register image: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM images WHERE name=?`), im.Name); err != nil {
		return fmt.Errorf("register image: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO images (`+imageCols+`) VALUES (?,?,?,?,?,?,?,?,?)`),
		im.Name, im.OS, im.Version, im.Path, im.SizeBytes, im.SHA256, im.RecipeHash, im.Source, millis(im.CreatedAt)); err != nil {
		return fmt.Errorf("register image: %w", err)
	}
	return tx.Commit()
}

// GetImage returns a registered image by name.
func (s *Images) GetImage(ctx context.Context, name string) (*desktop.Image, error) {
	im, err := scanImage(s.queryRow(ctx, `SELECT `+imageCols+` FROM images WHERE name=?`, name))
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", name, notFound(err))
	}
	return im, nil
}

// ListImages returns every registered image by name.
func (s *Images) ListImages(ctx context.Context) ([]*desktop.Image, error) {
	rows, err := s.query(ctx, `SELECT `+imageCols+` FROM images ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	defer rows.Close()
	var out []*desktop.Image
	for rows.Next() {
		im, err := scanImage(rows)
		if err != nil {
			return nil, fmt.Errorf("list images: %w", err)
		}
		out = append(out, im)
	}
	return out, rows.Err()
}

// DeleteImage removes an image's registration.
func (s *Images) DeleteImage(ctx context.Context, name string) error {
	res, err := s.exec(ctx, `DELETE FROM images WHERE name=?`, name)
	if err != nil {
		return fmt.Errorf("delete image %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("image %q: %w", name, desktop.ErrNotFound)
	}
	return nil
}

func scanImage(r scanner) (*desktop.Image, error) {
	var im desktop.Image
	var created int64
	if err := r.Scan(&im.Name, &im.OS, &im.Version, &im.Path, &im.SizeBytes, &im.SHA256, &im.RecipeHash, &im.Source, &created); err != nil {
		return nil, err
	}
	im.CreatedAt = fromMillis(created)
	return &im, nil
}
