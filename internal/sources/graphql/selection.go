package graphql

import (
	"sort"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// The generated selection of a root field's result. Level 1 is the result's
// own type; its object fields are level 2, theirs level 3, which selects
// leaves only. The limits keep documents for wide schemas (GitHub's
// Repository has over 100 fields) small enough to read and cheap to run.
var levelLimits = [...]struct{ leaves, objects int }{
	1: {leaves: 80, objects: 8},
	2: {leaves: 8, objects: 3},
	3: {leaves: 4, objects: 0},
}

const (
	// maxFragmentTypes is the most possible types of a union or interface
	// that get an inline fragment; wider ones (GitHub's Node has hundreds)
	// select __typename and the interface's own fields only.
	maxFragmentTypes = 10
	// maxFragmentLeaves is the most fields selected in one inline fragment.
	maxFragmentLeaves = 6
)

// preferred leaf fields come first when a type has more than a level's
// limit: they identify and name things.
var preferred = map[string]int{
	"id": 1, "name": 2, "title": 3, "login": 4, "key": 5, "slug": 6, "number": 7,
	"url": 8, "email": 9, "state": 10, "status": 11, "createdAt": 12, "updatedAt": 13,
}

// resultSelection generates the selection set of a root field's result
// type (empty for a leaf type) and the JSON Schema of the selected data.
func (b *builder) resultSelection(t *ast.Type) (string, *jsonSchema) {
	path := []string{b.schema.Query.Name}
	if b.schema.Mutation != nil {
		path = append(path, b.schema.Mutation.Name)
	}
	return b.typeSelection(t, 1, path)
}

// typeSelection unwraps lists and non-null around a selection.
func (b *builder) typeSelection(t *ast.Type, level int, path []string) (string, *jsonSchema) {
	var sel string
	var s *jsonSchema
	if t.Elem != nil {
		var items *jsonSchema
		sel, items = b.typeSelection(t.Elem, level, path)
		s = &jsonSchema{Type: "array", Items: items}
	} else {
		def := b.schema.Types[t.NamedType]
		switch def.Kind {
		case ast.Scalar:
			s = scalarSchema(def, false)
		case ast.Enum:
			s = enumSchema(def)
		default:
			sel, s = b.selectionSet(def, level, path)
		}
	}
	if !t.NonNull {
		s = nullable(s)
	}
	return sel, s
}

// selected is one field of a selection set: its text and its schema.
type selected struct {
	text   string
	schema *jsonSchema
}

// selectionSet selects from an object, interface or union type at a level:
// leaves (scalars and enums), then object fields while the level allows and
// the type is not already on the path; abstract types add __typename and
// inline fragments. It returns " { ... }" and the object's schema.
func (b *builder) selectionSet(def *ast.Definition, level int, path []string) (string, *jsonSchema) {
	path = append(path[:len(path):len(path)], def.Name)
	lim := levelLimits[level]
	props := map[string]*jsonSchema{}
	var parts []string

	if def.Kind == ast.Object || def.Kind == ast.Interface {
		chosen := map[string]selected{}
		for _, f := range b.pickLeaves(def.Fields, lim.leaves, nil) {
			chosen[f.Name] = selected{text: f.Name, schema: b.leafSchema(f.Type)}
		}
		if lim.objects > 0 {
			candidates := b.objectCandidates(def.Fields, path)
			for _, f := range candidates[:min(len(candidates), lim.objects)] {
				sel, s := b.typeSelection(f.Type, level+1, path)
				chosen[f.Name] = selected{text: f.Name + sel, schema: s}
			}
		}
		for _, f := range def.Fields {
			if c, ok := chosen[f.Name]; ok {
				parts = append(parts, c.text)
				props[f.Name] = c.schema
			}
		}
	}

	if def.IsAbstractType() {
		var possible []*ast.Definition // objects only: an interface may list interfaces implementing it
		for _, p := range b.schema.GetPossibleTypes(def) {
			if p.Kind == ast.Object {
				possible = append(possible, p)
			}
		}
		typename := &jsonSchema{Type: "string"}
		if len(possible) <= maxFragmentTypes {
			for _, p := range possible {
				typename.Enum = append(typename.Enum, p.Name)
			}
		}
		parts = append([]string{"__typename"}, parts...)
		props["__typename"] = typename
		if len(possible) <= maxFragmentTypes {
			parts = append(parts, b.fragments(possible, min(lim.leaves, maxFragmentLeaves), props)...)
		}
	}

	if len(parts) == 0 {
		parts = []string{"__typename"}
		props["__typename"] = &jsonSchema{Type: "string"}
	}
	return " { " + strings.Join(parts, " ") + " }", &jsonSchema{Type: "object", Properties: props}
}

// fragments selects leaves of each possible type of an abstract type in an
// inline fragment. A field already selected, or selected in an earlier
// fragment with another type (GitHub's Issue.state and PullRequest.state are
// different enums), is left out: GraphQL refuses fields of one response name
// with conflicting types.
func (b *builder) fragments(possible []*ast.Definition, limit int, props map[string]*jsonSchema) []string {
	typeOf := map[string]string{}
	for name := range props {
		typeOf[name] = ""
	}
	var parts []string
	for _, p := range possible {
		exclude := func(f *ast.FieldDefinition) bool {
			t, seen := typeOf[f.Name]
			return seen && t != f.Type.String()
		}
		leaves := b.pickLeaves(p.Fields, limit, exclude)
		if len(leaves) == 0 {
			continue
		}
		var names []string
		for _, f := range leaves {
			names = append(names, f.Name)
			if _, seen := typeOf[f.Name]; !seen {
				typeOf[f.Name] = f.Type.String()
				props[f.Name] = nullable(b.leafSchema(f.Type))
			}
		}
		parts = append(parts, "... on "+p.Name+" { "+strings.Join(names, " ")+" }")
	}
	return parts
}

// selectable reports whether a field can be selected without values the
// generator cannot know: not an introspection field, not deprecated, and
// no required arguments.
func selectable(f *ast.FieldDefinition) bool {
	if strings.HasPrefix(f.Name, "__") {
		return false
	}
	if _, dep := deprecation(f.Directives); dep {
		return false
	}
	for _, a := range f.Arguments {
		if a.Type.NonNull && a.DefaultValue == nil {
			return false
		}
	}
	return true
}

func (b *builder) isLeaf(t *ast.Type) bool {
	def := b.schema.Types[t.Name()]
	return def != nil && def.IsLeafType()
}

// pickLeaves returns up to limit selectable scalar and enum fields, the
// preferred names first, then in schema order.
func (b *builder) pickLeaves(fields ast.FieldList, limit int, exclude func(*ast.FieldDefinition) bool) []*ast.FieldDefinition {
	var out []*ast.FieldDefinition
	for _, f := range fields {
		if selectable(f) && b.isLeaf(f.Type) && (exclude == nil || !exclude(f)) {
			out = append(out, f)
		}
	}
	if len(out) <= limit {
		return out
	}
	rank := func(f *ast.FieldDefinition) int {
		if r, ok := preferred[f.Name]; ok {
			return r
		}
		return len(preferred) + 1
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out[:limit]
}

// objectCandidates lists the object, interface and union fields that may be
// selected below a type: selectable, not leading back to a type on the path,
// and taking no argument without a default (connection fields such as
// GitHub's issues(first:, last:) enforce pagination at run time). Single
// objects come before lists, which multiply the answer.
func (b *builder) objectCandidates(fields ast.FieldList, path []string) []*ast.FieldDefinition {
	var single, lists []*ast.FieldDefinition
	for _, f := range fields {
		if !selectable(f) || b.isLeaf(f.Type) || onPath(path, f.Type.Name()) {
			continue
		}
		defaults := true
		for _, a := range f.Arguments {
			defaults = defaults && a.DefaultValue != nil
		}
		if !defaults {
			continue
		}
		if f.Type.Elem != nil {
			lists = append(lists, f)
		} else {
			single = append(single, f)
		}
	}
	return append(single, lists...)
}

func onPath(path []string, name string) bool {
	for _, p := range path {
		if p == name {
			return true
		}
	}
	return false
}

// leafSchema is the output schema of a scalar or enum field.
func (b *builder) leafSchema(t *ast.Type) *jsonSchema {
	_, s := b.typeSelection(t, len(levelLimits)-1, nil)
	return s
}
