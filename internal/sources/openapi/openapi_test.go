package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/internal/sources"
)

// build runs Build and fails the test on an error.
func build(t *testing.T, doc string, opts Options) *sources.Discovery {
	t.Helper()
	disc, err := Build([]byte(doc), opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return disc
}

// byName indexes tools by name, failing on a name used twice.
func byName(t *testing.T, tools []sources.Tool) map[string]sources.Tool {
	t.Helper()
	out := map[string]sources.Tool{}
	for _, tl := range tools {
		if _, dup := out[tl.Name]; dup {
			t.Fatalf("tool name %q built twice", tl.Name)
		}
		out[tl.Name] = tl
	}
	return out
}

// asAny decodes raw JSON into generic values for comparisons.
func asAny(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// diffJSON fails when raw does not equal want as JSON values.
func diffJSON(t *testing.T, what string, raw json.RawMessage, want string) {
	t.Helper()
	if diff := cmp.Diff(asAny(t, json.RawMessage(want)), asAny(t, raw)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// compileSchema compiles a schema as JSON Schema 2020-12, which is what MCP
// clients validate arguments with.
func compileSchema(t testing.TB, what string, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 {
		return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Errorf("%s: not JSON: %v", what, err)
		return
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if _, err := c.Compile("schema.json"); err != nil {
		t.Errorf("%s: not a valid JSON Schema: %v", what, err)
	}
}

var mcpName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkTools assigns paths and checks what every tool must satisfy: a
// valid, unique path, schemas that compile, a reference that decodes.
func checkTools(t testing.TB, tools []sources.Tool) []sources.Tool {
	t.Helper()
	tools = sources.AssignPaths("petstore", tools)
	seen := map[string]bool{}
	for _, tl := range tools {
		if !mcpName.MatchString(tl.Path) || !strings.HasPrefix(tl.Path, "petstore.") || seen[tl.Path] {
			t.Errorf("path %q is not a valid, unique MCP tool name", tl.Path)
		}
		seen[tl.Path] = true
		compileSchema(t, tl.Path+" input", tl.InputSchema)
		compileSchema(t, tl.Path+" output", tl.OutputSchema)
		var in struct {
			Type                 string         `json:"type"`
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &in); err != nil || in.Type != "object" || in.Properties == nil || in.AdditionalProperties == nil || *in.AdditionalProperties {
			t.Errorf("%s: input schema is not a closed object: %s", tl.Path, tl.InputSchema)
		}
		var ref Ref
		if err := json.Unmarshal(tl.Ref, &ref); err != nil || ref.Method == "" || !strings.HasPrefix(ref.Path, "/") {
			t.Errorf("%s: ref %s", tl.Path, tl.Ref)
		}
		for _, p := range ref.Params {
			if _, ok := in.Properties[p.Property]; !ok {
				t.Errorf("%s: parameter %s in %s maps to missing property %q", tl.Path, p.Name, p.In, p.Property)
			}
		}
		if len([]rune(tl.Description)) > maxDescription {
			t.Errorf("%s: description of %d characters", tl.Path, len([]rune(tl.Description)))
		}
	}
	return tools
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"malformed JSON", "{\n  \"openapi\": \"3.0.3\",\n  \"paths\": {,}\n}", "the document is not valid JSON or YAML: line 3, column 13: invalid character ',' looking for beginning of object key string"},
		{"truncated JSON", `{"openapi": "3.0.3", "paths": {`, "the document is not valid JSON or YAML: it ends before the JSON is complete"},
		{"JSON with trailing data", `{"openapi": "3.0.3"} {}`, "the document is not valid JSON or YAML: line 1: unexpected data after the top-level value"},
		{"malformed YAML", "openapi: 3.0.3\npaths:\n  /pets: [\n", "the document is not valid JSON or YAML: line 3: did not find expected node content"},
		{"YAML tabs", "openapi: 3.0.3\npaths:\n\t/pets: {}\n", "the document is not valid JSON or YAML: line 3: found character that cannot start any token"},
		{"empty", " \n ", "the document is empty"},
		{"JSON list", `[{"openapi": "3.0.3"}]`, "the document is not an OpenAPI description: its top level is a list, not an object"},
		{"YAML text", "just some words", "the document is not an OpenAPI description: its top level is text, not an object"},
		{"object that is not OpenAPI", `{"name": "petstore", "version": 2}`, `the document is not an OpenAPI description: it has neither an "openapi" nor a "swagger" version field`},
		{"OpenAPI 4.0", `{"openapi": "4.0", "paths": {}}`, `unsupported OpenAPI version "4.0"`},
		{"OpenAPI 2.0 spelled as openapi", `{"openapi": "2.0"}`, `unsupported OpenAPI version "2.0"`},
		{"Swagger 1.2", `{"swagger": "1.2"}`, `unsupported Swagger version "1.2"`},
		{"no operations", `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}`, "the document has no operations"},
		{"no paths", "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n", "the document has no operations"},
		{"webhooks only", `{"openapi": "3.1.0", "webhooks": {"ping": {"post": {}}}}`, "the document has no operations: it describes only webhooks, which are not tools"},
		{"unresolvable $ref", `{"openapi": "3.0.3", "paths": {"/pets": {"get": {"responses": {"200": {"description": "ok",
			"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}}}}}}}`,
			`no operation could be turned into a tool; the first one failed at GET /pets: response 200: $ref "#/components/schemas/Missing" does not resolve`},
		{"Swagger 2.0 with an unresolvable $ref", `{"swagger": "2.0", "host": "x.example", "paths": {"/pets": {"get": {"responses": {"200": {"description": "ok",
			"schema": {"$ref": "#/definitions/Missing"}}}}}}}`,
			`no operation could be turned into a tool; the first one failed at GET /pets: $ref "#/definitions/Missing" does not resolve`},
		{"external $ref", `{"openapi": "3.0.3", "paths": {"/pets": {"post": {"requestBody": {"$ref": "other.yaml#/Body"}}}}}`,
			`$ref "other.yaml#/Body" points outside the document, which is not supported`},
		{"YAML alias bomb", yamlBomb(), "the document is not valid JSON or YAML: its aliases expand to more nodes than toolgate accepts"},
		{"HTML page", "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please sign in</body></html>", "the document is an HTML page, not an OpenAPI description"},
		{"HTML fragment", "  <html lang=en><body>502 Bad Gateway</body></html>", "the document is an HTML page, not an OpenAPI description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disc, err := Build([]byte(tt.doc), Options{})
			if err == nil {
				t.Fatalf("Build succeeded with %d tools, want error %q", len(disc.Tools), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// yamlBomb is a "billion laughs" YAML document: small, with aliases that
// expand to 10^12 nodes.
func yamlBomb() string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\nx-l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "x-l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("paths:\n  /x:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {default: *l12}\n")
	return b.String()
}

func TestTooLarge(t *testing.T) {
	doc := make([]byte, 0, sources.MaxSpecBytes+64)
	doc = append(doc, `{"openapi": "3.0.3", "info": {"title": "big", "description": "`...)
	doc = append(doc, bytes.Repeat([]byte("a"), sources.MaxSpecBytes)...)
	doc = append(doc, `"}, "paths": {}}`...)
	_, err := Build(doc, Options{})
	if err == nil || err.Error() != "the document is larger than the 64 MiB limit" {
		t.Fatalf("error %v, want the 64 MiB limit", err)
	}
}

// circular is a 3.0 document whose Node schema refers to itself, directly
// and through Tree, plus a reference chain that is not a cycle.
const circular = `{
  "openapi": "3.0.3",
  "info": {"title": "trees", "version": "1"},
  "servers": [{"url": "https://trees.example.com/v1/"}],
  "paths": {
    "/trees": {
      "post": {
        "operationId": "plantTree",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}},
        "responses": {"201": {"description": "planted", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}}
      }
    }
  },
  "components": {
    "schemas": {
      "Tree": {"type": "object", "properties": {"root": {"$ref": "#/components/schemas/Node"}, "label": {"$ref": "#/components/schemas/Label"}}},
      "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}, "tree": {"$ref": "#/components/schemas/Tree"}}},
      "Label": {"$ref": "#/components/schemas/Text"},
      "Text": {"type": "string", "maxLength": 20}
    }
  }
}`

func TestCircularRefIsCut(t *testing.T) {
	disc := build(t, circular, Options{})
	if len(disc.Tools) != 1 {
		t.Fatalf("%d tools, want 1", len(disc.Tools))
	}
	tl := disc.Tools[0]
	diffJSON(t, "input", tl.InputSchema, `{
		"type": "object", "additionalProperties": false, "required": ["body"],
		"properties": {"body": {"type": "object", "properties": {
			"label": {"type": "string", "maxLength": 20},
			"root": {"type": "object", "properties": {
				"children": {"type": "array", "items": {"$comment": "recursive reference to Node cut", "type": "object"}},
				"tree": {"$comment": "recursive reference to Tree cut", "type": "object"}
			}}
		}}}
	}`)
	diffJSON(t, "output", tl.OutputSchema, `{"type": "object", "properties": {
		"children": {"type": "array", "items": {"$comment": "recursive reference to Node cut", "type": "object"}},
		"tree": {"type": "object", "properties": {
			"label": {"type": "string", "maxLength": 20},
			"root": {"$comment": "recursive reference to Node cut", "type": "object"}
		}}
	}}`)
	if disc.BaseURL != "https://trees.example.com/v1" {
		t.Errorf("base URL %q", disc.BaseURL)
	}
}

// TestRecursionBudget builds a schema whose expansion would grow with
// every path through a tangle of mutually recursive schemas, and checks
// that it is cut for size instead of exhausting memory.
func TestRecursionBudget(t *testing.T) {
	var schemas []string
	const n = 12
	for i := range n {
		var props []string
		for j := range n {
			if j != i {
				props = append(props, `"p`+string(rune('a'+j))+`": {"$ref": "#/components/schemas/S`+string(rune('a'+j))+`"}`)
			}
		}
		schemas = append(schemas, `"S`+string(rune('a'+i))+`": {"type": "object", "properties": {`+strings.Join(props, ",")+`}}`)
	}
	doc := `{"openapi": "3.0.3", "servers": [{"url": "https://x.example"}], "paths": {"/s": {"get": {"operationId": "getS", "responses": {"200": {"description": "ok",
		"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Sa"}}}}}}}},
		"components": {"schemas": {` + strings.Join(schemas, ",") + `}}}`
	disc := build(t, doc, Options{})
	if diff := cmp.Diff(disc, build(t, doc, Options{}), rawAsText); diff != "" {
		t.Fatalf("two builds differ (-first +second):\n%s", diff)
	}
	out := string(disc.Tools[0].OutputSchema)
	if !strings.Contains(out, "cut: the schema is too large") || !strings.Contains(out, "recursive reference to Sa cut") {
		t.Fatalf("output schema lacks the markers (%d bytes)", len(out))
	}
	if len(out) > 8<<20 {
		t.Fatalf("output schema of %d bytes", len(out))
	}
	want := []sources.Warning{{Subject: "GET /s", Message: "the output schema grows too large when its references are expanded; the deepest are cut with a marker"}}
	if diff := cmp.Diff(want, disc.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestUnresolvableRefSkipsOnlyItsOperation(t *testing.T) {
	doc := `{"openapi": "3.0.3", "servers": [{"url": "https://pets.example.com"}], "paths": {
		"/pets": {
			"get": {"operationId": "listPets", "tags": ["pets"], "responses": {"200": {"description": "ok"}}},
			"post": {"operationId": "createPet", "tags": ["pets"], "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet%20Missing"}}}}}
		},
		"/pets/{id}": {
			"parameters": [{"$ref": "#/components/parameters/Nope"}],
			"get": {"operationId": "showPet"}
		}
	}}`
	disc := build(t, doc, Options{})
	if len(disc.Tools) != 1 || disc.Tools[0].Name != "pets.list_pets" {
		t.Fatalf("tools %+v", disc.Tools)
	}
	want := []sources.Warning{
		{Subject: "POST /pets", Message: `skipped: the request body: $ref "#/components/schemas/Pet%20Missing" does not resolve`},
		{Subject: "GET /pets/{id}", Message: `skipped: a parameter: $ref "#/components/parameters/Nope" does not resolve`},
	}
	if diff := cmp.Diff(want, disc.Warnings); diff != "" {
		t.Fatalf("warnings (-want +got):\n%s", diff)
	}
}

func TestSwaggerUnresolvableRefSkipsOnlyItsOperation(t *testing.T) {
	doc := `{"swagger": "2.0", "host": "pets.example.com", "basePath": "/v1",
	"paths": {
		"/pets": {
			"get": {"operationId": "listPets", "responses": {"200": {"description": "ok", "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}}},
			"post": {"operationId": "createPet", "parameters": [{"in": "body", "name": "pet", "schema": {"$ref": "#/definitions/Owner"}}], "responses": {"201": {"description": "ok"}}}
		},
		"/owners/{id}": {
			"parameters": [{"$ref": "#/parameters/Gone"}],
			"get": {"operationId": "getOwner", "responses": {"200": {"description": "ok"}}}
		}
	},
	"definitions": {
		"Pet": {"type": "object", "properties": {"name": {"type": "string"}, "friend": {"$ref": "#/definitions/Pet"}}},
		"Owner": {"type": "object", "properties": {"pets": {"type": "array", "items": {"$ref": "#/definitions/Owner"}}, "address": {"$ref": "#/definitions/Address"}}},
		"Address": {"type": "object", "properties": {"owner": {"$ref": "#/definitions/Owner"}, "city": {"$ref": "#/definitions/City"}}}
	}}`
	disc := build(t, doc, Options{})
	if len(disc.Tools) != 1 || disc.Tools[0].Name != "list_pets" || disc.BaseURL != "https://pets.example.com/v1" {
		t.Fatalf("tools %+v, base URL %q", disc.Tools, disc.BaseURL)
	}
	want := []sources.Warning{
		{Subject: "GET /owners/{id}", Message: `skipped: $ref "#/parameters/Gone" does not resolve`},
		{Subject: "POST /pets", Message: `skipped: $ref "#/definitions/City" does not resolve`},
	}
	if diff := cmp.Diff(want, disc.Warnings); diff != "" {
		t.Fatalf("warnings (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(disc.Tools[0].OutputSchema), "recursive reference to Pet cut") {
		t.Errorf("output schema %s", disc.Tools[0].OutputSchema)
	}
}

func TestNames(t *testing.T) {
	doc := `{"openapi": "3.1.0", "servers": [{"url": "https://x.example"}], "paths": {
		"/repos/{owner}/{repo}": {"get": {"operationId": "repos/get", "tags": ["repos"]}},
		"/pets": {"get": {"operationId": "listPets", "tags": ["pets"]}, "post": {"operationId": "createPet"}},
		"/pets/{petId}": {"get": {"tags": ["pets"]}, "delete": {}, "put": {"operationId": "replace", "x-toolgate-name": "pets.Replace-It"}},
		"/store/inventory": {"get": {"operationId": "getInventory", "tags": ["Store Front", "other"]}},
		"/same": {"get": {"operationId": "pets", "tags": ["pets"]}}
	}}`
	var names []string
	for _, tl := range build(t, doc, Options{}).Tools {
		names = append(names, tl.Name)
	}
	want := []string{
		"pets.list_pets", "create_pet", // /pets: get, post
		"delete_pets_pet_id", "pets.get_pets_pet_id", "pets.Replace-It", // /pets/{petId}: delete, get, put
		"repos.get",
		"pets.pets",
		"store_front.get_inventory",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("names in path-then-method order (-want +got):\n%s", diff)
	}
}

func TestXToolgateNameIsHonoured(t *testing.T) {
	for _, doc := range []string{
		"openapi: 3.0.3\nservers: [{url: 'https://x.example'}]\npaths:\n  /pets:\n    get:\n      operationId: listPets\n      tags: [pets]\n      x-toolgate-name: animals.everything\n",
		"swagger: '2.0'\nhost: x.example\npaths:\n  /pets:\n    get:\n      operationId: listPets\n      tags: [pets]\n      x-toolgate-name: animals.everything\n      responses: {'200': {description: ok}}\n",
	} {
		disc := build(t, doc, Options{})
		if got := disc.Tools[0].Name; got != "animals.everything" {
			t.Errorf("name %q, want animals.everything", got)
		}
		if got := sources.AssignPaths("zoo", disc.Tools)[0].Path; got != "zoo.animals.everything" {
			t.Errorf("path %q", got)
		}
	}
}

func TestInputSchemaMergesParametersAndBody(t *testing.T) {
	doc := `{"openapi": "3.0.3", "servers": [{"url": "https://x.example"}],
	"paths": {"/things/{id}": {
		"parameters": [
			{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "from the path item"},
			{"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
			{"$ref": "#/components/parameters/Trace"}
		],
		"patch": {
			"operationId": "patchThing",
			"parameters": [
				{"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "format": "int64"}, "description": "the thing's id"},
				{"name": "id", "in": "header", "schema": {"type": "string"}, "description": "a request id"},
				{"name": "id", "in": "cookie", "schema": {"type": "string"}},
				{"name": "Authorization", "in": "header", "schema": {"type": "string"}},
				{"name": "tags", "in": "query", "style": "pipeDelimited", "schema": {"type": "array", "items": {"type": "string"}}},
				{"name": "filter", "in": "query", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": {"type": "string"}}}}},
				{"name": "body", "in": "query", "deprecated": true, "schema": {"type": "string"}}
			],
			"requestBody": {"$ref": "#/components/requestBodies/Thing"},
			"responses": {"204": {"description": "done"}}
		}
	}},
	"components": {
		"parameters": {"Trace": {"name": "X-Trace", "in": "header", "required": true, "schema": {"type": "string", "example": "abc"}}},
		"requestBodies": {"Thing": {"description": "The changes.", "required": true, "content": {
			"text/plain": {"schema": {"type": "string"}},
			"application/merge-patch+json": {"schema": {"$ref": "#/components/schemas/Thing"}},
			"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
		}}},
		"schemas": {"Thing": {
			"type": "object", "discriminator": {"propertyName": "kind"}, "xml": {"name": "thing"}, "x-internal": true,
			"externalDocs": {"url": "https://docs.example"},
			"properties": {
				"kind": {"type": "string", "enum": ["a", "b"], "nullable": true},
				"size": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": false},
				"note": {"allOf": [{"$ref": "#/components/schemas/Note"}], "nullable": true},
				"owner": {"$ref": "#/components/schemas/Owner", "nullable": true, "description": "Who owns it."},
				"xml": {"type": "string", "example": "a property named xml stays"}
			}
		}, "Note": {"type": "string"}, "Owner": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}
	}}`
	disc := build(t, doc, Options{})
	tl := disc.Tools[0]
	diffJSON(t, "input schema", tl.InputSchema, `{
		"type": "object", "additionalProperties": false,
		"required": ["id", "X-Trace", "body"],
		"properties": {
			"id": {"type": "integer", "format": "int64", "description": "the thing's id"},
			"verbose": {"type": "boolean"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"filter": {"type": "object", "additionalProperties": {"type": "string"}},
			"body_query": {"type": "string", "deprecated": true},
			"X-Trace": {"type": "string", "examples": ["abc"]},
			"id_header": {"type": "string", "description": "a request id"},
			"id_cookie": {"type": "string"},
			"body": {
				"type": "object", "description": "The changes.",
				"properties": {
					"kind": {"type": ["string", "null"], "enum": ["a", "b", null]},
					"size": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
					"note": {"anyOf": [{"allOf": [{"type": "string"}]}, {"type": "null"}]},
					"owner": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}], "description": "Who owns it."},
					"xml": {"type": "string", "examples": ["a property named xml stays"]}
				}
			}
		}
	}`)
	diffJSON(t, "ref", tl.Ref, `{
		"operation_id": "patchThing", "method": "PATCH", "path": "/things/{id}",
		"params": [
			{"name": "id", "in": "path", "style": "simple", "explode": false, "required": true, "property": "id"},
			{"name": "verbose", "in": "query", "style": "form", "explode": true, "required": false, "property": "verbose"},
			{"name": "tags", "in": "query", "style": "pipeDelimited", "explode": false, "required": false, "property": "tags"},
			{"name": "filter", "in": "query", "style": "form", "explode": true, "required": false, "property": "filter", "content_type": "application/json"},
			{"name": "body", "in": "query", "style": "form", "explode": true, "required": false, "property": "body_query"},
			{"name": "X-Trace", "in": "header", "style": "simple", "explode": false, "required": true, "property": "X-Trace"},
			{"name": "id", "in": "header", "style": "simple", "explode": false, "required": false, "property": "id_header"},
			{"name": "id", "in": "cookie", "style": "form", "explode": true, "required": false, "property": "id_cookie"}
		],
		"body": {"content_types": ["application/json", "application/merge-patch+json", "text/plain"], "required": true}
	}`)
	if tl.OutputSchema != nil {
		t.Errorf("output schema %s for a 204", tl.OutputSchema)
	}
	checkTools(t, disc.Tools)
}

func TestThreeOneSchemasKeepTheirKeywords(t *testing.T) {
	doc := `openapi: 3.1.0
servers: [{url: https://x.example}]
paths:
  /items:
    post:
      operationId: addItem
      requestBody:
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/Item'
              description: The item to add.
components:
  schemas:
    Item:
      type: object
      required: [name]
      properties:
        name: {type: [string, "null"], examples: [lamp]}
        kind: {const: item}
        big: {type: integer, maximum: 9223372036854775807, exclusiveMinimum: 0}
        price: {type: number, multipleOf: 0.01}
        tags: {type: array, prefixItems: [{type: string}], items: false}
        created: {type: string, format: date-time}
`
	disc := build(t, doc, Options{})
	diffJSON(t, "input schema", disc.Tools[0].InputSchema, `{
		"type": "object", "additionalProperties": false,
		"properties": {"body": {
			"type": "object", "required": ["name"], "description": "The item to add.",
			"properties": {
				"name": {"type": ["string", "null"], "examples": ["lamp"]},
				"kind": {"const": "item"},
				"big": {"type": "integer", "maximum": 9223372036854775807, "exclusiveMinimum": 0},
				"price": {"type": "number", "multipleOf": 0.01},
				"tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
				"created": {"type": "string", "format": "date-time"}
			}
		}}
	}`)
	if !strings.Contains(string(disc.Tools[0].InputSchema), `"maximum":9223372036854775807`) {
		t.Errorf("large integer lost its digits: %s", disc.Tools[0].InputSchema)
	}
	checkTools(t, disc.Tools)
}

func TestOutputSchemaPrefersSuccess(t *testing.T) {
	schema := func(title string) string {
		return `{"description": "d", "content": {"application/json": {"schema": {"title": "` + title + `"}}}}`
	}
	tests := []struct {
		name, responses, want string
	}{
		{"200 first", `{"201": ` + schema("201") + `, "200": ` + schema("200") + `, "default": ` + schema("default") + `}`, `{"title": "200"}`},
		{"then 201", `{"202": ` + schema("202") + `, "201": ` + schema("201") + `}`, `{"title": "201"}`},
		{"lowest 2xx", `{"206": ` + schema("206") + `, "203": ` + schema("203") + `, "2XX": ` + schema("2XX") + `}`, `{"title": "203"}`},
		{"2XX", `{"2XX": ` + schema("2XX") + `, "default": ` + schema("default") + `, "400": ` + schema("400") + `}`, `{"title": "2XX"}`},
		{"default only without success", `{"default": ` + schema("default") + `, "404": ` + schema("404") + `}`, `{"title": "default"}`},
		{"no schema", `{"200": {"description": "ok"}, "default": ` + schema("default") + `}`, ``},
		{"errors only", `{"404": ` + schema("404") + `}`, ``},
		{"JSON over XML", `{"200": {"description": "d", "content": {"application/xml": {"schema": {"title": "xml"}}, "application/vnd.api+json": {"schema": {"title": "json"}}}}}`, `{"title": "json"}`},
		{"any media type when no JSON", `{"200": {"description": "d", "content": {"text/csv": {"schema": {"type": "string"}}}}}`, `{"type": "string"}`},
		{"response $ref", `{"200": {"$ref": "#/components/responses/Ok"}}`, `{"title": "shared"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"openapi": "3.0.3", "servers": [{"url": "https://x.example"}], "paths": {"/x": {"get": {"responses": ` + tt.responses + `}}},
				"components": {"responses": {"Ok": ` + schema("shared") + `}}}`
			out := build(t, doc, Options{}).Tools[0].OutputSchema
			if tt.want == "" {
				if out != nil {
					t.Fatalf("output schema %s, want none", out)
				}
				return
			}
			diffJSON(t, "output schema", out, tt.want)
		})
	}
}

func TestDescription(t *testing.T) {
	long := strings.Repeat("word ", 300)
	tests := []struct {
		summary, description, want string
	}{
		{"List pets", "All of them.", "List pets\n\nAll of them."},
		{"", "  All of them.\n", "All of them."},
		{"List pets", "", "List pets"},
		{"Same", "Same", "Same"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := describe(strings.TrimSpace(tt.summary), strings.TrimSpace(tt.description)); got != tt.want {
			t.Errorf("describe(%q, %q) = %q, want %q", tt.summary, tt.description, got, tt.want)
		}
	}
	got := describe("Summary", long)
	if n := len([]rune(got)); n > maxDescription || n < maxDescription-10 {
		t.Errorf("long description has %d characters", n)
	}
	if !strings.HasSuffix(got, "word…") {
		t.Errorf("long description not cut at a word: ...%q", got[len(got)-20:])
	}
	if got := describe("", strings.Repeat("é", 1500)); len([]rune(got)) != maxDescription || !strings.HasSuffix(got, "é…") {
		t.Errorf("a description without spaces is cut at %d characters", len([]rune(got)))
	}
}

func TestApprovalsAndAnnotations(t *testing.T) {
	doc := `{"openapi": "3.0.3", "servers": [{"url": "https://x.example"}], "paths": {"/x": {
		"get": {}, "head": {}, "options": {}, "put": {}, "post": {}, "patch": {}, "delete": {}, "trace": {}
	}}}`
	tests := map[string]struct {
		approval                                     sources.Approval
		readOnly, destructive, idempotent, openWorld bool
	}{
		"GET":     {sources.ApprovalAuto, true, false, true, true},
		"HEAD":    {sources.ApprovalAuto, true, false, true, true},
		"OPTIONS": {sources.ApprovalAuto, true, false, true, true},
		"PUT":     {sources.ApprovalRequired, false, false, true, true},
		"POST":    {sources.ApprovalRequired, false, false, false, true},
		"PATCH":   {sources.ApprovalRequired, false, false, false, true},
		"DELETE":  {sources.ApprovalRequired, false, true, true, true},
		"TRACE":   {sources.ApprovalRequired, false, false, false, true},
	}
	disc := build(t, doc, Options{})
	if len(disc.Tools) != len(tests) {
		t.Fatalf("%d tools", len(disc.Tools))
	}
	for _, tl := range disc.Tools {
		var ref Ref
		_ = json.Unmarshal(tl.Ref, &ref)
		want := tests[ref.Method]
		a := tl.Annotations
		got := struct {
			approval                                     sources.Approval
			readOnly, destructive, idempotent, openWorld bool
		}{tl.DefaultApproval, *a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}
		if got != want {
			t.Errorf("%s: %+v, want %+v", ref.Method, got, want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct {
		name, doc string
		opts      Options
		want      string
		warning   string
	}{
		{"override", `{"openapi": "3.0.3", "servers": [{"url": "https://a.example"}]`, Options{BaseURL: "https://b.example/api/"}, "https://b.example/api", ""},
		{"variables", `{"openapi": "3.0.3", "servers": [{"url": "https://{region}.example.com:{port}/{base}", "variables": {"region": {"default": "eu", "enum": ["eu", "us"]}, "port": {"default": "8443"}, "base": {"default": "v2"}}}, {"url": "https://other.example"}]`, Options{}, "https://eu.example.com:8443/v2", ""},
		{"relative to the source", `{"openapi": "3.1.0", "servers": [{"url": "/api/v3"}]`, Options{SourceURL: "https://petstore3.swagger.io/api/v3/openapi.json"}, "https://petstore3.swagger.io/api/v3", ""},
		{"relative path to the source", `{"openapi": "3.1.0", "servers": [{"url": "v3"}]`, Options{SourceURL: "https://h.example/specs/openapi.json"}, "https://h.example/specs/v3", ""},
		{"relative and inline", `{"openapi": "3.1.0", "servers": [{"url": "/api/v3"}]`, Options{}, "", `the server URL "/api/v3" is relative and the document has no URL to resolve it against: set a base URL for calls to work`},
		{"no servers", `{"openapi": "3.0.3"`, Options{SourceURL: "https://h.example/openapi.json"}, "", "the document names no server: set a base URL for calls to work"},
		{"swagger", `{"swagger": "2.0", "host": "api.example.com:8080", "basePath": "/v1", "schemes": ["http", "https"]`, Options{}, "http://api.example.com:8080/v1", ""},
		{"swagger without schemes", `{"swagger": "2.0", "host": "api.example.com", "basePath": "/v1"`, Options{SourceURL: "http://api.example.com/swagger.json"}, "http://api.example.com/v1", ""},
		{"swagger without host", `{"swagger": "2.0", "basePath": "/v1"`, Options{SourceURL: "https://api.example.com/docs/swagger.json"}, "https://api.example.com/v1", ""},
		{"swagger without host, inline", `{"swagger": "2.0"`, Options{}, "", `the server URL "/" is relative and the document has no URL to resolve it against: set a base URL for calls to work`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.doc + `, "paths": {"/x": {"get": {"responses": {"200": {"description": "ok"}}}}}}`
			disc := build(t, doc, tt.opts)
			if disc.BaseURL != tt.want {
				t.Errorf("base URL %q, want %q", disc.BaseURL, tt.want)
			}
			var want []sources.Warning
			if tt.warning != "" {
				want = []sources.Warning{{Subject: "servers", Message: tt.warning}}
			}
			if diff := cmp.Diff(want, disc.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthProfile(t *testing.T) {
	oauth := &sources.AuthProfile{Type: "oauth2", Note: "OAuth 2 is noted for later; use a bearer token for now"}
	tests := []struct {
		name, security string
		want           *sources.AuthProfile
	}{
		{"none", ``, nil},
		{"bearer", `"components": {"securitySchemes": {"jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}}`, &sources.AuthProfile{Type: "bearer", Scheme: "Bearer"}},
		{"api key in a header", `"components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}}`, &sources.AuthProfile{Type: "apiKey", In: "header", Name: "X-API-Key"}},
		{"api key in the query", `"components": {"securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}}}`, &sources.AuthProfile{Type: "apiKey", In: "query", Name: "api_key"}},
		{"api key in a cookie", `"components": {"securitySchemes": {"key": {"type": "apiKey", "in": "cookie", "name": "sid"}}}`, &sources.AuthProfile{Type: "apiKey", In: "cookie", Name: "sid"}},
		{"basic", `"components": {"securitySchemes": {"b": {"type": "http", "scheme": "Basic"}}}`, &sources.AuthProfile{Type: "basic"}},
		{"oauth2", `"components": {"securitySchemes": {"o": {"type": "oauth2", "flows": {}}}}`, oauth},
		{"openIdConnect", `"components": {"securitySchemes": {"o": {"type": "openIdConnect", "openIdConnectUrl": "https://id.example"}}}`, oauth},
		{"unknown scheme only", `"components": {"securitySchemes": {"d": {"type": "http", "scheme": "digest"}}}`, nil},
		{"global security first", `"security": [{}, {"o": []}, {"key": []}], "components": {"securitySchemes": {
			"key": {"type": "apiKey", "in": "header", "name": "X-Key"}, "o": {"type": "oauth2"}}}`, oauth},
		{"global security names a missing scheme", `"security": [{"gone": []}], "components": {"securitySchemes": {
			"o": {"type": "oauth2"}, "key": {"type": "apiKey", "in": "header", "name": "X-Key"}}}`, &sources.AuthProfile{Type: "apiKey", In: "header", Name: "X-Key"}},
		{"without global security, the most usable", `"components": {"securitySchemes": {
			"a_oauth": {"type": "oauth2"}, "b_basic": {"type": "http", "scheme": "basic"}, "c_bearer": {"type": "http", "scheme": "bearer"}}}`, &sources.AuthProfile{Type: "bearer", Scheme: "Bearer"}},
		{"scheme by $ref", `"security": [{"k": []}], "components": {"securitySchemes": {"k": {"$ref": "#/components/securitySchemes/real"},
			"real": {"type": "apiKey", "in": "query", "name": "token"}}}`, &sources.AuthProfile{Type: "apiKey", In: "query", Name: "token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"openapi": "3.0.3", "servers": [{"url": "https://x.example"}], "paths": {"/x": {"get": {}}}`
			if tt.security != "" {
				doc += ", " + tt.security
			}
			disc := build(t, doc+"}", Options{})
			if diff := cmp.Diff(tt.want, disc.AuthProfile); diff != "" {
				t.Errorf("auth profile (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDuplicateOperationIDsWarn(t *testing.T) {
	doc := `{"openapi": "3.0.3", "servers": [{"url": "https://x.example"}], "paths": {
		"/a": {"get": {"operationId": "fetch"}}, "/b": {"get": {"operationId": "fetch"}}}}`
	disc := build(t, doc, Options{})
	want := []sources.Warning{{Subject: "GET /b", Message: `operationId "fetch" is also used by GET /a; the tools get distinct paths`}}
	if diff := cmp.Diff(want, disc.Warnings); diff != "" {
		t.Fatalf("warnings (-want +got):\n%s", diff)
	}
	tools := checkTools(t, disc.Tools)
	if tools[0].Path != "petstore.fetch" || tools[1].Path != "petstore.fetch_2" {
		t.Fatalf("paths %q, %q", tools[0].Path, tools[1].Path)
	}
}

func TestYAMLFeatures(t *testing.T) {
	doc := `
openapi: 3.0.3
servers: [{url: "https://x.example"}]
x-common: &common
  type: string
  maxLength: 10
paths:
  /x/{id}:
    get:
      operationId: getX
      parameters:
        - name: id
          in: path
          required: true
          schema:
            <<: *common
            maxLength: 5
        - name: since
          in: query
          schema: {type: string, format: date, example: 2024-01-02}
      responses:
        200:
          description: ok
          content:
            application/json:
              schema: *common
`
	disc := build(t, doc, Options{})
	tl := disc.Tools[0]
	diffJSON(t, "input", tl.InputSchema, `{"type": "object", "additionalProperties": false, "required": ["id"], "properties": {
		"id": {"type": "string", "maxLength": 5},
		"since": {"type": "string", "format": "date", "examples": ["2024-01-02"]}
	}}`)
	diffJSON(t, "output", tl.OutputSchema, `{"type": "string", "maxLength": 10}`)
	if disc.SpecHash != sources.Hash([]byte(doc)) {
		t.Errorf("spec hash %q", disc.SpecHash)
	}
}
