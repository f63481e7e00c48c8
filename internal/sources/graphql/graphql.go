// Package graphql turns a GraphQL schema into tools: one per Query field
// ("query.<field>"), one per Mutation field ("mutation.<field>"), and a raw
// "graphql" tool that runs any document. The schema comes as SDL text
// ([FromSDL]), as an introspection result ([FromIntrospection]), or from a
// live endpoint ([Introspect]).
//
// Each field tool carries a complete executable document in its reference:
// variables named like the field's arguments with their exact GraphQL types,
// and a generated selection set of the result (scalars and enums, nested
// objects to depth 2, cycles cut).
package graphql

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/toolgate/toolgate/internal/sources"
)

// FromSDL builds tools from schema definition language text.
func FromSDL(sdl string) (*sources.Discovery, error) {
	if len(sdl) > sources.MaxSpecBytes {
		return nil, errTooLarge
	}
	schema, warnings, err := loadSDL(sdl, sdlOrigin)
	if err != nil {
		return nil, err
	}
	d := build(schema, warnings)
	d.SpecHash = sources.Hash([]byte(sdl))
	return d, nil
}

// FromIntrospection builds tools from an introspection result: either
// {"data":{"__schema":...}} or {"__schema":...}.
func FromIntrospection(result []byte) (*sources.Discovery, error) {
	if len(result) > sources.MaxSpecBytes {
		return nil, errTooLarge
	}
	sdl, err := introspectionSDL(result)
	if err != nil {
		return nil, err
	}
	schema, warnings, err := loadSDL(sdl, introspectionOrigin)
	if err != nil {
		return nil, err
	}
	d := build(schema, warnings)
	d.SpecHash = sources.Hash(result)
	return d, nil
}

// FromSchema picks [FromIntrospection] when text is JSON (starts with '{'),
// else [FromSDL].
func FromSchema(text string) (*sources.Discovery, error) {
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		return FromIntrospection([]byte(text))
	}
	return FromSDL(text)
}

var errTooLarge = fmt.Errorf("the schema is larger than the %d MiB limit", sources.MaxSpecBytes>>20)

// origin says where SDL text came from, for error messages and warnings:
// line numbers only mean something in text a person gave.
type origin int

const (
	sdlOrigin origin = iota
	introspectionOrigin
)

// loadSDL parses SDL, repairs what real-world schemas get wrong (duplicate
// definitions, redeclared built-ins), adds gqlparser's prelude and validates.
func loadSDL(sdl string, from origin) (*ast.Schema, []sources.Warning, error) {
	if strings.TrimSpace(sdl) == "" {
		return nil, nil, errors.New("the schema is empty")
	}
	doc, err := parser.ParseSchema(&ast.Source{Name: "schema.graphql", Input: sdl})
	if err != nil {
		return nil, nil, invalid(err, from)
	}
	prelude := validator.PreludeDocument()
	dropBuiltIns(doc, prelude)
	warnings := dedupe(doc, from)
	warnings = append(warnings, dropUndeclaredDirectives(doc, prelude)...)
	prelude.Merge(doc)
	schema, err := validator.ValidateSchemaDocument(prelude)
	if err != nil {
		return nil, nil, invalid(err, from)
	}
	if schema.Query == nil {
		return nil, nil, errors.New("the schema has no Query type: define `type Query { ... }` or name the query root in `schema { query: ... }`")
	}
	return schema, warnings, nil
}

// invalid explains a gqlparser error the way a person reads it.
func invalid(err error, from origin) error {
	msg, line := err.Error(), 0
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) {
		msg = gqlErr.Message
		if len(gqlErr.Locations) > 0 {
			line = gqlErr.Locations[0].Line
		}
	}
	if from == introspectionOrigin {
		return fmt.Errorf("the introspection result does not describe a valid schema: %s", msg)
	}
	if line > 0 {
		return fmt.Errorf("the schema is not valid GraphQL SDL: line %d: %s", line, msg)
	}
	return fmt.Errorf("the schema is not valid GraphQL SDL: %s", msg)
}

// dropBuiltIns removes the schema's own declarations of what the prelude
// declares (printed schemas sometimes include `scalar String` or the
// introspection types), which gqlparser would refuse as redeclared.
func dropBuiltIns(doc, prelude *ast.SchemaDocument) {
	builtIn := map[string]bool{}
	for _, def := range prelude.Definitions {
		builtIn[def.Name] = true
	}
	kept := doc.Definitions[:0]
	for _, def := range doc.Definitions {
		if !builtIn[def.Name] {
			kept = append(kept, def)
		}
	}
	doc.Definitions = kept
}

