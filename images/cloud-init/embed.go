// Package templates holds the cloud-init NoCloud templates bureau renders
// for every desktop: user-data, meta-data and network-config.
package templates

import "embed"

// FS holds the *.tmpl files (Go text/template syntax).
//
//go:embed *.tmpl
var FS embed.FS
