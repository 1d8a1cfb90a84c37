// Package migrations holds bureau's goose SQL migrations, embedded so the
// binary can migrate its own database.
package migrations

import "embed"

// FS holds the *.sql migration files.
//
//go:embed *.sql
var FS embed.FS
