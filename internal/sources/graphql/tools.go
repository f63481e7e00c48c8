package graphql

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/toolgate/toolgate/internal/sources"
)

// Ref is a GraphQL tool's reference back to the schema: the operation
// ("query", "mutation" or "raw"), the root field, and the executable
// document the gateway sends with the tool's arguments as variables.
type Ref struct {
	Operation string `json:"operation"`
	Field     string `json:"field,omitempty"`
	Document  string `json:"document,omitempty"`
}

// RawToolName is the name of the tool that runs any document.
const RawToolName = "graphql"

// maxDescription is the longest tool description, in characters.
const maxDescription = 1000

// build turns a loaded schema into tools.
func build(schema *ast.Schema, warnings []sources.Warning) *sources.Discovery {
	b := &builder{schema: schema}
	var tools []sources.Tool
	for _, root := range []struct {
		op  string
		def *ast.Definition
	}{{"query", schema.Query}, {"mutation", schema.Mutation}} {
		if root.def == nil {
			continue
		}
		for _, f := range root.def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			tools = append(tools, b.fieldTool(root.op, f))
		}
	}
	tools = append(tools, rawTool())
	if schema.Subscription != nil {
		n := 0
		for _, f := range schema.Subscription.Fields {
			if !strings.HasPrefix(f.Name, "__") {
				n++
			}
		}
		if n > 0 {
			warnings = append(warnings, sources.Warning{
				Subject: "subscription " + schema.Subscription.Name,
				Message: fmt.Sprintf("%s skipped: subscriptions need a long-lived connection, and tools answer once.", plural(n, "subscription field")),
			})
		}
	}
	if len(b.deprecated) > 0 {
		examples := b.deprecated[:min(len(b.deprecated), 5)]
		more := ""
		if len(b.deprecated) > len(examples) {
			more = ", …"
		}
		warnings = append(warnings, sources.Warning{
			Subject: "deprecated fields",
			Message: fmt.Sprintf("%s deprecated (%s%s); their tools are kept and their descriptions say so.",
				plural(len(b.deprecated), "field is", "fields are"), strings.Join(examples, ", "), more),
		})
	}
	return &sources.Discovery{Tools: tools, Warnings: warnings}
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

type builder struct {
	schema     *ast.Schema
	deprecated []string
}

func (b *builder) fieldTool(op string, f *ast.FieldDefinition) sources.Tool {
	name := op + "." + f.Name
	desc := f.Description
	if reason, ok := deprecation(f.Directives); ok {
		b.deprecated = append(b.deprecated, name)
		desc = withDeprecation(desc, reason)
	} else {
		desc = trimDescription(desc, maxDescription)
	}
	input := b.arguments(f.Arguments)
	sel, out := b.resultSelection(f.Type)
	output := &jsonSchema{Type: "object", Properties: map[string]*jsonSchema{f.Name: out}}
	ref, _ := json.Marshal(Ref{Operation: op, Field: f.Name, Document: document(op, f, sel)})
	readOnly, approval := op == "query", sources.ApprovalAuto
	if !readOnly {
		approval = sources.ApprovalRequired // a mutation changes data upstream
	}
	return sources.Tool{
		Name:            name,
		Description:     desc,
		InputSchema:     input,
		OutputSchema:    mustJSON(output),
		Annotations:     sources.Annotations{ReadOnlyHint: &readOnly, OpenWorldHint: ptr(true)},
		DefaultApproval: approval,
		Ref:             ref,
	}
}

