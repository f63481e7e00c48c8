package httpcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/sources/openapi"
)

// encodedBody is a request body ready to send.
type encodedBody struct {
	contentType string
	data        []byte
}

// body encodes the body argument; a missing required body is a problem.
func (b *builder) body(ref *openapi.BodyRef, arg any, binary map[string]bool) *encodedBody {
	v, err := normalize(arg)
	if err != nil {
		b.problem("the request body (argument %q): %v", BodyProperty, err)
		return nil
	}
	if v == nil {
		if ref.Required {
			b.problem("the request body (argument %q) is required", BodyProperty)
		}
		return nil
	}
	enc, err := encodeBody(ref.ContentTypes, v, binary)
	if err != nil {
		b.problem("the request body (argument %q): %v", BodyProperty, err)
		return nil
	}
	return enc
}

// encodeBody encodes v as the first of the operation's media types that
// can carry it: JSON (application/json, */*+json) carries anything, a form
// (urlencoded or multipart) an object, any other type a string as is.
// When none can, a value that is not a string is sent as JSON.
func encodeBody(types []string, v any, binary map[string]bool) (*encodedBody, error) {
	s, isString := v.(string)
	obj, isObject := v.(map[string]any)
	for _, ct := range types {
		switch base := mediaBase(ct); {
		case isJSONType(base):
			return jsonBody(ct, v)
		case base == "application/x-www-form-urlencoded":
			if isObject {
				return &encodedBody{contentType: "application/x-www-form-urlencoded", data: formBody(obj)}, nil
			}
		case base == "multipart/form-data":
			if isObject {
				return multipartBody(obj, binary)
			}
		case base == "*/*" || base == "application/*":
			if isString {
				return &encodedBody{contentType: "text/plain; charset=utf-8", data: []byte(s)}, nil
			}
			return jsonBody("application/json", v)
		case base == "text/*":
			if isString {
				return &encodedBody{contentType: "text/plain; charset=utf-8", data: []byte(s)}, nil
			}
		case strings.HasSuffix(base, "/*"):
			if isString {
				return &encodedBody{contentType: "application/octet-stream", data: []byte(s)}, nil
			}
		default:
			if isString {
				return &encodedBody{contentType: ct, data: []byte(s)}, nil
			}
		}
	}
	if !isString {
		return jsonBody("application/json", v)
	}
	if len(types) == 0 {
		return &encodedBody{contentType: "text/plain; charset=utf-8", data: []byte(s)}, nil
	}
	return nil, fmt.Errorf("a string cannot be sent as %s: give an object of the form's fields", strings.Join(types, " or "))
}

// mediaBase is a media type without its parameters, in lower case.
func mediaBase(ct string) string {
	base, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(base))
}

// isJSONType reports JSON media types: application/json, */*+json, */json.
func isJSONType(base string) bool {
	return base == "application/json" || strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "/json")
}

func jsonBody(ct string, v any) (*encodedBody, error) {
	data, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	return &encodedBody{contentType: ct, data: data}, nil
}

// formBody encodes an object as application/x-www-form-urlencoded with
// OpenAPI's default for form fields (style form, explode): an array
// repeats its field, an object's members become fields of their own, and
// deeper values are JSON text.
func formBody(obj map[string]any) []byte {
	var b strings.Builder
	add := func(k string, v any) {
		s, _ := scalarText(v)
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(s))
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch t := obj[k].(type) {
		case nil:
		case []any:
			for _, item := range t {
				add(k, item)
			}
		case map[string]any:
			for _, kk := range slices.Sorted(maps.Keys(t)) {
				if t[kk] != nil {
					add(kk, t[kk])
				}
			}
		default:
			add(k, t)
		}
	}
	return []byte(b.String())
}

// multipartBody encodes an object as multipart/form-data: primitives as
// text fields, an array as one part per item, objects (and arrays inside
// arrays) as application/json parts, and a string for a binary field as a
// file part named after the field.
func multipartBody(obj map[string]any, binary map[string]bool) (*encodedBody, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		items := []any{obj[k]}
		if list, ok := obj[k].([]any); ok {
			items = list
		}
		for _, item := range items {
			if err := writePart(w, k, item, binary[k]); err != nil {
				return nil, fmt.Errorf("field %q: %w", k, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &encodedBody{contentType: w.FormDataContentType(), data: buf.Bytes()}, nil
}

// quoteEscaper escapes a Content-Disposition parameter, as mime/multipart does.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// writePart writes one multipart field.
func writePart(w *multipart.Writer, name string, v any, binary bool) error {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if binary {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", multipart.FileContentDisposition(name, name))
			h.Set("Content-Type", "application/octet-stream")
			part, err := w.CreatePart(h)
			if err != nil {
				return err
			}
			_, err = part.Write([]byte(t))
			return err
		}
		return w.WriteField(name, t)
	case map[string]any, []any:
		data, err := marshalJSON(t)
		if err != nil {
			return err
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+quoteEscaper.Replace(name)+`"`)
		h.Set("Content-Type", "application/json")
		part, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		_, err = part.Write(data)
		return err
	}
	s, err := scalarText(v)
	if err != nil {
		return err
	}
	return w.WriteField(name, s)
}

// BinaryFields lists the body fields a tool's input schema declares as
// binary strings ("format": "binary", or a contentMediaType without a
// contentEncoding, directly or as an array's items): the fields
// [WithBinaryFields] wants. Compute it once per tool.
func BinaryFields(inputSchema json.RawMessage) []string {
	var schema struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &schema) != nil {
		return nil
	}
	var out []string
	for name, raw := range schema.Properties[BodyProperty].Properties {
		if isBinary(raw) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// isBinary reports whether a property's schema (or its items') is a
// binary string.
func isBinary(raw json.RawMessage) bool {
	var s struct {
		Format           string          `json:"format"`
		ContentMediaType string          `json:"contentMediaType"`
		ContentEncoding  string          `json:"contentEncoding"`
		Items            json.RawMessage `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	if s.Format == "binary" || s.ContentMediaType != "" && s.ContentEncoding == "" {
		return true
	}
	return len(s.Items) > 0 && isBinary(s.Items)
}
