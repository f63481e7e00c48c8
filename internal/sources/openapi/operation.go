package openapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/sources"
)

// Ref is an OpenAPI tool's reference back to its operation ([sources.Tool.Ref]):
// what the gateway needs to turn the tool's arguments into an HTTP request.
// Fields added since the first version are optional, so that references
// stored before them still decode and mean what they meant.
type Ref struct {
	OperationID string `json:"operation_id"`
	// Method is upper case; Path is the template as the document writes it.
	Method string `json:"method"`
	Path   string `json:"path"`
	// BaseURL, when set, is where this operation's calls go instead of the
	// source's base URL: the first of the servers its operation or path
	// item declares (OpenAPI 3), absolute. It is empty when they declare
	// none, name the document's own, or the source overrides its base URL.
	BaseURL string     `json:"base_url,omitempty"`
	Params  []ParamRef `json:"params"`
	// Body is nil when the operation takes no request body.
	Body *BodyRef `json:"body,omitempty"`
}

// ParamRef maps one parameter to the input property that carries it, with
// its serialization (OpenAPI's defaults filled in).
//
// Style is one of OpenAPI's (simple, label, matrix, form, spaceDelimited,
// pipeDelimited, deepObject), or tabDelimited for Swagger 2.0's tsv;
// Swagger 2.0's path and header parameters may also be spaceDelimited,
// pipeDelimited or tabDelimited (ssv, pipes and tsv).
type ParamRef struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Style    string `json:"style"`
	Explode  bool   `json:"explode"`
	Required bool   `json:"required"`
	Property string `json:"property"`
	// AllowReserved sends RFC 3986's reserved characters in a query
	// parameter's value as they are.
	AllowReserved bool `json:"allow_reserved,omitempty"`
	// ContentType is set when the document describes the parameter with
	// content rather than a schema: the value is serialized as this media
	// type (JSON text for JSON) and the text escaped for the parameter's
	// location; Style and Explode do not apply.
	ContentType string `json:"content_type,omitempty"`
}

// BodyRef describes the request body, carried by the input property "body".
type BodyRef struct {
	// ContentTypes lists the media types, the preferred one first.
	ContentTypes []string `json:"content_types"`
	Required     bool     `json:"required"`
	// Binary reports that the body is a file's bytes (a string with format
	// binary, or no schema, under a media type such as
	// application/octet-stream or image/png): the argument is their
	// base64 text, or a base64 data: URL, and the bytes are sent.
	Binary bool `json:"binary,omitempty"`
	// Fields says how the fields of a form body (multipart/form-data or
	// application/x-www-form-urlencoded) are sent where the defaults do
	// not hold: files, part media types, and the styles of the
	// document's encoding object or of Swagger 2.0's collectionFormat.
	Fields map[string]FieldRef `json:"fields,omitempty"`
}

// FieldRef is how one field of a form body is sent.
type FieldRef struct {
	// Binary reports a file (or, for an array, files): base64 text (or a
	// base64 data: URL) in the arguments, sent as the decoded bytes, as a
	// file part of a multipart body.
	Binary bool `json:"binary,omitempty"`
	// ContentType is the media type of the field's multipart part: the
	// encoding's contentType, else the schema's contentMediaType.
	ContentType string `json:"content_type,omitempty"`
	// Style and Explode serialize the field's value as a query parameter
	// of that style would be (form, spaceDelimited, pipeDelimited,
	// tabDelimited, deepObject). An empty Style is the default: form,
	// exploded, in an urlencoded body; one part per array item, and
	// objects as JSON parts, in a multipart body.
	Style   string `json:"style,omitempty"`
	Explode bool   `json:"explode,omitempty"`
	// AllowReserved leaves RFC 3986's reserved characters unescaped in an
	// urlencoded body.
	AllowReserved bool `json:"allow_reserved,omitempty"`
}

// bodyProperty is the input property that carries the request body.
const bodyProperty = "body"