func rawTool() sources.Tool {
	input := json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"The GraphQL document: one or more query or mutation operations."},` +
		`"variables":{"type":"object","description":"Values of the document's variables, by name."},` +
		`"operationName":{"type":"string","description":"Which operation of the document to run, when it holds several."}},` +
		`"required":["query"],"additionalProperties":false}`)
	return sources.Tool{
		Name: RawToolName,
		Description: "Runs any GraphQL query or mutation against this endpoint and returns its data. " +
			"Use it for what the per-field tools do not cover: several fields at once, other selections, fragments. " +
			"A mutation can change data upstream.",
		InputSchema:     input,
		OutputSchema:    json.RawMessage(`{"type":"object","description":"The data the document selected."}`),
		Annotations:     sources.Annotations{ReadOnlyHint: ptr(false), OpenWorldHint: ptr(true)},
		DefaultApproval: sources.ApprovalRequired,
		Ref:             json.RawMessage(`{"operation":"raw"}`),
	}
}

func ptr[T any](v T) *T { return &v }

// deprecation returns the reason of a @deprecated directive.
func deprecation(dirs ast.DirectiveList) (string, bool) {
	d := dirs.ForName("deprecated")
	if d == nil {
		return "", false
	}
	if arg := d.Arguments.ForName("reason"); arg != nil && arg.Value != nil && arg.Value.Kind != ast.NullValue {
		return arg.Value.Raw, true
	}
	return "No longer supported", true
}

// withDeprecation appends "Deprecated: <reason>" to a description, trimming
// the description so the whole stays within maxDescription.
func withDeprecation(desc, reason string) string {
	note := "Deprecated: " + strings.TrimSpace(reason)
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return trimDescription(note, maxDescription)
	}
	room := maxDescription - utf8.RuneCountInString(note) - 2
	if room < 100 {
		return trimDescription(desc+"\n\n"+note, maxDescription)
	}
	return trimDescription(desc, room) + "\n\n" + note
}

// trimDescription cuts s to at most limit characters at a word boundary,
// marking the cut with "…".
func trimDescription(s string, limit int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	runes := []rune(s)[:limit-1]
	cut := len(runes)
	for i := len(runes) - 1; i > len(runes)*3/4; i-- {
		if unicode.IsSpace(runes[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(runes[:cut]), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) && r != ')' && r != '"' && r != '`'
	}) + "…"
}

