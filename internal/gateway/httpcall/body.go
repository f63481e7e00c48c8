package httpcall

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
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
func (b *builder) body(ref *openapi.BodyRef, arg any, rawFiles map[string]bool) *encodedBody {
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
	enc, err := encodeBody(ref, v, rawFiles)
	if err != nil {
		b.problem("the request body (argument %q): %v", BodyProperty, err)
		return nil
	}
	return enc
}

// encodeBody encodes v as the first of the operation's media types that
// can carry it: JSON (application/json, */*+json) carries anything, a form
// (urlencoded or multipart) an object, any other type a string as is. A
// binary body takes only a string, base64, and sends its bytes. When no
// type can carry the value, one that is not a string is sent as JSON.
func encodeBody(ref *openapi.BodyRef, v any, rawFiles map[string]bool) (*encodedBody, error) {
	types := ref.ContentTypes
	s, isString := v.(string)
	obj, isObject := v.(map[string]any)
	if ref.Binary {
		if !isString {
			return nil, fmt.Errorf("the body is a file: give its bytes as base64 text, not %s", describe(v))
		}
		return fileBody(types, s)
	}
	for _, ct := range types {
		switch base := mediaBase(ct); {
		case isJSONType(base):
			return jsonBody(ct, v)
		case base == "application/x-www-form-urlencoded":
			if isObject {
				data, err := formBody(obj, ref.Fields)
				if err != nil {
					return nil, err
				}
				return &encodedBody{contentType: "application/x-www-form-urlencoded", data: data}, nil
			}
		case base == "multipart/form-data":
			if isObject {
				return multipartBody(obj, ref.Fields, rawFiles)
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

// mediaText is a parameter's value as text of its media type: JSON for a
// JSON type; for another, a string as it is and anything else as
// [scalarText] writes it.
func mediaText(ct string, v any) (string, error) {
	if isJSONType(mediaBase(ct)) {
		data, err := marshalJSON(v)
		return string(data), err
	}
	return scalarText(v)
}

func jsonBody(ct string, v any) (*encodedBody, error) {
	data, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	return &encodedBody{contentType: ct, data: data}, nil
}

// fileBody sends the bytes of a file given as base64 (see [decodeFile]) as
// the operation's media type: the first, or the one the data: URL names
// when the operation lists it; for a wildcard (image/*), the data: URL's
// media type, else application/octet-stream.
func fileBody(types []string, s string) (*encodedBody, error) {
	f, err := decodeFile(s)
	if err != nil {
		return nil, err
	}
	ct := "application/octet-stream"
	if len(types) > 0 {
		ct = types[0]
	}
	if f.mediaType != "" {
		if i := slices.IndexFunc(types, func(t string) bool { return mediaBase(t) == mediaBase(f.mediaType) }); i >= 0 {
			ct = types[i]
		}
	}
	if strings.Contains(ct, "*") {
		ct = cmp.Or(f.mediaType, "application/octet-stream")
	}
	return &encodedBody{contentType: ct, data: f.data}, nil
}

// formBody encodes an object as application/x-www-form-urlencoded: each
// field as a query parameter of its style is (by default form, exploded:
// an array repeats its field, an object's members become fields of their
// own, deeper values are JSON text), files as their decoded bytes.
func formBody(obj map[string]any, fields map[string]openapi.FieldRef) ([]byte, error) {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		f := fields[k]
		raw, err := fieldValue(obj[k], f.Binary)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		if raw == nil {
			continue
		}
		pieces, err := fieldPieces(k, f, raw)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		pairs = append(pairs, escapePieces(pieces, f.AllowReserved)...)
	}
	return []byte(strings.Join(pairs, "&")), nil
}

// fieldPieces serializes a form field by its style (form, exploded, by
// default).
func fieldPieces(name string, f openapi.FieldRef, raw any) ([]piece, error) {
	v, err := flatten(raw)
	if err != nil {
		return nil, err
	}
	return formPieces("form field", name, f.Style, f.Style == "" || f.Explode, raw, v)
}

// fieldValue is a form field's value, a file's (or files') base64 decoded
// to its bytes.
func fieldValue(v any, binary bool) (any, error) {
	if !binary || v == nil {
		return v, nil
	}
	if list, ok := v.([]any); ok {
		out := make([]any, len(list))
		for i, item := range list {
			s, err := fieldValue(item, true)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("a file is given as base64 text, not %s", describe(v))
	}
	f, err := decodeFile(s)
	return string(f.data), err
}

// multipartBody encodes an object as multipart/form-data: files as file
// parts of their decoded bytes, fields with a style as the text parts
// that style makes, and by default primitives as text fields, an array as
// one part per item and objects (and arrays inside arrays) as
// application/json parts. A part's media type is the field's where the
// document gives one. rawFiles are fields sent as file parts of the text
// given (see [WithBinaryFields]).
func multipartBody(obj map[string]any, fields map[string]openapi.FieldRef, rawFiles map[string]bool) (*encodedBody, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if err := writeField(w, k, obj[k], fields[k], rawFiles[k]); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &encodedBody{contentType: w.FormDataContentType(), data: buf.Bytes()}, nil
}

// writeField writes the parts of one multipart field.
func writeField(w *multipart.Writer, name string, v any, f openapi.FieldRef, rawFile bool) error {
	if err := headerSafe("the field name", name); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	if f.Style != "" && !f.Binary && !rawFile {
		pieces, err := fieldPieces(name, f, v)
		if err != nil {
			return err
		}
		for _, pc := range pieces {
			if err := textPart(w, pc.name, strings.Join(pc.items, pc.sep), f.ContentType); err != nil {
				return err
			}
		}
		return nil
	}
	items := []any{v}
	if list, ok := v.([]any); ok {
		items = list
	}
	for _, item := range items {
		var err error
		if f.Binary {
			err = filePart(w, name, item, f.ContentType)
		} else {
			err = writePart(w, name, item, rawFile, f.ContentType)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// quoteEscaper escapes a Content-Disposition parameter, as mime/multipart does.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// writePart writes one multipart value: a file part of the text given
// when rawFile is set, else a text part (of contentType when set) or a
// JSON part.
func writePart(w *multipart.Writer, name string, v any, rawFile bool, contentType string) error {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if rawFile {
			return writeFilePart(w, name, name, "application/octet-stream", []byte(t))
		}
		return textPart(w, name, t, contentType)
	case map[string]any, []any:
		data, err := marshalJSON(t)
		if err != nil {
			return err
		}
		if !isJSONType(mediaBase(contentType)) {
			contentType = "application/json"
		}
		return writeNamedPart(w, name, contentType, data)
	}
	s, err := scalarText(v)
	if err != nil {
		return err
	}
	return textPart(w, name, s, contentType)
}

// textPart writes a text field, with a Content-Type when one is given.
func textPart(w *multipart.Writer, name, text, contentType string) error {
	if contentType == "" {
		return w.WriteField(name, text)
	}
	return writeNamedPart(w, name, contentType, []byte(text))
}

// writeNamedPart writes a form-data part of a media type.
func writeNamedPart(w *multipart.Writer, name, contentType string, data []byte) error {
	return createPart(w, `form-data; name="`+quoteEscaper.Replace(name)+`"`, contentType, data)
}

// createPart writes a part with its Content-Disposition and Content-Type.
func createPart(w *multipart.Writer, disposition, contentType string, data []byte) error {
	if err := headerSafe("the media type", contentType); err != nil {
		return err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", contentType)
	part, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	_, err = part.Write(data)
	return err
}

// filePart writes a file given as base64 text (see [decodeFile]) as a file
// part: named as the data: URL says, else after the field, of the data:
// URL's media type, else the field's, else application/octet-stream.
func filePart(w *multipart.Writer, name string, v any, contentType string) error {
	if v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a file is given as base64 text, not %s", describe(v))
	}
	f, err := decodeFile(s)
	if err != nil {
		return err
	}
	if strings.Contains(contentType, "*") {
		contentType = ""
	}
	return writeFilePart(w, name, cmp.Or(f.name, name), cmp.Or(f.mediaType, contentType, "application/octet-stream"), f.data)
}

// writeFilePart writes a file part.
func writeFilePart(w *multipart.Writer, name, filename, contentType string, data []byte) error {
	if err := headerSafe("the file name", filename); err != nil {
		return err
	}
	return createPart(w, multipart.FileContentDisposition(name, filename), contentType, data)
}

// headerSafe refuses control characters in text that goes into a part's
// headers, where a line break would start a header of its own.
func headerSafe(what, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Errorf("%s %q contains a control character, which a multipart header cannot carry", what, s)
		}
	}
	return nil
}

// file is a file an agent gave.
type file struct {
	data []byte
	// mediaType and name are a data: URL's, if it names them.
	mediaType, name string
}

// decodeFile reads a file given as base64 text (the standard or URL-safe
// alphabet, padded or not; spaces and line breaks are ignored) or as a
// base64 data: URL, "data:image/png;name=photo.png;base64,...", whose
// media type (with its parameters) and name (or filename) it keeps.
func decodeFile(s string) (file, error) {
	var f file
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		header, data, found := strings.Cut(s[5:], ",")
		params := strings.Split(header, ";")
		if !found || len(params) < 2 || !strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") {
			return file{}, errors.New("a data: URL for a file must be base64-encoded (data:<media type>;base64,<data>)")
		}
		f.mediaType = strings.TrimSpace(params[0])
		for _, p := range params[1 : len(params)-1] {
			k, v, _ := strings.Cut(p, "=")
			switch k = strings.ToLower(strings.TrimSpace(k)); {
			case k == "name" || k == "filename":
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
				f.name = v
			case f.mediaType != "":
				f.mediaType += ";" + strings.TrimSpace(p)
			}
		}
		s = data
	}
	clean := strings.TrimRight(strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s), "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(clean, "-_") {
		enc = base64.RawURLEncoding
	}
	data, err := enc.DecodeString(clean)
	if err != nil {
		return file{}, fmt.Errorf("a file is given as base64 text or a base64 data: URL, and this is neither (%v)", err)
	}
	f.data = data
	return f, nil
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
