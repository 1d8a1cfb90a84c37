package openapi

import (
	"encoding/json"
	"testing"
)

// The document converts to JSON; package api's tests load it, check it
// against the router and check responses against it.
func TestJSON(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || len(doc.Paths) == 0 {
		t.Errorf("openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
}
