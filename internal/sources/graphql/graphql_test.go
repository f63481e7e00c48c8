package graphql

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/toolgate/toolgate/internal/sources"
)

// library is a small schema that exercises every rule of the generator.
const library = `
schema { query: Root mutation: Change subscription: Events }

"When something happened, in ISO 8601."
scalar DateTime

enum Color {
  "Like blood."
  RED
  GREEN
}

input Filter {
  "Only items of this color."
  color: Color = RED
  tags: [String]
  and: Filter
  since: DateTime
  limit: Int! = 5
}

input NewItem { name: String!, colors: [Color!]! }

interface Named { name: String! }

type Item implements Named {
  id: ID!
  name: String!
  color: Color
  owner: Owner
  related(first: Int!): [Item!]!
  parent: Item
  created: DateTime
}

type Owner implements Named { id: ID!, name: String!, items: [Item!]!, profile: Profile }

type Profile { avatar(size: Int!): String, owner: Owner }

union Result = Item | Owner

type Root {
  "Lists items."
  items(filter: Filter, first: Int = 10): [Item]!
  item(id: ID!): Item
  top(n: Int! = 3): [Item!]!
  named: [Named!]
  search(q: String!): [Result!]!
  "The old way."
  old: String @deprecated(reason: "Use items.")
  matrix: [[Int!]!]!
}

type Change {
  addItem(input: NewItem!): Item!
}

type Events { itemAdded: Item }
`

func byName(d *sources.Discovery) map[string]sources.Tool {
	m := map[string]sources.Tool{}
	for _, tl := range d.Tools {
		m[tl.Name] = tl
	}
	return m
}

func refOf(t *testing.T, tl sources.Tool) Ref {
	t.Helper()
	var r Ref
	if err := json.Unmarshal(tl.Ref, &r); err != nil {
		t.Fatalf("%s: ref %s: %v", tl.Name, tl.Ref, err)
	}
	return r
}

// jsonEqual compares JSON texts by value.
func jsonEqual(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s\ngot: %s", what, diff, got)
	}
}

