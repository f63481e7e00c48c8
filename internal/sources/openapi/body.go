package openapi

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Form media types.
const (
	formURLEncoded = "application/x-www-form-urlencoded"
	multipartForm  = "multipart/form-data"
)

// Notes added to the description of what an agent gives base64-encoded.
const (
	fileNote = "The file's bytes, base64-encoded; a base64 data: URL (data:image/png;name=photo.png;base64,...) works too and names the part's media type and file name."
	bodyNote = "The file's bytes, base64-encoded (a base64 data: URL works too); toolgate sends the bytes."
)

// body is the request body's input property and reference.
type body struct {
	schema any
	ref    BodyRef
}

// requestBody reads the operation's request body, if any. The schema comes
// from the preferred media type, except that multipart is preferred to
// urlencoded when its fields include files. Files, in a form or as the
// whole body, become base64 strings in the input schema and are marked in
// the reference so that the gateway sends their bytes.
func (b *builder) requestBody(o operation) (*body, error) {
	raw, ok := o.op["requestBody"]
	if !ok || raw == nil {
		return nil, nil
	}
	obj, err := b.res.object(raw)
	if err != nil {
		return nil, fmt.Errorf("the request body: %w", err)
	}
	content, _ := obj["content"].(map[string]any)
	types := mediaTypes(content)
	ref := BodyRef{ContentTypes: types, Required: obj["required"] == true}
	var schema any = map[string]any{}
	var media map[string]any
	if len(types) > 0 {
		media, _ = content[types[0]].(map[string]any)
		if schema, err = b.mediaTypeSchema(media); err != nil {
			return nil, fmt.Errorf("the request body: %w", err)
		}
	}
	if len(types) > 1 && mediaBase(types[0]) == formURLEncoded {
		if reordered := multipartFirst(types); reordered[0] != types[0] {
			multipart, _ := content[reordered[0]].(map[string]any)
			s, err := b.mediaTypeSchema(multipart)
			if err != nil {
				return nil, fmt.Errorf("the request body: %w", err)
			}
			if _, fields := formFields(s, nil, nil); hasFiles(fields) {
				schema, media, ref.ContentTypes = s, multipart, reordered
			}
		}
	}
	sw := b.swagger[o.subject()]
	if sw.form != nil {
		ref.ContentTypes, ref.Required = sw.form.types, sw.form.required
	}
	var first string
	if len(ref.ContentTypes) > 0 {
		first = ref.ContentTypes[0]
	}
	switch base := mediaBase(first); {
	case base == formURLEncoded || base == multipartForm:
		var styles map[string]style
		if sw.form != nil {
			styles = sw.form.fields
		}
		schema, ref.Fields = formFields(schema, media, styles)
	case binaryBody(base, media, schema):
		s, _ := schema.(map[string]any)
		schema, ref.Binary = base64Schema(s, bodyNote), true
	}
	if desc := strings.TrimSpace(str(obj["description"])); desc != "" {
		if m, isMap := schema.(map[string]any); isMap {
			m = maps.Clone(m)
			if note := str(m["description"]); ref.Binary && note != "" {
				desc += "\n\n" + note
			}
			m["description"] = desc
			schema = m
		}
	}
	return &body{schema: schema, ref: ref}, nil
}

// mediaTypeSchema expands a media type object's schema; without one, any
// value goes.
func (b *builder) mediaTypeSchema(media map[string]any) (any, error) {
	raw := media["schema"]
	if raw == nil {
		return map[string]any{}, nil
	}
	return b.exp.schema(raw)
}

// formFields turns a form body's file fields (direct properties whose
// schema, or whose items' schema, is binary) into base64 strings, and
// describes every field that is not sent by the defaults: files, the media
// type of a part and styles, from the media type's encoding object or
// Swagger 2.0's collectionFormat. The schema given is left as it is.
func formFields(schema any, media map[string]any, styles map[string]style) (any, map[string]FieldRef) {
	fields := map[string]FieldRef{}
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	var rewritten map[string]any
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p, _ := props[name].(map[string]any)
		file, mediaType := fileSchema(p)
		if file == nil {
			continue
		}
		if rewritten == nil {
			rewritten = maps.Clone(props)
		}
		rewritten[name] = file
		fields[name] = FieldRef{Binary: true, ContentType: mediaType}
	}
	encoding, _ := media["encoding"].(map[string]any)
	for name, raw := range encoding {
		enc, _ := raw.(map[string]any)
		f := fields[name]
		if ct, _, _ := strings.Cut(str(enc["contentType"]), ","); strings.TrimSpace(ct) != "" {
			f.ContentType = strings.TrimSpace(ct)
		}
		explode, set := enc["explode"].(bool)
		if st := str(enc["style"]); st != "" || set {
			f.Style = cmp.Or(st, "form")
			f.Explode = explode || !set && f.Style == "form"
		}
		f.AllowReserved = enc["allowReserved"] == true
		if f != (FieldRef{}) {
			fields[name] = f
		}
	}
	for name, st := range styles {
		f := fields[name]
		f.Style, f.Explode = st.name, st.explode
		fields[name] = f
	}
	if rewritten != nil {
		s = maps.Clone(s)
		s["properties"] = rewritten
		schema = s
	}
	if len(fields) == 0 {
		fields = nil
	}
	return schema, fields
}

