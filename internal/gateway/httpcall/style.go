package httpcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// shape is what kind of value a parameter carries.
type shape int

const (
	primitive shape = iota
	array
	object
)

// field is one member of an object value.
type field struct{ key, value string }

// value is an argument flattened for serialization: a primitive's text,
// an array's items or an object's members (sorted by key, since decoded
// JSON keeps no order). Nested arrays and objects are JSON text.
type value struct {
	shape  shape
	text   string
	items  []string
	fields []field
}

// empty reports whether a composite value has nothing in it.
func (v value) empty() bool {
	return v.shape == array && len(v.items) == 0 || v.shape == object && len(v.fields) == 0
}

// flatten turns a decoded JSON argument into a [value].
func flatten(v any) (value, error) {
	switch t := v.(type) {
	case []any:
		items := make([]string, len(t))
		for i, item := range t {
			s, err := scalarText(item)
			if err != nil {
				return value{}, err
			}
			items[i] = s
		}
		return value{shape: array, items: items}, nil
	case map[string]any:
		fields := make([]field, 0, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			s, err := scalarText(t[k])
			if err != nil {
				return value{}, err
			}
			fields = append(fields, field{k, s})
		}
		return value{shape: object, fields: fields}, nil
	}
	s, err := scalarText(v)
	return value{shape: primitive, text: s}, err
}

// scalarText is the text of a primitive; null is empty and a nested array
// or object is its JSON (OpenAPI leaves nested values undefined).
func scalarText(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	case json.Number:
		return t.String(), nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	}
	b, err := marshalJSON(v)
	return string(bytes.TrimSpace(b)), err
}

// normalize returns v as encoding/json decodes into any (strings, float64
// or json.Number, bools, []any, map[string]any), converting other Go
// values (a []string from a Go caller, say) through JSON.
func normalize(v any) (any, error) {
	switch t := v.(type) {
	case nil, string, bool, float64, json.Number, int, int64:
		return v, nil
	case []any:
		for _, item := range t {
			if !isNormal(item) {
				return roundTrip(v)
			}
		}
		return v, nil
	case map[string]any:
		for _, item := range t {
			if !isNormal(item) {
				return roundTrip(v)
			}
		}
		return v, nil
	}
	return roundTrip(v)
}

// isNormal reports whether v needs no conversion as a member of a
// composite: a primitive, or an array or object (nested ones become JSON).
func isNormal(v any) bool {
	switch v.(type) {
	case nil, string, bool, float64, json.Number, int, int64, []any, map[string]any:
		return true
	}
	return false
}

// roundTrip converts v to its decoded-JSON form.
func roundTrip(v any) (any, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Func || rv.Kind() == reflect.Chan {
		return nil, fmt.Errorf("a %T is not a JSON value", v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// marshalJSON is json.Marshal without HTML escaping.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Percent-encoding. Values are encoded as RFC 6570 does: everything but
// the unreserved characters (letters, digits, "-", ".", "_", "~") is
// escaped, so a value can never add a path segment, a query parameter or
// a fragment. With allowReserved, RFC 3986's reserved characters and
// existing percent-encoded triples pass through, except those a query
// string cannot carry or gives a meaning to ("#", "[", "]", "&", "+",
// and "=" in a name).

// unreserved reports RFC 3986's unreserved characters.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// reservedKept reports the reserved characters allowReserved leaves in a
// query value.
func reservedKept(c byte) bool {
	return strings.IndexByte(":/?@!$'()*,;=", c) >= 0
}

const upperHex = "0123456789ABCDEF"

// escape percent-encodes s (see above).
func escape(s string, allowReserved bool) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !keep(s, i, allowReserved) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keep(s, i, allowReserved) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// keep reports whether s[i] is written as is.
func keep(s string, i int, allowReserved bool) bool {
	c := s[i]
	if unreserved(c) {
		return true
	}
	if !allowReserved {
		return false
	}
	if c == '%' {
		return i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])
	}
	return reservedKept(c)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// escapeAll escapes each string.
func escapeAll(ss []string, allowReserved bool) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = escape(s, allowReserved)
	}
	return out
}

// pairs lists an object's members as "k<sep>v" with both sides escaped by esc.
func pairs(fields []field, sep string, esc func(string) string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = esc(f.key) + sep + esc(f.value)
	}
	return out
}

