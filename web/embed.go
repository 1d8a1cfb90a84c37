// Package web holds bureau's browser front end: the web console (index.html,
// app.js) and the noVNC console page (console.html), with noVNC vendored
// under static/novnc. Everything is embedded into the binary.
package web

import "embed"

// Static is the static/ tree: pages, scripts, styles and vendored noVNC.
//
//go:embed all:static
var Static embed.FS
