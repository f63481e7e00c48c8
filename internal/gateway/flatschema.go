package gateway

import (
	"encoding/json"
	"slices"
)

// flatSchema is the usual input schema, read for a check without the
// validator: an object whose properties each have one scalar type, some of
// them required, others perhaps refused. MCP servers' SDKs infer schemas
// of this shape from argument structs, and most OpenAPI operations take
// only scalar parameters.
//
// It only ever says yes: passes is true when the arguments certainly fit,
// and false when they might not, whereupon the validator decides and
// explains. So a schema it misreads can cost time, never a wrong call.
type flatSchema struct {
	props    map[string]string // property name -> "string", "number", "integer" or "boolean"
	required []string
	closed   bool // additionalProperties: false
}

// flatKeywords are the keywords a flat schema may use besides type,
// properties, required and additionalProperties: annotations, which do not
// take part in validation.
var flatKeywords = []string{"title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"}

// parseFlatSchema reads raw as a flat schema; nil when it is anything
// else, or uses any keyword the check does not know ($schema included, as
// another draft may read the same keywords differently).
func parseFlatSchema(raw []byte) *flatSchema {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	f := &flatSchema{props: map[string]string{}}
	for k, v := range doc {
		switch k {
		case "type":
			var typ string
			if json.Unmarshal(v, &typ) != nil || typ != "object" {
				return nil
			}
		case "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			for name, prop := range props {
				typ, ok := scalarType(prop)
				if !ok {
					return nil
				}
				f.props[name] = typ
			}
		case "required":
			if json.Unmarshal(v, &f.required) != nil {
				return nil
			}
		case "additionalProperties":
			var open bool
			if json.Unmarshal(v, &open) != nil {
				return nil
			}
			f.closed = !open
		default:
			if !slices.Contains(flatKeywords, k) {
				return nil
			}
		}
	}
	if _, ok := doc["type"]; !ok {
		return nil
	}
	return f
}

// scalarType is the type of a property schema that says only that, with
// annotations.
func scalarType(raw json.RawMessage) (string, bool) {
	var prop map[string]json.RawMessage
	if json.Unmarshal(raw, &prop) != nil {
		return "", false
	}
	var typ string
	for k, v := range prop {
		switch {
		case k == "type":
			if json.Unmarshal(v, &typ) != nil {
				return "", false
			}
		case !slices.Contains(flatKeywords, k):
			return "", false
		}
	}
	switch typ {
	case "string", "number", "integer", "boolean":
		return typ, true
	}
	return "", false
}

// passes reports whether args certainly fit f; false also for a nil f.
// args come from decodeArguments: numbers are json.Numbers.
func (f *flatSchema) passes(args map[string]any) bool {
	if f == nil {
		return false
	}
	for _, name := range f.required {
		if _, ok := args[name]; !ok {
			return false
		}
	}
	for name, v := range args {
		typ, known := f.props[name]
		if !known {
			if f.closed {
				return false
			}
			continue
		}
		if !hasType(v, typ) {
			return false
		}
	}
	return true
}

func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		// Written as digits alone; 1.0 and 1e2 are integers too, which
		// the validator is left to say.
		n, ok := v.(json.Number)
		if !ok || len(n) == 0 {
			return false
		}
		s := string(n)
		if s[0] == '-' {
			s = s[1:]
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return len(s) > 0
	}
	return false
}