// flat lists an object's members as k, v, k, v with both sides escaped.
func flat(fields []field, esc func(string) string) []string {
	out := make([]string, 0, 2*len(fields))
	for _, f := range fields {
		out = append(out, esc(f.key), esc(f.value))
	}
	return out
}

// identity leaves a string as it is (headers are not percent-encoded).
func identity(s string) string { return s }

// delimiters are the characters styles join an array's items with: the
// form and simple styles a comma, the delimited ones (OpenAPI's and
// tabDelimited, Swagger 2.0's tsv) a space, a pipe or a tab.
var delimiters = map[string]string{
	"": ",", "simple": ",", "form": ",",
	"spaceDelimited": " ", "pipeDelimited": "|", "tabDelimited": "\t",
}

// pathValue serializes a path parameter by its style: simple (the
// default), label or matrix, or, from Swagger 2.0, one of the delimited
// styles (items joined by an escaped space, pipe or tab).
func pathValue(name, style string, explode bool, v value) (string, error) {
	esc := func(s string) string { return escape(s, false) }
	switch style {
	case "", "simple", "spaceDelimited", "pipeDelimited", "tabDelimited":
		return simple(wireDelimiter(delimiters[style]), explode, v, esc), nil
	case "label":
		sep := ","
		if explode {
			sep = "."
		}
		switch v.shape {
		case array:
			return "." + strings.Join(escapeAll(v.items, false), sep), nil
		case object:
			if explode {
				return "." + strings.Join(pairs(v.fields, "=", esc), sep), nil
			}
			return "." + strings.Join(flat(v.fields, esc), sep), nil
		}
		return "." + esc(v.text), nil
	case "matrix":
		return matrix(esc(name), explode, v, esc), nil
	}
	return "", fmt.Errorf("style %q is not one a path parameter can have (simple, label, matrix)", style)
}

// simple is RFC 6570's simple expansion, for paths and headers, with
// items joined by sep (a comma, or a delimited style's character).
func simple(sep string, explode bool, v value, esc func(string) string) string {
	switch v.shape {
	case array:
		items := make([]string, len(v.items))
		for i, s := range v.items {
			items[i] = esc(s)
		}
		return strings.Join(items, sep)
	case object:
		if explode {
			return strings.Join(pairs(v.fields, "=", esc), sep)
		}
		return strings.Join(flat(v.fields, esc), sep)
	}
	return esc(v.text)
}

// matrix is RFC 6570's path-style expansion: ";name=value", and ";name"
// for an empty value.
func matrix(name string, explode bool, v value, esc func(string) string) string {
	named := func(k, s string) string {
		if s == "" {
			return ";" + k
		}
		return ";" + k + "=" + s
	}
	switch v.shape {
	case array:
		if explode {
			var b strings.Builder
			for _, s := range v.items {
				b.WriteString(named(name, esc(s)))
			}
			return b.String()
		}
		return named(name, strings.Join(escapeAll(v.items, false), ","))
	case object:
		if explode {
			var b strings.Builder
			for _, f := range v.fields {
				b.WriteString(named(esc(f.key), esc(f.value)))
			}
			return b.String()
		}
		return named(name, strings.Join(flat(v.fields, esc), ","))
	}
	return named(name, esc(v.text))
}

// piece is one name=value pair of a form-style serialization before
// escaping: its value is its items joined by sep.
type piece struct {
	name  string
	items []string
	sep   string
}