// jsonSchema is the subset of JSON Schema the tools use.
type jsonSchema struct {
	Comment              string                 `json:"$comment,omitempty"`
	Type                 any                    `json:"type,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Enum                 []any                  `json:"enum,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *bool                  `json:"additionalProperties,omitempty"`
	Default              any                    `json:"default,omitempty"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only json.Number defaults can fail, and the parser checked them.
		panic(fmt.Sprintf("graphql: encode schema: %v", err))
	}
	return b
}

// nullable lets a schema also accept null.
func nullable(s *jsonSchema) *jsonSchema {
	switch t := s.Type.(type) {
	case []string:
		return s // already
	case string:
		s.Type = []string{t, "null"}
	case nil:
		return s // {} already accepts null
	}
	if s.Enum != nil {
		s.Enum = append(s.Enum, nil)
	}
	return s
}

var builtInScalars = map[string]string{
	"Int":     "integer",
	"Float":   "number",
	"String":  "string",
	"ID":      "string",
	"Boolean": "boolean",
}

// scalarSchema is the JSON Schema of a scalar: the built-ins by type, a
// custom scalar as anything, described by name (and, for inputs, by its
// description, which says the format).
func scalarSchema(def *ast.Definition, input bool) *jsonSchema {
	if t, ok := builtInScalars[def.Name]; ok {
		return &jsonSchema{Type: t}
	}
	note := def.Name + " scalar"
	if d := strings.TrimSpace(def.Description); input && d != "" {
		note += ": " + trimDescription(d, 200)
	}
	return &jsonSchema{Description: note}
}

func enumSchema(def *ast.Definition) *jsonSchema {
	values := make([]any, 0, len(def.EnumValues))
	for _, v := range def.EnumValues {
		values = append(values, v.Name)
	}
	return &jsonSchema{Type: "string", Enum: values}
}

// arguments is the input schema of a field: one property per argument,
// required when non-null without a default.
func (b *builder) arguments(args ast.ArgumentDefinitionList) json.RawMessage {
	props := map[string]*jsonSchema{}
	required := []string{}
	for _, a := range args {
		props[a.Name] = b.inputValue(a.Type, a.Description, a.DefaultValue, a.Directives, nil)
		if a.Type.NonNull && a.DefaultValue == nil {
			required = append(required, a.Name)
		}
	}
	return mustJSON(struct {
		Type                 string                 `json:"type"`
		Properties           map[string]*jsonSchema `json:"properties"`
		Required             []string               `json:"required,omitempty"`
		AdditionalProperties bool                   `json:"additionalProperties"`
	}{"object", props, required, false})
}

// inputValue is the schema of an argument or input field.
func (b *builder) inputValue(t *ast.Type, desc string, def *ast.Value, dirs ast.DirectiveList, path []string) *jsonSchema {
	s := b.inputType(t, path)
	desc = strings.TrimSpace(desc)
	if reason, ok := deprecation(dirs); ok {
		desc = strings.TrimSpace(desc + " Deprecated: " + reason)
	}
	switch {
	case desc == "":
	case s.Description == "":
		s.Description = desc
	default:
		s.Description = desc + " (" + s.Description + ")"
	}
	if def != nil {
		s.Default = valueJSON(def)
	}
	return s
}

// inputType is the schema of an input type: lists become arrays (whose
// items may be null when the item type is nullable), input objects nested
// objects, with recursion cut at a type already on the path.
func (b *builder) inputType(t *ast.Type, path []string) *jsonSchema {
	if t.Elem != nil {
		items := b.inputType(t.Elem, path)
		if !t.Elem.NonNull {
			items = nullable(items)
		}
		return &jsonSchema{Type: "array", Items: items}
	}
	def := b.schema.Types[t.NamedType]
	switch def.Kind {
	case ast.Scalar:
		return scalarSchema(def, true)
	case ast.Enum:
		return enumSchema(def)
	case ast.InputObject:
		for _, p := range path {
			if p == def.Name {
				return &jsonSchema{Comment: "recursive input " + def.Name + " cut", Type: "object"}
			}
		}
		path = append(path[:len(path):len(path)], def.Name)
		s := &jsonSchema{Type: "object", Properties: map[string]*jsonSchema{}, AdditionalProperties: ptr(false)}
		for _, f := range def.Fields {
			s.Properties[f.Name] = b.inputValue(f.Type, f.Description, f.DefaultValue, f.Directives, path)
			if f.Type.NonNull && f.DefaultValue == nil {
				s.Required = append(s.Required, f.Name)
			}
		}
		if def.Directives.ForName("oneOf") != nil {
			s.Description = "Give exactly one of its fields."
		}
		return s
	}
	return &jsonSchema{}
}

// valueJSON converts a GraphQL literal (a default value) to JSON.
func valueJSON(v *ast.Value) any {
	switch v.Kind {
	case ast.IntValue, ast.FloatValue:
		return json.Number(v.Raw)
	case ast.StringValue, ast.BlockValue, ast.EnumValue:
		return v.Raw
	case ast.BooleanValue:
		return v.Raw == "true"
	case ast.ListValue:
		out := make([]any, 0, len(v.Children))
		for _, c := range v.Children {
			out = append(out, valueJSON(c.Value))
		}
		return out
	case ast.ObjectValue:
		out := make(map[string]any, len(v.Children))
		for _, c := range v.Children {
			out[c.Name] = valueJSON(c.Value)
		}
		return out
	}
	return nil
}

// document writes the executable document of a root field: an operation
// named after the field, one variable per argument with its exact type, and
// the generated selection.
func document(op string, f *ast.FieldDefinition, selection string) string {
	var b strings.Builder
	b.WriteString(op)
	b.WriteByte(' ')
	b.WriteString(operationName(f.Name))
	if len(f.Arguments) > 0 {
		b.WriteByte('(')
		for i, a := range f.Arguments {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("$" + a.Name + ": " + a.Type.String())
			if a.Type.NonNull && a.DefaultValue != nil {
				// A non-null argument with a default may be left out; so may its variable.
				b.WriteString(" = " + a.DefaultValue.String())
			}
		}
		b.WriteByte(')')
	}
	b.WriteString(" { ")
	b.WriteString(f.Name)
	if len(f.Arguments) > 0 {
		b.WriteByte('(')
		for i, a := range f.Arguments {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.Name + ": $" + a.Name)
		}
		b.WriteByte(')')
	}
	b.WriteString(selection)
	b.WriteString(" }")
	return b.String()
}

// operationName is the field's name with its first letter upper-cased.
func operationName(field string) string {
	r, size := utf8.DecodeRuneInString(field)
	return string(unicode.ToUpper(r)) + field[size:]
}
