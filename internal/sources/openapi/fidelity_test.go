package openapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/sources"
)

// refOf decodes a tool's reference.
func refOf(t *testing.T, tl sources.Tool) Ref {
	t.Helper()
	var ref Ref
	if err := json.Unmarshal(tl.Ref, &ref); err != nil {
		t.Fatalf("%s: %v", tl.Name, err)
	}
	return ref
}

// propertySchema returns one input property's schema as JSON.
func propertySchema(t *testing.T, tl sources.Tool, name string) json.RawMessage {
	t.Helper()
	var in struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tl.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	return in.Properties[name]
}

// Servers declared on a path item or an operation take that operation's
// calls; relative ones resolve against the document's URL like the
// document's own servers.
func TestOperationServers(t *testing.T) {
	doc := readPeer(t, "@readme/oas-examples/3.0/json/server-path-level.json")
	baseURLs := func(disc *sources.Discovery) map[string]string {
		out := map[string]string{}
		for _, tl := range disc.Tools {
			out[tl.Name] = refOf(t, tl).BaseURL
		}
		return out
	}

	disc, err := Build(doc, Options{SourceURL: "https://specs.example.com/apis/server-path-level.json"})
	if err != nil {
		t.Fatal(err)
	}
	if disc.BaseURL != "https://demo.example.com:443/v2" || len(disc.Warnings) != 0 {
		t.Errorf("base URL %q, warnings %v", disc.BaseURL, disc.Warnings)
	}
	want := map[string]string{
		"operation.get_empty_operation_servers":    "https://empty-operation-path.example.com", // operation's [] leaves the path item's
		"path.get_empty_path_item_servers":         "",                                         // [] leaves the document's
		"operation.get_operation_server_variables": "https://operation.example.com/v3",
		"path.get_path_item_ref_server":            "https://path-item-ref.example.com", // through the path item's $ref
		"path.get_path_item_server_source":         "https://path-item-ref.example.com",
		"operation.get_relative_operation_server":  "https://specs.example.com/v3",
		"path.get_relative_path_server":            "https://specs.example.com/v2",
	}
	if diff := cmp.Diff(want, baseURLs(disc)); diff != "" {
		t.Errorf("operation base URLs (-want +got):\n%s", diff)
	}
	checkTools(t, disc.Tools)

	// Inline, the relative ones cannot be resolved: their calls go to the
	// source's base URL, with a warning each.
	disc, err = Build(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want["operation.get_relative_operation_server"], want["path.get_relative_path_server"] = "", ""
	if diff := cmp.Diff(want, baseURLs(disc)); diff != "" {
		t.Errorf("inline: operation base URLs (-want +got):\n%s", diff)
	}
	wantWarnings := []sources.Warning{
		{Subject: "GET /relative-operation-server", Message: `the server URL "/v3" is relative and the document has no URL to resolve it against: its calls go to the source's base URL`},
		{Subject: "GET /relative-path-server", Message: `the server URL "/v2" is relative and the document has no URL to resolve it against: its calls go to the source's base URL`},
	}
	if diff := cmp.Diff(wantWarnings, disc.Warnings); diff != "" {
		t.Errorf("inline: warnings (-want +got):\n%s", diff)
	}

	// A base URL set for the source takes every call, said once.
	disc, err = Build(doc, Options{BaseURL: "http://127.0.0.1:4010"})
	if err != nil {
		t.Fatal(err)
	}
	for name, base := range baseURLs(disc) {
		if base != "" {
			t.Errorf("override: %s goes to %q", name, base)
		}
	}
	wantWarnings = []sources.Warning{{Subject: "servers", Message: "6 operations name servers of their own; the base URL set for the source takes their calls too"}}
	if diff := cmp.Diff(wantWarnings, disc.Warnings); diff != "" {
		t.Errorf("override: warnings (-want +got):\n%s", diff)
	}

	// An operation server that comes to the document's base URL is not
	// recorded.
	disc = build(t, `{"openapi": "3.1.0", "servers": [{"url": "https://api.example.com/v1/"}], "paths": {"/x": {
		"servers": [{"url": "https://api.example.com/v1"}], "get": {"responses": {"200": {"description": "ok"}}}}}}`, Options{})
	if base := refOf(t, disc.Tools[0]).BaseURL; base != "" {
		t.Errorf("same server recorded as %q", base)
	}
}

// A Swagger 2.0 operation's own schemes override the document's: an
// operation that does not allow the document's scheme calls the document's
// host and base path with https when it allows it, else http.
func TestSwaggerOperationSchemes(t *testing.T) {
	doc := func(docSchemes string) string {
		return `{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "api.example.com", "basePath": "/v1",` +
			docSchemes + ` "paths": {
		"/secure": {"get": {"operationId": "secure", "schemes": ["https"], "responses": {"200": {"description": "ok"}}}},
		"/either": {"get": {"operationId": "either", "schemes": ["http", "https"], "responses": {"200": {"description": "ok"}}}},
		"/plain": {"get": {"operationId": "plain", "schemes": ["HTTP"], "responses": {"200": {"description": "ok"}}}},
		"/socket": {"get": {"operationId": "socket", "schemes": ["wss", "https"], "responses": {"200": {"description": "ok"}}}},
		"/default": {"get": {"operationId": "default", "responses": {"200": {"description": "ok"}}}}}}`
	}
	bases := func(disc *sources.Discovery) map[string]string {
		out := map[string]string{}
		for _, tl := range disc.Tools {
			out[tl.Name] = refOf(t, tl).BaseURL
		}
		return out
	}
	for _, tc := range []struct {
		name, docSchemes, sourceURL, base string
		want                              map[string]string
	}{
		{"document http", `"schemes": ["http"],`, "", "http://api.example.com/v1",
			map[string]string{"secure": "https://api.example.com/v1", "either": "", "plain": "", "socket": "https://api.example.com/v1", "default": ""}},
		{"document https", `"schemes": ["https"],`, "", "https://api.example.com/v1",
			map[string]string{"secure": "", "either": "", "plain": "http://api.example.com/v1", "socket": "", "default": ""}},
		{"the document's own URL's scheme", "", "https://specs.example.com/api.json", "https://api.example.com/v1",
			map[string]string{"secure": "", "either": "", "plain": "http://api.example.com/v1", "socket": "", "default": ""}},
	} {
		disc := build(t, doc(tc.docSchemes), Options{SourceURL: tc.sourceURL})
		if disc.BaseURL != tc.base {
			t.Errorf("%s: base URL %q, want %q", tc.name, disc.BaseURL, tc.base)
		}
		if diff := cmp.Diff(tc.want, bases(disc)); diff != "" {
			t.Errorf("%s: operation base URLs (-want +got):\n%s", tc.name, diff)
		}
	}
	disc := build(t, doc(`"schemes": ["https"],`), Options{BaseURL: "http://127.0.0.1:4010"})
	if got := bases(disc)["plain"]; got != "" || len(disc.Warnings) != 1 || !strings.Contains(disc.Warnings[0].Message, "1 operations name servers") {
		t.Errorf("override: plain goes to %q; warnings %v", got, disc.Warnings)
	}
}

// A Ref stored before the fields added for call fidelity still decodes,
// meaning what it meant.
func TestRefBackwardCompatible(t *testing.T) {
	old := `{"operation_id": "uploadFile", "method": "POST", "path": "/pet/{petId}/uploadImage",
		"params": [{"name": "petId", "in": "path", "style": "simple", "explode": false, "required": true, "property": "petId"}],
		"body": {"content_types": ["multipart/form-data"], "required": false}}`
	var ref Ref
	if err := json.Unmarshal([]byte(old), &ref); err != nil {
		t.Fatal(err)
	}
	want := Ref{OperationID: "uploadFile", Method: "POST", Path: "/pet/{petId}/uploadImage",
		Params: []ParamRef{{Name: "petId", In: "path", Style: "simple", Required: true, Property: "petId"}},
		Body:   &BodyRef{ContentTypes: []string{"multipart/form-data"}}}
	if diff := cmp.Diff(want, ref); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	again, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	diffJSON(t, "re-encoded", again, old)
}

// Swagger 2.0's collectionFormat becomes a style for every location, csv
// being the default; formData makes a form body, required when a field
// is, multipart first when a field is a file.
func TestSwaggerCollectionFormats(t *testing.T) {
	expanded := build(t, string(readPeer(t, "@readme/oas-examples/2.0/json/petstore-expanded.json")), Options{})
	diffJSON(t, "petstore-expanded findPets", byName(t, expanded.Tools)["find_pets"].Ref, `{
		"operation_id": "findPets", "method": "GET", "path": "/pets", "params": [
			{"name": "tags", "in": "query", "style": "form", "explode": false, "required": false, "property": "tags"},
			{"name": "limit", "in": "query", "style": "form", "explode": true, "required": false, "property": "limit"}
		]}`)

	doc := `{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "api.example.com", "consumes": ["application/json"],
	"parameters": {
		"Fields": {"name": "fields", "in": "query", "type": "array", "items": {"type": "string"}},
		"Note": {"name": "note", "in": "formData", "type": "string", "required": true},
		"Thing": {"name": "thing", "in": "body", "required": true, "schema": {"type": "object"}}
	},
	"paths": {
		"/items/{ids}": {
			"parameters": [{"name": "ids", "in": "path", "required": true, "type": "array", "items": {"type": "string"}, "collectionFormat": "pipes"}],
			"get": {"operationId": "list", "parameters": [
				{"$ref": "#/parameters/Fields"},
				{"name": "space", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "ssv"},
				{"name": "tab", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "tsv"},
				{"name": "pipe", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "pipes"},
				{"name": "multi", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"},
				{"name": "one", "in": "query", "type": "string"},
				{"name": "X-Csv", "in": "header", "type": "array", "items": {"type": "string"}},
				{"name": "X-Ssv", "in": "header", "type": "array", "items": {"type": "string"}, "collectionFormat": "ssv"},
				{"name": "X-Tsv", "in": "header", "type": "array", "items": {"type": "string"}, "collectionFormat": "tsv"}
			], "responses": {"200": {"description": "ok"}}},
			"post": {"operationId": "form", "consumes": ["application/x-www-form-urlencoded"], "parameters": [
				{"name": "csv", "in": "formData", "type": "array", "items": {"type": "string"}},
				{"name": "multi", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"},
				{"name": "tab", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "tsv"},
				{"$ref": "#/parameters/Note"}
			], "responses": {"200": {"description": "ok"}}},
			"put": {"operationId": "upload", "consumes": ["application/x-www-form-urlencoded", "multipart/form-data"], "parameters": [
				{"name": "file", "in": "formData", "type": "file"},
				{"name": "tags", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"}
			], "responses": {"200": {"description": "ok"}}},
			"patch": {"operationId": "misdeclared", "parameters": [
				{"name": "a", "in": "formData", "type": "string"}
			], "responses": {"200": {"description": "ok"}}}
		},
		"/things": {
			"post": {"operationId": "create", "parameters": [{"$ref": "#/parameters/Thing"}], "responses": {"200": {"description": "ok"}}},
			"put": {"operationId": "replace", "parameters": [{"name": "thing", "in": "body", "schema": {"type": "object"}}], "responses": {"200": {"description": "ok"}}}
		}
	}}`
	disc := build(t, doc, Options{})
	if len(disc.Warnings) != 0 {
		t.Errorf("warnings %v", disc.Warnings)
	}
	tools := byName(t, disc.Tools)
	diffJSON(t, "list", tools["list"].Ref, `{"operation_id": "list", "method": "GET", "path": "/items/{ids}", "params": [
		{"name": "ids", "in": "path", "style": "pipeDelimited", "explode": false, "required": true, "property": "ids"},
		{"name": "fields", "in": "query", "style": "form", "explode": false, "required": false, "property": "fields"},
		{"name": "space", "in": "query", "style": "spaceDelimited", "explode": false, "required": false, "property": "space"},
		{"name": "tab", "in": "query", "style": "tabDelimited", "explode": false, "required": false, "property": "tab"},
		{"name": "pipe", "in": "query", "style": "pipeDelimited", "explode": false, "required": false, "property": "pipe"},
		{"name": "multi", "in": "query", "style": "form", "explode": true, "required": false, "property": "multi"},
		{"name": "one", "in": "query", "style": "form", "explode": true, "required": false, "property": "one"},
		{"name": "X-Csv", "in": "header", "style": "simple", "explode": false, "required": false, "property": "X-Csv"},
		{"name": "X-Ssv", "in": "header", "style": "spaceDelimited", "explode": false, "required": false, "property": "X-Ssv"},
		{"name": "X-Tsv", "in": "header", "style": "tabDelimited", "explode": false, "required": false, "property": "X-Tsv"}
	]}`)
	diffJSON(t, "form", tools["form"].Ref, `{"operation_id": "form", "method": "POST", "path": "/items/{ids}", "params": [
		{"name": "ids", "in": "path", "style": "pipeDelimited", "explode": false, "required": true, "property": "ids"}
	], "body": {"content_types": ["application/x-www-form-urlencoded"], "required": true, "fields": {
		"csv": {"style": "form"},
		"multi": {"style": "form", "explode": true},
		"tab": {"style": "tabDelimited"}
	}}}`)
	diffJSON(t, "upload", tools["upload"].Ref, `{"operation_id": "upload", "method": "PUT", "path": "/items/{ids}", "params": [
		{"name": "ids", "in": "path", "style": "pipeDelimited", "explode": false, "required": true, "property": "ids"}
	], "body": {"content_types": ["multipart/form-data", "application/x-www-form-urlencoded"], "required": false, "fields": {
		"file": {"binary": true},
		"tags": {"style": "form", "explode": true}
	}}}`)
	if body := refOf(t, tools["misdeclared"]).Body; !cmp.Equal(body.ContentTypes, []string{"application/x-www-form-urlencoded"}) {
		t.Errorf("formData under consumes application/json: %+v", body)
	}
	diffJSON(t, "form input", propertySchema(t, tools["form"], "body"), `{"type": "object", "required": ["note"], "properties": {
		"csv": {"type": "array", "items": {"type": "string"}},
		"multi": {"type": "array", "items": {"type": "string"}},
		"tab": {"type": "array", "items": {"type": "string"}},
		"note": {"type": "string", "required": ["note"]}
	}}`)
	for name, required := range map[string]bool{"create": true, "replace": false} {
		if body := refOf(t, tools[name]).Body; body == nil || body.Required != required {
			t.Errorf("%s: body %+v, want required %v", name, body, required)
		}
	}
	checkTools(t, disc.Tools)
}

// Files become base64 strings the agent can give, and the Ref says which
// fields (or whether the whole body) to send as bytes.
func TestFileUploads(t *testing.T) {
	disc := build(t, string(readPeer(t, "@readme/oas-examples/3.0/json/file-uploads.json")), Options{})
	tools := byName(t, disc.Tools)
	png := tools["image_png.post_anything_image_png"]
	diffJSON(t, "image/png ref", png.Ref, `{"operation_id": "", "method": "POST", "path": "/anything/image-png", "params": [],
		"body": {"content_types": ["image/png"], "required": false, "binary": true}}`)
	diffJSON(t, "image/png body", propertySchema(t, png, "body"), `{"type": "string", "contentEncoding": "base64", "description": `+jsonText(bodyNote)+`}`)
	single := tools["multipart_form_data.post_anything_multipart_formdata"]
	diffJSON(t, "single file ref", single.Ref, `{"operation_id": "", "method": "POST", "path": "/anything/multipart-formdata", "params": [],
		"body": {"content_types": ["multipart/form-data"], "required": false, "fields": {"documentFile": {"binary": true}}}}`)
	diffJSON(t, "single file body", propertySchema(t, single, "body"), `{"type": "object", "properties": {
		"orderId": {"type": "integer"}, "userId": {"type": "integer"},
		"documentFile": {"type": "string", "contentEncoding": "base64", "description": `+jsonText(fileNote)+`}}}`)
	multiple := tools["multipart_form_data.put_anything_multipart_formdata"]
	diffJSON(t, "files body", propertySchema(t, multiple, "body"), `{"type": "object", "properties": {
		"filename": {"type": "array", "items": {"type": "string", "contentEncoding": "base64", "description": `+jsonText(fileNote)+`}}}}`)
	checkTools(t, disc.Tools)

	doc := `openapi: 3.1.0
servers: [{url: https://files.example.com}]
paths:
  /photos:
    post:
      operationId: addPhoto
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/Photo'}
          multipart/form-data:
            schema: {$ref: '#/components/schemas/Photo'}
            encoding:
              meta: {contentType: 'application/json'}
              thumb: {contentType: 'image/webp, image/png'}
      responses: {'200': {description: ok}}
  /raw:
    put:
      operationId: putRaw
      requestBody:
        description: The archive.
        required: true
        content:
          application/zip: {}
      responses: {'204': {description: done}}
  /text:
    put:
      operationId: putText
      requestBody:
        content:
          text/plain: {}
      responses: {'204': {description: done}}
  /json:
    put:
      operationId: putJSON
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {data: {type: string, format: binary}}}
      responses: {'204': {description: done}}
components:
  schemas:
    Photo:
      type: object
      properties:
        image: {type: string, contentMediaType: image/jpeg, description: The photo.}
        thumb: {type: string, contentMediaType: image/png}
        encoded: {type: string, contentMediaType: image/png, contentEncoding: base64}
        meta: {type: object}
`
	disc = build(t, doc, Options{})
	tools = byName(t, disc.Tools)
	photo := tools["add_photo"]
	diffJSON(t, "photo ref", photo.Ref, `{"operation_id": "addPhoto", "method": "POST", "path": "/photos", "params": [],
		"body": {"content_types": ["multipart/form-data", "application/x-www-form-urlencoded"], "required": false, "fields": {
			"image": {"binary": true, "content_type": "image/jpeg"},
			"thumb": {"binary": true, "content_type": "image/webp"},
			"meta": {"content_type": "application/json"}
		}}}`)
	diffJSON(t, "photo body", propertySchema(t, photo, "body"), `{"type": "object", "properties": {
		"image": {"type": "string", "contentMediaType": "image/jpeg", "contentEncoding": "base64", "description": `+jsonText("The photo.\n\n"+fileNote)+`},
		"thumb": {"type": "string", "contentMediaType": "image/png", "contentEncoding": "base64", "description": `+jsonText(fileNote)+`},
		"encoded": {"type": "string", "contentMediaType": "image/png", "contentEncoding": "base64"},
		"meta": {"type": "object"}}}`)
	raw := tools["put_raw"]
	diffJSON(t, "raw ref", raw.Ref, `{"operation_id": "putRaw", "method": "PUT", "path": "/raw", "params": [],
		"body": {"content_types": ["application/zip"], "required": true, "binary": true}}`)
	diffJSON(t, "raw body", propertySchema(t, raw, "body"), `{"type": "string", "contentEncoding": "base64", "description": `+jsonText("The archive.\n\n"+bodyNote)+`}`)
	for _, name := range []string{"put_text", "put_json"} {
		if body := refOf(t, tools[name]).Body; body.Binary || body.Fields != nil {
			t.Errorf("%s: body %+v is not a file", name, body)
		}
	}
	diffJSON(t, "json body", propertySchema(t, tools["put_json"], "body"), `{"type": "object", "properties": {"data": {"type": "string", "format": "binary"}}}`)
	checkTools(t, disc.Tools)
}

// jsonText is s as a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Parameters described with content record their media type; allowReserved
// is kept for query parameters, where OpenAPI defines it.
func TestParameterContentAndAllowReserved(t *testing.T) {
	doc := `{"openapi": "3.0.3", "servers": [{"url": "https://api.example.com"}], "paths": {"/search/{sel}": {"get": {
		"operationId": "search",
		"parameters": [
			{"name": "sel", "in": "path", "required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
			{"name": "filter", "in": "query", "content": {"text/plain": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}}},
			{"name": "next", "in": "query", "allowReserved": true, "schema": {"type": "string"}},
			{"name": "X-Next", "in": "header", "allowReserved": true, "schema": {"type": "string"}},
			{"name": "prefs", "in": "cookie", "content": {"application/json": {"schema": {"type": "array"}}}}
		],
		"responses": {"200": {"description": "ok"}}}}}}`
	disc := build(t, doc, Options{})
	tl := disc.Tools[0]
	diffJSON(t, "ref", tl.Ref, `{"operation_id": "search", "method": "GET", "path": "/search/{sel}", "params": [
		{"name": "sel", "in": "path", "style": "simple", "explode": false, "required": true, "property": "sel", "content_type": "application/json"},
		{"name": "filter", "in": "query", "style": "form", "explode": true, "required": false, "property": "filter", "content_type": "application/json"},
		{"name": "next", "in": "query", "style": "form", "explode": true, "required": false, "property": "next", "allow_reserved": true},
		{"name": "X-Next", "in": "header", "style": "simple", "explode": false, "required": false, "property": "X-Next"},
		{"name": "prefs", "in": "cookie", "style": "form", "explode": true, "required": false, "property": "prefs", "content_type": "application/json"}
	]}`)
	diffJSON(t, "filter schema", propertySchema(t, tl, "filter"), `{"type": "object"}`)
	checkTools(t, disc.Tools)
}