// formPieces serializes a value the way a query parameter named name is
// by its style: form (the default), spaceDelimited, pipeDelimited,
// tabDelimited or deepObject; what is a query parameter here is a form
// field in a form body (kind names which, for errors). The delimited
// styles exploded, which OpenAPI leaves undefined, are sent as form would
// send them; deepObject takes an object (nested objects add brackets,
// arrays repeat their key).
func formPieces(kind, name, style string, explode bool, raw any, v value) ([]piece, error) {
	if style == "deepObject" {
		obj, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("style deepObject takes an object, not %s", describe(raw))
		}
		var out []piece
		deepObject(&out, name, obj)
		return out, nil
	}
	sep, ok := delimiters[style]
	if !ok || style == "simple" {
		return nil, fmt.Errorf("style %q is not one a %s can have (form, spaceDelimited, pipeDelimited, deepObject)", style, kind)
	}
	one := func(name, s string) piece { return piece{name: name, items: []string{s}} }
	switch {
	case v.shape == array && !explode:
		return []piece{{name: name, items: v.items, sep: sep}}, nil
	case v.shape == object && !explode:
		return []piece{{name: name, items: flat(v.fields, identity), sep: sep}}, nil
	case v.shape == array:
		out := make([]piece, len(v.items))
		for i, s := range v.items {
			out[i] = one(name, s)
		}
		return out, nil
	case v.shape == object:
		out := make([]piece, len(v.fields))
		for i, f := range v.fields {
			out[i] = one(f.key, f.value)
		}
		return out, nil
	}
	return []piece{one(name, v.text)}, nil
}

// queryPairs serializes a query parameter (see [formPieces]) into
// "name=value" pairs, escaped: a delimiter inside a value is escaped, the
// style's own comma is not (the space, pipe and tab are, as a query
// cannot carry them).
func queryPairs(name, style string, explode, allowReserved bool, raw any, v value) ([]string, error) {
	pieces, err := formPieces("query parameter", name, style, explode, raw, v)
	if err != nil {
		return nil, err
	}
	return escapePieces(pieces, allowReserved), nil
}

// escapePieces writes pieces as escaped "name=value" pairs.
func escapePieces(pieces []piece, allowReserved bool) []string {
	out := make([]string, len(pieces))
	for i, pc := range pieces {
		out[i] = escape(pc.name, false) + "=" + strings.Join(escapeAll(pc.items, allowReserved), wireDelimiter(pc.sep))
	}
	return out
}

// wireDelimiter is a delimiter as a path or a query carries it: the comma
// as it is, the others escaped.
func wireDelimiter(sep string) string {
	if sep == "," {
		return sep
	}
	return escape(sep, false)
}

// deepObject appends prefix[key]=value pieces for an object.
func deepObject(out *[]piece, prefix string, obj map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		name := prefix + "[" + k + "]"
		switch t := obj[k].(type) {
		case map[string]any:
			deepObject(out, name, t)
		case []any:
			for _, item := range t {
				s, _ := scalarText(item)
				*out = append(*out, piece{name: name, items: []string{s}})
			}
		default:
			s, _ := scalarText(t)
			*out = append(*out, piece{name: name, items: []string{s}})
		}
	}
}

// headerValue serializes a header parameter (style simple, or from
// Swagger 2.0 a delimited style; header values are not percent-encoded)
// and refuses control characters, which could split the header.
func headerValue(style string, explode bool, v value) (string, error) {
	sep, ok := delimiters[style]
	if !ok || style == "form" {
		return "", fmt.Errorf("style %q is not one a header parameter can have (simple)", style)
	}
	s := simple(sep, explode, v, identity)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' {
			return "", fmt.Errorf("the value contains a line break (CR or LF), which a header cannot carry")
		} else if c < 0x20 && c != '\t' || c == 0x7f {
			return "", fmt.Errorf("the value contains the control character %q, which a header cannot carry", c)
		}
	}
	return s, nil
}

// cookiePairs serializes a cookie parameter (style form) into "name=value"
// pairs; exploded ones become separate cookies. Values are percent-encoded,
// so they never carry ";", "," or spaces of their own.
func cookiePairs(name, style string, explode bool, v value) ([]string, error) {
	if style != "" && style != "form" {
		return nil, fmt.Errorf("style %q is not one a cookie parameter can have (form)", style)
	}
	esc := func(s string) string { return escape(s, false) }
	if !explode {
		switch v.shape {
		case array:
			return []string{name + "=" + strings.Join(escapeAll(v.items, false), ",")}, nil
		case object:
			return []string{name + "=" + strings.Join(flat(v.fields, esc), ",")}, nil
		}
		return []string{name + "=" + esc(v.text)}, nil
	}
	switch v.shape {
	case array:
		out := make([]string, len(v.items))
		for i, s := range v.items {
			out[i] = name + "=" + esc(s)
		}
		return out, nil
	case object:
		return pairs(v.fields, "=", esc), nil
	}
	return []string{name + "=" + esc(v.text)}, nil
}

// describe names a value's JSON type for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}
