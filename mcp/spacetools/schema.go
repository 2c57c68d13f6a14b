package spacetools

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// Small builders for hand-written input schemas, so that every tool's
// schema reads like its documentation. The bridge's own tools use them too.

// Object is the schema of a tool's arguments.
func Object(required []string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
	if required == nil {
		required = []string{}
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required}
}

// Str is a string argument.
func Str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

// NonEmpty is a string argument that may not be "".
func NonEmpty(desc string) *jsonschema.Schema {
	one := 1
	return &jsonschema.Schema{Type: "string", Description: desc, MinLength: &one}
}

// Enum is a string argument taking one of values, def by default ("": none).
func Enum(desc string, def string, values ...string) *jsonschema.Schema {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	s := &jsonschema.Schema{Type: "string", Description: desc, Enum: vs}
	if def != "" {
		s.Default = mustJSON(def)
	}
	return s
}

// Integer is an integer argument from min to max (max 0: unbounded), def by
// default (nil: none).
func Integer(desc string, min, max float64, def any) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "integer", Description: desc, Minimum: &min}
	if max > 0 {
		s.Maximum = &max
	}
	if def != nil {
		s.Default = mustJSON(def)
	}
	return s
}

// SignedInteger is an integer of either sign, bounded by the Space only.
func SignedInteger(desc string, def any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: desc, Default: mustJSON(def)}
}

// Number is a number argument.
func Number(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Description: desc}
}

// Boolean is a boolean argument, def by default.
func Boolean(desc string, def bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc, Default: mustJSON(def)}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