func TestLibraryTools(t *testing.T) {
	d, err := FromSDL(library)
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(d)
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"graphql", "mutation.addItem", "query.item", "query.items", "query.matrix", "query.named", "query.old", "query.search", "query.top"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}

	itemSel := "{ id name color owner { id name profile { __typename } } created }"
	docs := map[string]string{
		"query.item":       "query Item($id: ID!) { item(id: $id) " + itemSel + " }",
		"query.items":      "query Items($filter: Filter, $first: Int) { items(filter: $filter, first: $first) " + itemSel + " }",
		"query.top":        "query Top($n: Int! = 3) { top(n: $n) " + itemSel + " }",
		"query.named":      "query Named { named { __typename name ... on Item { id color created } ... on Owner { id } } }",
		"query.search":     "query Search($q: String!) { search(q: $q) { __typename ... on Item { id name color created } ... on Owner { id name } } }",
		"query.old":        "query Old { old }",
		"query.matrix":     "query Matrix { matrix }",
		"mutation.addItem": "mutation AddItem($input: NewItem!) { addItem(input: $input) " + itemSel + " }",
	}
	schema, _, err := loadSDL(library, sdlOrigin)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range docs {
		ref := refOf(t, tools[name])
		if ref.Document != doc {
			t.Errorf("%s document\n got: %s\nwant: %s", name, ref.Document, doc)
		}
		op, field, _ := strings.Cut(name, ".")
		if ref.Operation != op || ref.Field != field {
			t.Errorf("%s ref = %+v", name, ref)
		}
		validDocument(t, schema, name, doc)
	}
	jsonEqual(t, "raw ref", tools["graphql"].Ref, `{"operation":"raw"}`)

	jsonEqual(t, "query.items input", tools["query.items"].InputSchema, `{
		"type": "object", "additionalProperties": false,
		"properties": {
			"first": {"type": "integer", "default": 10},
			"filter": {"type": "object", "additionalProperties": false, "properties": {
				"and": {"$comment": "recursive input Filter cut", "type": "object"},
				"color": {"type": "string", "enum": ["RED", "GREEN"], "default": "RED", "description": "Only items of this color."},
				"limit": {"type": "integer", "default": 5},
				"since": {"description": "DateTime scalar: When something happened, in ISO 8601."},
				"tags": {"type": "array", "items": {"type": ["string", "null"]}}
			}}
		}
	}`)
	jsonEqual(t, "mutation.addItem input", tools["mutation.addItem"].InputSchema, `{
		"type": "object", "additionalProperties": false, "required": ["input"],
		"properties": {"input": {"type": "object", "additionalProperties": false, "required": ["name", "colors"], "properties": {
			"name": {"type": "string"},
			"colors": {"type": "array", "items": {"type": "string", "enum": ["RED", "GREEN"]}}
		}}}
	}`)
	jsonEqual(t, "query.matrix input", tools["query.matrix"].InputSchema, `{"type":"object","properties":{},"additionalProperties":false}`)
	jsonEqual(t, "query.matrix output", tools["query.matrix"].OutputSchema, `{"type":"object","properties":{"matrix":
		{"type":"array","items":{"type":"array","items":{"type":"integer"}}}}}`)
	jsonEqual(t, "query.search output", tools["query.search"].OutputSchema, `{"type":"object","properties":{"search":
		{"type":"array","items":{"type":"object","properties":{
			"__typename": {"type":"string","enum":["Item","Owner"]},
			"id": {"type":["string","null"]},
			"name": {"type":["string","null"]},
			"color": {"type":["string","null"],"enum":["RED","GREEN",null]},
			"created": {"description":"DateTime scalar"}
		}}}}}`)
	jsonEqual(t, "query.item output", tools["query.item"].OutputSchema, `{"type":"object","properties":{"item":
		{"type":["object","null"],"properties":{
			"id": {"type":"string"},
			"name": {"type":"string"},
			"color": {"type":["string","null"],"enum":["RED","GREEN",null]},
			"owner": {"type":["object","null"],"properties":{
				"id": {"type":"string"},
				"name": {"type":"string"},
				"profile": {"type":["object","null"],"properties":{"__typename":{"type":"string"}}}
			}},
			"created": {"description":"DateTime scalar"}
		}}}}`)

	if got := tools["query.items"].Description; got != "Lists items." {
		t.Errorf("query.items description = %q", got)
	}
	if got := tools["query.old"].Description; got != "The old way.\n\nDeprecated: Use items." {
		t.Errorf("query.old description = %q", got)
	}
	for name, tl := range tools {
		wantApproval, wantReadOnly := sources.ApprovalAuto, true
		if !strings.HasPrefix(name, "query.") {
			wantApproval, wantReadOnly = sources.ApprovalRequired, false
		}
		if tl.DefaultApproval != wantApproval {
			t.Errorf("%s approval = %s, want %s", name, tl.DefaultApproval, wantApproval)
		}
		a := tl.Annotations
		if a.ReadOnlyHint == nil || *a.ReadOnlyHint != wantReadOnly || a.OpenWorldHint == nil || !*a.OpenWorldHint {
			t.Errorf("%s annotations = %+v", name, a)
		}
	}
	jsonEqual(t, "raw input", tools["graphql"].InputSchema, `{"type":"object","required":["query"],"additionalProperties":false,"properties":{
		"query":{"type":"string","description":"The GraphQL document: one or more query or mutation operations."},
		"variables":{"type":"object","description":"Values of the document's variables, by name."},
		"operationName":{"type":"string","description":"Which operation of the document to run, when it holds several."}}}`)
	if !strings.Contains(tools["graphql"].Description, "any GraphQL query or mutation") {
		t.Errorf("raw description = %q", tools["graphql"].Description)
	}

	wantWarnings := []sources.Warning{
		{Subject: "subscription Events", Message: "1 subscription field skipped: subscriptions need a long-lived connection, and tools answer once."},
		{Subject: "deprecated fields", Message: "1 field is deprecated (query.old); their tools are kept and their descriptions say so."},
	}
	if diff := cmp.Diff(wantWarnings, d.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if d.SpecHash != sources.Hash([]byte(library)) || d.BaseURL != "" || d.AuthProfile != nil {
		t.Errorf("discovery = hash %s, base %q, auth %v", d.SpecHash, d.BaseURL, d.AuthProfile)
	}
	checkSchemas(t, d.Tools)
}

// validDocument validates a generated document against the schema with
// gqlparser's validator and every rule of the spec.
func validDocument(t *testing.T, schema *ast.Schema, name, doc string) {
	t.Helper()
	q, err := parser.ParseQuery(&ast.Source{Name: name, Input: doc})
	if err != nil {
		t.Errorf("%s: document does not parse: %v\n%s", name, err, doc)
		return
	}
	if errs := validator.ValidateWithRules(schema, q, rules.NewDefaultRules()); len(errs) > 0 {
		t.Errorf("%s: document is not valid: %v\n%s", name, errs, doc)
	}
}

// checkSchemas compiles every input and output schema as JSON Schema.
func checkSchemas(t *testing.T, tools []sources.Tool) {
	t.Helper()
	for _, tl := range tools {
		compileSchema(t, tl.Name+" input", tl.InputSchema)
		compileSchema(t, tl.Name+" output", tl.OutputSchema)
	}
}

func compileSchema(t *testing.T, what string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem://" + strings.NewReplacer(" ", "-", ".", "-").Replace(what) + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s is not a valid JSON Schema: %v\n%s", what, err, raw)
	}
	return s
}

func TestRootsAndDefaults(t *testing.T) {
	d, err := FromSDL(`
		type Query { ping: String }
		type Mutation { reset: Boolean, "A very long one." long: Int }
		scalar String`) // a printed schema may redeclare built-ins
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(d)
	if len(tools) != 4 || tools["mutation.reset"].DefaultApproval != sources.ApprovalRequired {
		t.Fatalf("tools = %v", tools)
	}
	if len(d.Warnings) != 0 {
		t.Errorf("warnings = %v", d.Warnings)
	}
}

