package openapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Limits on expanded schemas, counted in objects. GitHub's largest schema
// (an output of about 450 KB) has about 5,000 objects and all its tools
// together about 106,000; only tangled recursive schemas, whose expansion
// grows with every path through a cycle, or schemas built to explode
// reach them. Past a limit, references are cut with a marker.
const (
	// maxSchemaNodes bounds one tool's input or output schema.
	maxSchemaNodes = 50_000
	// maxTotalNodes bounds all the schemas of one document together;
	// once it is spent each schema still gets minSchemaNodes.
	maxTotalNodes  = 1_000_000
	minSchemaNodes = 1_000
)

// expander turns OpenAPI schema objects into plain JSON Schema: $refs are
// inlined, recursion is cut with a marker, and OpenAPI's own keywords are
// rewritten or dropped. The expansion of a reference that lies on no cycle
// does not depend on where it is used, so it is computed once and shared
// between tools (the values are read-only from then on).
type expander struct {
	res  *resolver
	memo map[string]expansion
	// stack holds the references being expanded on the current path.
	stack []string
	// nodes counts the objects of the schema being built, up to limit;
	// cuts counts references cut because the schema reached it; total
	// counts the objects of the finished schemas.
	nodes, limit, cuts, total int
}

// expansion is a shared, finished expansion of one reference.
type expansion struct {
	value any
	nodes int
}

// newExpander returns an expander over a resolver's document.
func newExpander(res *resolver) *expander {
	return &expander{res: res, memo: map[string]expansion{}}
}

// start begins a new schema (one tool's input or output) with a fresh
// size budget.
func (x *expander) start() {
	x.nodes, x.cuts = 0, 0
	x.limit = max(min(maxSchemaNodes, maxTotalNodes-x.total), minSchemaNodes)
	x.stack = x.stack[:0]
}

// done finishes a schema and reports whether references were cut for size.
func (x *expander) done() (cut bool) {
	x.total += x.nodes
	return x.cuts > 0
}

// schema converts a schema value.
func (x *expander) schema(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil // true, false, or something invalid kept as written
	}
	if ref, ok := m["$ref"].(string); ok {
		return x.ref(ref, m)
	}
	return x.object(m)
}

// ref expands a $ref, cutting recursion and reusing shared expansions.
// Keywords next to the $ref (3.1 allows e.g. a description) are laid over
// the expanded target.
func (x *expander) ref(ref string, node map[string]any) (any, error) {
	target, err := x.res.resolve(ref)
	if err != nil {
		return nil, err
	}
	var out any
	switch memo, shared := x.memo[ref]; {
	case slices.Contains(x.stack, ref):
		x.nodes++
		return cutMarker(ref, "recursive reference to %s cut"), nil
	case shared && x.nodes+memo.nodes <= x.limit:
		x.nodes += memo.nodes
		out = memo.value
	case x.nodes >= x.limit || shared:
		x.nodes++
		x.cuts++
		return cutMarker(ref, "reference to %s cut: the schema is too large"), nil
	default:
		if out, err = x.expand(ref, target); err != nil {
			return nil, err
		}
	}
	if len(node) == 1 {
		return out, nil
	}
	return x.overlay(out, node)
}

// expand expands a reference's target and shares the result when it is
// the same wherever it is used: no cycle through it and no cut for size.
func (x *expander) expand(ref string, target any) (any, error) {
	nodes, cuts := x.nodes, x.cuts
	x.stack = append(x.stack, ref)
	out, err := x.schema(target)
	x.stack = x.stack[:len(x.stack)-1]
	if err != nil {
		return nil, err
	}
	if x.cuts == cuts && !x.res.cycles.isCyclic(ref) {
		x.memo[ref] = expansion{value: out, nodes: x.nodes - nodes}
	}
	return out, nil
}

// overlay lays the keywords written beside a $ref over its expansion.
func (x *expander) overlay(expanded any, node map[string]any) (any, error) {
	siblings := make(map[string]any, len(node)-1)
	for k, v := range node {
		if k != "$ref" {
			siblings[k] = v
		}
	}
	extra, err := x.object(siblings)
	if err != nil {
		return nil, err
	}
	base, ok := expanded.(map[string]any)
	if !ok {
		return expanded, nil
	}
	out := maps.Clone(base)
	maps.Copy(out, extra.(map[string]any))
	if node["nullable"] == true {
		addNull(out)
	}
	return out, nil
}

// cutMarker stands in for a reference that is not expanded.
func cutMarker(ref, format string) map[string]any {
	return map[string]any{"$comment": fmt.Sprintf(format, refName(ref)), "type": "object"}
}

