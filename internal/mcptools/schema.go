package mcptools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema is In's schema as mcp.AddTool would infer it from the
// struct, with the values the named properties may take (a jsonschema
// tag says what a field is, not which values it takes) and the schemas
// of types the inference cannot know: an action's element is a
// json.RawMessage to Go, a node id or a query to the model.
func inputSchema[In any](enums map[string][]any) *jsonschema.Schema {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): elementSchema(),
	}})
	if err != nil {
		// The types are fixed: a programming error, as mcp.AddTool's own.
		panic(fmt.Sprintf("the input schema of %T: %v", *new(In), err))
	}
	for name, values := range enums {
		p := s.Properties[name]
		if p == nil {
			panic(fmt.Sprintf("the input schema of %T has no property %q", *new(In), name))
		}
		p.Enum = values
	}
	return s
}

// elementSchema is the schema of a computer-use action's element.
func elementSchema() *jsonschema.Schema {
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	return &jsonschema.Schema{
		Description: "instead of a coordinate (clicks, moves): an accessibility element to act on, at the middle of its bounds: " +
			"its id from ui_tree or ui_find, or a query {role, name, app, window} (the first element showing that matches). " +
			"The action's result then says whether the element changed (element.changed).",
		AnyOf: []*jsonschema.Schema{
			str("an element's id"),
			{Type: "object", Properties: map[string]*jsonschema.Schema{
				"role":   str("its role, as ui_find takes it (button, text, check box, menu item, link)"),
				"name":   str("a part of its name (case-insensitive)"),
				"app":    str("its app's name contains this"),
				"window": str("its window's title contains this"),
			}},
		},
	}
}