func TestUndeclaredDirectives(t *testing.T) {
	// As printed from a federated subgraph: @key and @external are not declared.
	d, err := FromSDL(`
		type Query @key(fields: "id") { me: User @external, old: Int @deprecated }
		type User @key(fields: "id") { id: ID! @external, name: String }`)
	if err != nil {
		t.Fatal(err)
	}
	want := []sources.Warning{
		{Subject: "directives", Message: "The schema uses directives it does not declare (@external, @key); they were ignored."},
		{Subject: "deprecated fields", Message: "1 field is deprecated (query.old); their tools are kept and their descriptions say so."},
	}
	if diff := cmp.Diff(want, d.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got := byName(d)["query.old"].Description; got != "Deprecated: No longer supported" {
		t.Errorf("query.old description = %q", got)
	}
}

func TestDescriptionTrimmed(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", 200)
	d, err := FromSDL(fmt.Sprintf(`type Query { %q a: Int, %q b: Int @deprecated(reason: "gone") }`, long, long))
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(d)
	for _, name := range []string{"query.a", "query.b"} {
		desc := tools[name].Description
		if n := len([]rune(desc)); n > maxDescription {
			t.Errorf("%s: description has %d characters", name, n)
		}
	}
	a := tools["query.a"].Description
	if !strings.HasSuffix(a, "ipsum…") && !strings.HasSuffix(a, "lorem…") {
		t.Errorf("query.a not cut at a word: %q", a[len(a)-20:])
	}
	if b := tools["query.b"].Description; !strings.HasSuffix(b, "…\n\nDeprecated: gone") {
		t.Errorf("query.b = …%q", b[len(b)-30:])
	}
}

func TestBadSchemas(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"invalid SDL", "type Query {\n  a: Int\n\n  b: }\n", "the schema is not valid GraphQL SDL: line 4: Expected Name, found }"},
		{"undefined type", "type Query {\n  a: Nope\n}", "the schema is not valid GraphQL SDL: line 2: Undefined type Nope."},
		{"no query", "type Mutation { a: Int }", "the schema has no Query type"},
		{"empty", "  \n", "the schema is empty"},
		{"JSON not introspection", `{"openapi": "3.1.0"}`, `the JSON is not a GraphQL introspection result: expected {"data":{"__schema":...}} or {"__schema":...}`},
		{"broken JSON", `{"__schema": {`, "the introspection result is not valid JSON"},
		{"introspection without query type", `{"data":{"__schema":{"types":[]}}}`, "the introspection result names no query type"},
		{"introspection of an invalid schema", `{"__schema":{"queryType":{"name":"Query"},"types":[{"kind":"OBJECT","name":"Query","fields":[{"name":"a","args":[],"type":{"kind":"OBJECT","name":"Missing"}}]}]}}`,
			"the introspection result does not describe a valid schema: Undefined type Missing."},
		{"too large", "type Query { a: Int }\n#" + strings.Repeat("x", sources.MaxSpecBytes), "the schema is larger than the 64 MiB limit"},
		{"too large JSON", `{"__schema":"` + strings.Repeat("x", sources.MaxSpecBytes) + `"}`, "the schema is larger than the 64 MiB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := FromSchema(tt.text)
			if err == nil {
				t.Fatalf("no error; %d tools", len(d.Tools))
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %q\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestIntrospectionShapes(t *testing.T) {
	sdlDoc, err := FromSDL(library)
	if err != nil {
		t.Fatal(err)
	}
	result := introspect(t, library)
	wrapped := []byte(`{"data":` + string(result) + `}`)
	for name, body := range map[string][]byte{"bare": result, "data": wrapped} {
		d, err := FromIntrospection(body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.SpecHash != sources.Hash(body) {
			t.Errorf("%s: hash of something else", name)
		}
		if diff := cmp.Diff(sources.AssignPaths("lib", sdlDoc.Tools), sources.AssignPaths("lib", d.Tools)); diff != "" {
			t.Errorf("%s: tools differ from the SDL's (-sdl +introspection):\n%s", name, diff)
		}
	}
}

// introspect turns SDL into an introspection result ({"__schema":...}) the
// way graphql-js prints one, using the peers' graphql package.
func introspect(t *testing.T, sdl string) []byte {
	t.Helper()
	script := `import { buildSchema, introspectionFromSchema } from 'graphql'
let sdl = ''
process.stdin.on('data', (c) => (sdl += c))
process.stdin.on('end', () => process.stdout.write(JSON.stringify(introspectionFromSchema(buildSchema(sdl)))))`
	return runNode(t, script, sdl)
}

func TestDeterministic(t *testing.T) {
	sdl := readPeer(t, githubSDLPath)
	first, err := FromSDL(sdl)
	if err != nil {
		t.Fatal(err)
	}
	second, err := FromSDL(sdl)
	if err != nil {
		t.Fatal(err)
	}
	a, b := sources.AssignPaths("gh", first.Tools), sources.AssignPaths("gh", second.Tools)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("two builds differ (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(first.Warnings, second.Warnings); diff != "" {
		t.Fatalf("warnings differ (-first +second):\n%s", diff)
	}
}

func readPeer(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(peerPath(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