// refName is the last segment of a reference: "Pet" for
// "#/components/schemas/Pet".
func refName(ref string) string {
	name := ref[strings.LastIndexByte(ref, '/')+1:]
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	if name == "" || name == "#" {
		return ref
	}
	return name
}

// object converts a schema object keyword by keyword, in sorted order so
// that the first error and the cuts for size are the same on every run.
func (x *expander) object(m map[string]any) (any, error) {
	x.nodes++
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		var err error
		switch kind := keywordKind(k); {
		case kind == kindOpenAPI:
			// nullable is applied below; the others mean nothing to JSON Schema.
		case k == "example":
			if _, has := m["examples"]; !has {
				out["examples"] = []any{v}
			}
		case k == "items":
			if _, isList := v.([]any); isList {
				out[k], err = x.schemaList(v)
			} else {
				out[k], err = x.schema(v)
			}
		case kind == kindSchema:
			out[k], err = x.schema(v)
		case kind == kindSchemaList:
			out[k], err = x.schemaList(v)
		case kind == kindSchemaMap:
			out[k], err = x.schemaMap(v)
		default:
			out[k] = v
		}
		if err != nil {
			return nil, err
		}
	}
	if m["nullable"] == true {
		addNull(out)
	}
	exclusiveBound(out, "exclusiveMinimum", "minimum")
	exclusiveBound(out, "exclusiveMaximum", "maximum")
	return out, nil
}

// Kinds of schema keywords.
const (
	kindPlain      = iota // any value, copied as written
	kindSchema            // a schema
	kindSchemaList        // a list of schemas
	kindSchemaMap         // an object whose values are schemas
	kindOpenAPI           // OpenAPI's own, not JSON Schema: dropped
)

// keywordKind classifies a keyword of JSON Schema 2020-12 (and of the
// drafts OpenAPI 3.0 borrowed from) by what its value holds.
func keywordKind(k string) int {
	switch k {
	case "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems",
		"not", "if", "then", "else", "contains", "propertyNames", "contentSchema":
		return kindSchema
	case "allOf", "anyOf", "oneOf", "prefixItems":
		return kindSchemaList
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
		return kindSchemaMap
	case "discriminator", "xml", "externalDocs", "nullable":
		return kindOpenAPI
	case "$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor":
		// An inlined schema is part of the tool's one 2020-12 schema, and
		// may appear there twice: its own dialect and identifiers go.
		return kindOpenAPI
	}
	if strings.HasPrefix(k, "x-") {
		return kindOpenAPI
	}
	return kindPlain
}

// schemaMap converts an object whose values are schemas, in sorted order.
func (x *expander) schemaMap(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		conv, err := x.schema(m[k])
		if err != nil {
			return nil, err
		}
		out[k] = conv
	}
	return out, nil
}

// schemaList converts a list of schemas.
func (x *expander) schemaList(v any) (any, error) {
	list, ok := v.([]any)
	if !ok {
		return v, nil
	}
	out := make([]any, len(list))
	for i, s := range list {
		conv, err := x.schema(s)
		if err != nil {
			return nil, err
		}
		out[i] = conv
	}
	return out, nil
}

// addNull applies OpenAPI 3.0's nullable: true. With a type, "null"
// joins it (and the enum, which would otherwise still refuse it); without
// one, null joins the alternatives of oneOf or anyOf, or allOf becomes
// one of two alternatives, the other null. A schema with none of these
// accepts null already.
func addNull(s map[string]any) {
	null := map[string]any{"type": "null"}
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
		addNullToEnum(s)
		return
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(slices.Clip(t), "null")
		}
		addNullToEnum(s)
		return
	}
	if list, ok := s["anyOf"].([]any); ok {
		s["anyOf"] = append(slices.Clip(list), null)
	} else if list, ok := s["oneOf"].([]any); ok {
		s["oneOf"] = append(slices.Clip(list), null)
	} else if list, ok := s["allOf"].([]any); ok {
		s["anyOf"] = []any{map[string]any{"allOf": list}, null}
		delete(s, "allOf")
	} else {
		addNullToEnum(s)
	}
}

// addNullToEnum lets an enum accept null.
func addNullToEnum(s map[string]any) {
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, nil) {
		s["enum"] = append(slices.Clip(enum), nil)
	}
}

// exclusiveBound rewrites OpenAPI 3.0's boolean exclusiveMinimum and
// exclusiveMaximum into JSON Schema 2020-12's numeric form.
func exclusiveBound(s map[string]any, exclusive, bound string) {
	flag, ok := s[exclusive].(bool)
	if !ok {
		return
	}
	delete(s, exclusive)
	if limit, has := s[bound]; flag && has {
		s[exclusive] = limit
		delete(s, bound)
	}
}