// maxDescription is the longest tool description, in characters.
const maxDescription = 1000

// operation is one operation of the document being turned into a tool.
type operation struct {
	path, method string
	op           map[string]any
	// params are the path item's and the operation's parameters.
	params []any
	// servers are the operation's servers, else its path item's.
	servers any
}

// subject names an operation in warnings: "GET /pets/{petId}".
func (o operation) subject() string {
	return strings.ToUpper(o.method) + " " + o.path
}

// tool builds the tool for one operation.
func (b *builder) tool(o operation) (sources.Tool, error) {
	params, err := b.parameters(o)
	if err != nil {
		return sources.Tool{}, err
	}
	ref := Ref{OperationID: str(o.op["operationId"]), Method: strings.ToUpper(o.method), Path: o.path, BaseURL: b.operationBaseURL(o), Params: []ParamRef{}}
	input, err := b.input(o, params, &ref)
	if err != nil {
		return sources.Tool{}, err
	}
	output, err := b.output(o)
	if err != nil {
		return sources.Tool{}, err
	}
	refJSON, err := json.Marshal(ref)
	if err != nil {
		return sources.Tool{}, fmt.Errorf("encode reference: %w", err)
	}
	summary := strings.TrimSpace(str(o.op["summary"]))
	return sources.Tool{
		Name:            toolName(o),
		Title:           summary,
		Description:     describe(summary, strings.TrimSpace(str(o.op["description"]))),
		InputSchema:     input,
		OutputSchema:    output,
		Annotations:     annotations(o.method),
		DefaultApproval: approval(o.method),
		Ref:             refJSON,
	}, nil
}

// str returns v when it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// toolName is x-toolgate-name, else "<tag>.<operation>" in snake_case.
func toolName(o operation) string {
	if name := strings.TrimSpace(str(o.op["x-toolgate-name"])); name != "" {
		return name
	}
	var tag string
	if tags, ok := o.op["tags"].([]any); ok && len(tags) > 0 {
		tag = sources.SnakeCase(str(tags[0]))
	}
	name := sources.SnakeCase(str(o.op["operationId"]))
	if name == "" {
		name = sources.SnakeCase(o.method + " " + o.path)
	}
	if tag == "" {
		return name
	}
	return tag + "." + strings.TrimPrefix(name, tag+"_")
}