// multipartFirst moves the first multipart type of a list to its front.
func multipartFirst(types []string) []string {
	i := slices.IndexFunc(types, func(mt string) bool { return mediaBase(mt) == multipartForm })
	if i <= 0 {
		return types
	}
	return append([]string{types[i]}, slices.Delete(slices.Clone(types), i, i+1)...)
}

// hasFiles reports whether a form has a file field.
func hasFiles(fields map[string]FieldRef) bool {
	for _, f := range fields {
		if f.Binary {
			return true
		}
	}
	return false
}

// fileSchema returns the base64 form of a field's schema when the field is
// a file or a list of files, with the file's media type if the schema
// names one; nil otherwise.
func fileSchema(p map[string]any) (map[string]any, string) {
	if isBinarySchema(p) {
		return base64Schema(p, fileNote), str(p["contentMediaType"])
	}
	if items, ok := p["items"].(map[string]any); ok && isBinarySchema(items) {
		out := maps.Clone(p)
		out["items"] = base64Schema(items, fileNote)
		return out, str(items["contentMediaType"])
	}
	return nil, ""
}

// isBinarySchema reports a string schema for raw bytes: format binary
// (OpenAPI 3.0, Swagger 2.0's file), or a contentMediaType without a
// contentEncoding (3.1; with one, the text on the wire is already encoded).
func isBinarySchema(s map[string]any) bool {
	if s == nil {
		return false
	}
	if t, typed := s["type"]; typed && !hasType(t, "string") {
		return false
	}
	return s["format"] == "binary" || str(s["contentMediaType"]) != "" && s["contentEncoding"] == nil
}

// hasType reports whether a schema's type (a name or a list) includes name.
func hasType(t any, name string) bool {
	if list, ok := t.([]any); ok {
		return slices.Contains(list, any(name))
	}
	return t == name
}

// base64Schema is a binary string schema as the agent gives it: base64
// text (contentEncoding base64, which with a contentMediaType says whose
// bytes), described with note.
func base64Schema(s map[string]any, note string) map[string]any {
	out := maps.Clone(s)
	if out == nil {
		out = map[string]any{}
	}
	delete(out, "format")
	if _, typed := out["type"]; !typed {
		out["type"] = "string"
	}
	out["contentEncoding"] = "base64"
	if desc := strings.TrimSpace(str(s["description"])); desc != "" {
		note = desc + "\n\n" + note
	}
	out["description"] = note
	return out
}

// binaryBody reports whether a body of a media type (base, without
// parameters) is a file: its schema is a binary string, or it has no
// schema and the media type is one of bytes (application/octet-stream,
// images, audio, video, fonts, PDF and archives). JSON and forms never are.
func binaryBody(base string, media map[string]any, schema any) bool {
	switch {
	case base == "" || base == formURLEncoded || base == multipartForm || isJSONMedia(base):
		return false
	case media["schema"] == nil:
		top, _, _ := strings.Cut(base, "/")
		switch base {
		case "application/octet-stream", "application/pdf", "application/zip", "application/gzip", "application/x-tar":
			return true
		}
		return top == "image" || top == "audio" || top == "video" || top == "font"
	}
	s, _ := schema.(map[string]any)
	return isBinarySchema(s)
}

// mediaBase is a media type without its parameters, in lower case.
func mediaBase(mt string) string {
	base, _, _ := strings.Cut(mt, ";")
	return strings.ToLower(strings.TrimSpace(base))
}

// isJSONMedia reports JSON media types: application/json, */*+json, */json.
func isJSONMedia(base string) bool {
	return strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "/json")
}
