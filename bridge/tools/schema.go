package tools

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// Small builders for hand-written input schemas: every tool's schema reads
// like its documentation.

func object(required []string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
	if required == nil {
		required = []string{}
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required}
}

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func nonEmpty(desc string) *jsonschema.Schema {
	one := 1
	return &jsonschema.Schema{Type: "string", Description: desc, MinLength: &one}
}

func enum(desc string, def string, values ...string) *jsonschema.Schema {
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

func integer(desc string, min, max float64, def any) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "integer", Description: desc, Minimum: &min}
	if max > 0 {
		s.Maximum = &max
	}
	if def != nil {
		s.Default = mustJSON(def)
	}
	return s
}

// signedInteger is an integer of either sign, bounded by the Space only.
func signedInteger(desc string, def any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: desc, Default: mustJSON(def)}
}

func number(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Description: desc}
}

func boolean(desc string, def bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc, Default: mustJSON(def)}
}

func spaceArg() *jsonschema.Schema {
	return nonEmpty("The Space: a registered name (a unique prefix works), direct:<host:port> or relay:<computer>.")
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