// describe joins summary and description and keeps it within
// maxDescription characters, cut at a word.
func describe(summary, description string) string {
	text := summary
	if description != "" && description != summary {
		if text != "" {
			text += "\n\n"
		}
		text += description
	}
	if utf8.RuneCountInString(text) <= maxDescription {
		return text
	}
	runes := []rune(text)[:maxDescription-1]
	cut := len(runes)
	for i := len(runes) - 1; i > len(runes)/2; i-- {
		if unicode.IsSpace(runes[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(runes[:cut]), unicode.IsSpace) + "…"
}

// approval is auto for safe methods and required for the others.
func approval(method string) sources.Approval {
	if safe(method) {
		return sources.ApprovalAuto
	}
	return sources.ApprovalRequired
}

// safe reports whether a method only reads.
func safe(method string) bool {
	return method == "get" || method == "head" || method == "options"
}

// annotations are MCP's hints, all set: an HTTP API is an open world.
func annotations(method string) sources.Annotations {
	return sources.Annotations{
		ReadOnlyHint:    ptr(safe(method)),
		DestructiveHint: ptr(method == "delete"),
		IdempotentHint:  ptr(safe(method) || method == "put" || method == "delete"),
		OpenWorldHint:   ptr(true),
	}
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// param is a resolved parameter.
type param struct {
	name, in string
	obj      map[string]any
}

// location ranks a parameter's location, -1 for an unknown one: a name
// first seen in the path keeps it, one repeated in the query, a header or a
// cookie gets a suffix.
func location(in string) int {
	return slices.Index([]string{"path", "query", "header", "cookie"}, in)
}

// parameters merges the path item's and the operation's parameters (the
// operation's win for the same name and location), in location order.
// Headers OpenAPI says to ignore (Accept, Content-Type, Authorization) are
// left out, as are parameters without a name or a known location.
func (b *builder) parameters(o operation) ([]param, error) {
	var out []param
	index := map[[2]string]int{}
	for _, raw := range o.params {
		obj, err := b.res.object(raw)
		if err != nil {
			return nil, fmt.Errorf("a parameter: %w", err)
		}
		p := param{name: str(obj["name"]), in: str(obj["in"]), obj: obj}
		if location(p.in) < 0 || p.name == "" {
			b.warn(o.subject(), fmt.Sprintf("parameter %q in %q is ignored: it needs a name and a location (path, query, header or cookie)", p.name, p.in))
			continue
		}
		if p.in == "header" && ignoredHeader(p.name) {
			continue
		}
		key := [2]string{p.name, p.in}
		if i, seen := index[key]; seen {
			out[i] = p
			continue
		}
		index[key] = len(out)
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, c param) int { return cmp.Compare(location(a.in), location(c.in)) })
	return out, nil
}

// ignoredHeader reports the header parameters OpenAPI says to ignore.
func ignoredHeader(name string) bool {
	switch strings.ToLower(name) {
	case "accept", "content-type", "authorization":
		return true
	}
	return false
}

// input builds the input schema and fills the reference's params and body.
func (b *builder) input(o operation, params []param, ref *Ref) (json.RawMessage, error) {
	b.exp.start()
	props := map[string]any{}
	var required []any
	body, err := b.requestBody(o)
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	if body != nil {
		taken[bodyProperty] = true
	}
	for _, p := range params {
		schema, err := b.paramSchema(p)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", p.name, err)
		}
		prop := propertyName(p, taken)
		props[prop] = schema
		req := p.in == "path" || p.obj["required"] == true
		if req {
			required = append(required, prop)
		}
		pr := paramRef(p, prop, req)
		if st, ok := b.swagger[o.subject()].styles[[2]string{p.name, p.in}]; ok {
			pr.Style, pr.Explode = st.name, st.explode
		}
		ref.Params = append(ref.Params, pr)
	}
	if body != nil {
		props[bodyProperty] = body.schema
		if body.ref.Required {
			required = append(required, bodyProperty)
		}
		ref.Body = &body.ref
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	if b.exp.done() {
		b.warn(o.subject(), tooLarge("input"))
	}
	return b.marshal(schema)
}

// propertyName is the input property of a parameter: its name, or when a
// parameter elsewhere already has it, the name suffixed with the location
// ("id_header"), numbered if even that is taken.
func propertyName(p param, taken map[string]bool) string {
	name := p.name
	if taken[name] {
		name = p.name + "_" + p.in
	}
	for n := 2; taken[name]; n++ {
		name = p.name + "_" + p.in + "_" + strconv.Itoa(n)
	}
	taken[name] = true
	return name
}

// paramRef describes how a parameter is sent, with OpenAPI's defaults.
func paramRef(p param, prop string, required bool) ParamRef {
	style := str(p.obj["style"])
	if style == "" {
		style = "simple"
		if p.in == "query" || p.in == "cookie" {
			style = "form"
		}
	}
	explode, set := p.obj["explode"].(bool)
	if !set {
		explode = style == "form"
	}
	ref := ParamRef{Name: p.name, In: p.in, Style: style, Explode: explode, Required: required, Property: prop}
	ref.AllowReserved = p.in == "query" && p.obj["allowReserved"] == true
	if _, hasSchema := p.obj["schema"]; !hasSchema {
		if content, ok := p.obj["content"].(map[string]any); ok {
			ref.ContentType = preferredMediaType(content)
		}
	}
	return ref
}

// paramSchema is a parameter's schema (from schema, or from its only media
// type in content) carrying the parameter's description.
func (b *builder) paramSchema(p param) (any, error) {
	raw, ok := p.obj["schema"]
	if !ok {
		if content, isMap := p.obj["content"].(map[string]any); isMap {
			if mt := preferredMediaType(content); mt != "" {
				raw = mediaSchema(content[mt])
			}
		}
	}
	var schema any = map[string]any{}
	if raw != nil {
		var err error
		if schema, err = b.exp.schema(raw); err != nil {
			return nil, err
		}
	}
	desc := strings.TrimSpace(str(p.obj["description"]))
	deprecated := p.obj["deprecated"] == true
	if desc == "" && !deprecated {
		return schema, nil
	}
	m, ok := schema.(map[string]any)
	if !ok {
		m = map[string]any{}
		if schema == false {
			m["not"] = map[string]any{}
		}
	}
	m = maps.Clone(m)
	if desc != "" {
		m["description"] = desc
	}
	if deprecated {
		m["deprecated"] = true
	}
	return m, nil
}

// mediaSchema returns a media type object's schema, or nil.
func mediaSchema(mediaType any) any {
	m, _ := mediaType.(map[string]any)
	return m["schema"]
}

// mediaTypes lists a content object's media types, the preferred first and
// the others sorted.
func mediaTypes(content map[string]any) []string {
	types := make([]string, 0, len(content))
	for mt := range content {
		types = append(types, mt)
	}
	slices.SortFunc(types, func(a, c string) int {
		if r := cmp.Compare(mediaRank(a), mediaRank(c)); r != 0 {
			return r
		}
		return strings.Compare(a, c)
	})
	return types
}

// preferredMediaType is the media type to take a schema from: JSON first.
func preferredMediaType(content map[string]any) string {
	if types := mediaTypes(content); len(types) > 0 {
		return types[0]
	}
	return ""
}

// mediaRank orders media types: application/json, other JSON (*+json),
// forms, anything else.
func mediaRank(mt string) int {
	base := mediaBase(mt)
	switch {
	case base == "application/json":
		return 0
	case isJSONMedia(base):
		return 1
	case base == formURLEncoded || base == multipartForm:
		return 2
	case base == "*/*" || base == "application/*":
		return 3
	}
	return 4
}

// output is the schema of the preferred successful response, if it has one.
func (b *builder) output(o operation) (json.RawMessage, error) {
	responses, _ := o.op["responses"].(map[string]any)
	code := preferredResponse(responses)
	if code == "" {
		return nil, nil
	}
	resp, err := b.res.object(responses[code])
	if err != nil {
		return nil, fmt.Errorf("response %s: %w", code, err)
	}
	content, _ := resp["content"].(map[string]any)
	for _, mt := range mediaTypes(content) {
		raw := mediaSchema(content[mt])
		if raw == nil {
			continue
		}
		b.exp.start()
		schema, err := b.exp.schema(raw)
		if err != nil {
			return nil, fmt.Errorf("response %s: %w", code, err)
		}
		if b.exp.done() {
			b.warn(o.subject(), tooLarge("output"))
		}
		return b.marshal(schema)
	}
	return nil, nil
}

// tooLarge says a schema was cut for size.
func tooLarge(which string) string {
	return "the " + which + " schema grows too large when its references are expanded; the deepest are cut with a marker"
}

// preferredResponse picks the response the output schema comes from: 200,
// 201, the lowest other 2xx, 2XX, and default only when there is no other.
func preferredResponse(responses map[string]any) string {
	for _, code := range []string{"200", "201"} {
		if _, ok := responses[code]; ok {
			return code
		}
	}
	best := ""
	for code := range responses {
		if len(code) == 3 && code[0] == '2' && isDigit(code[1]) && isDigit(code[2]) && (best == "" || code < best) {
			best = code
		}
	}
	if best != "" {
		return best
	}
	for code := range responses {
		if strings.EqualFold(code, "2XX") {
			return code
		}
	}
	if _, ok := responses["default"]; ok {
		return "default" // with no 2xx declared, default is what success answers
	}
	return ""
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
