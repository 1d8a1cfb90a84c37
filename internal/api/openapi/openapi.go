// Package openapi holds bureau's published API contract: the OpenAPI 3.1
// document (openapi.yaml) that describes every route of package api. It is
// written by hand; api's tests fail when a route is missing from it or it
// names one that does not exist, and check real responses against it.
package openapi

import (
	_ "embed"
	"sync"

	"github.com/goccy/go-yaml"
)

// YAML is the document as written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON returns the document as JSON (keys in the order written), converted
// once.
var JSON = sync.OnceValues(func() ([]byte, error) {
	return yaml.YAMLToJSON(YAML)
})