// dedupe removes repeated fields, input fields, arguments and enum values
// of a type (across its definition and extensions), keeping the first and
// saying so in one warning per removal. GitHub's published schema defines a
// few fields twice.
func dedupe(doc *ast.SchemaDocument, from origin) []sources.Warning {
	var warnings []sources.Warning
	warn := func(subject string, first, again *ast.Position) {
		msg := "Defined twice; the first definition is kept."
		if from == sdlOrigin && first != nil && again != nil {
			msg = fmt.Sprintf("Defined twice (lines %d and %d); the first definition is kept.", first.Line, again.Line)
		}
		warnings = append(warnings, sources.Warning{Subject: subject, Message: msg})
	}
	fields := map[string]map[string]*ast.Position{}
	values := map[string]map[string]*ast.Position{}
	for _, list := range []ast.DefinitionList{doc.Definitions, doc.Extensions} {
		for _, def := range list {
			if fields[def.Name] == nil {
				fields[def.Name] = map[string]*ast.Position{}
				values[def.Name] = map[string]*ast.Position{}
			}
			seen := fields[def.Name]
			keptFields := def.Fields[:0]
			for _, f := range def.Fields {
				if first, dup := seen[f.Name]; dup {
					warn(def.Name+"."+f.Name, first, f.Position)
					continue
				}
				seen[f.Name] = f.Position
				keptFields = append(keptFields, f)
				args := map[string]*ast.Position{}
				keptArgs := f.Arguments[:0]
				for _, a := range f.Arguments {
					if first, dup := args[a.Name]; dup {
						warn(def.Name+"."+f.Name+"("+a.Name+":)", first, a.Position)
						continue
					}
					args[a.Name] = a.Position
					keptArgs = append(keptArgs, a)
				}
				f.Arguments = keptArgs
			}
			def.Fields = keptFields
			seenValues := values[def.Name]
			keptValues := def.EnumValues[:0]
			for _, v := range def.EnumValues {
				if first, dup := seenValues[v.Name]; dup {
					warn(def.Name+"."+v.Name, first, v.Position)
					continue
				}
				seenValues[v.Name] = v.Position
				keptValues = append(keptValues, v)
			}
			def.EnumValues = keptValues
		}
	}
	return warnings
}

// dropUndeclaredDirectives removes uses of directives the schema does not
// declare, which gqlparser refuses: schemas printed from federated
// subgraphs (@key, @external) or AWS AppSync (@aws_iam) use them freely,
// and tools need none of them.
func dropUndeclaredDirectives(doc, prelude *ast.SchemaDocument) []sources.Warning {
	declared := map[string]bool{}
	for _, list := range []ast.DirectiveDefinitionList{prelude.Directives, doc.Directives} {
		for _, d := range list {
			declared[d.Name] = true
		}
	}
	dropped := map[string]bool{}
	keep := func(dirs ast.DirectiveList) ast.DirectiveList {
		kept := dirs[:0]
		for _, d := range dirs {
			if declared[d.Name] {
				kept = append(kept, d)
			} else {
				dropped[d.Name] = true
			}
		}
		return kept
	}
	for _, list := range []ast.SchemaDefinitionList{doc.Schema, doc.SchemaExtension} {
		for _, s := range list {
			s.Directives = keep(s.Directives)
		}
	}
	for _, list := range []ast.DefinitionList{doc.Definitions, doc.Extensions} {
		for _, def := range list {
			def.Directives = keep(def.Directives)
			for _, f := range def.Fields {
				f.Directives = keep(f.Directives)
				for _, a := range f.Arguments {
					a.Directives = keep(a.Directives)
				}
			}
			for _, v := range def.EnumValues {
				v.Directives = keep(v.Directives)
			}
		}
	}
	for _, list := range []ast.DirectiveDefinitionList{doc.Directives, doc.DirectiveExtensions} {
		for _, d := range list {
			d.Directives = keep(d.Directives)
			for _, a := range d.Arguments {
				a.Directives = keep(a.Directives)
			}
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	names := make([]string, 0, len(dropped))
	for n := range dropped {
		names = append(names, "@"+n)
	}
	sort.Strings(names)
	return []sources.Warning{{
		Subject: "directives",
		Message: "The schema uses directives it does not declare (" + strings.Join(names, ", ") + "); they were ignored.",
	}}
}

// startsLikeHTML reports whether an answer is an HTML page.
func startsLikeHTML(body []byte) bool {
	b := bytes.ToLower(bytes.TrimSpace(body[:min(len(body), 512)]))
	return bytes.HasPrefix(b, []byte("<!doctype html")) || bytes.HasPrefix(b, []byte("<html")) ||
		bytes.HasPrefix(b, []byte("<head")) || bytes.HasPrefix(b, []byte("<body"))
}
