package jsonscan

import "encoding/json"

// maxDecodeDepth is how deeply Decode follows nested objects and arrays;
// deeper documents are left to encoding/json, which allows 10 000 levels.
const maxDecodeDepth = 64

// Decode is the JSON value data holds, as encoding/json's Decoder with
// UseNumber reads it into an any: an object as a map[string]any (a key
// written twice keeps its last value), an array as a []any, never nil, a
// number as a json.Number, and strings, booleans and null as string, bool
// and nil. Space may surround the value.
//
// Unlike the rest of the package, Decode checks the JSON it reads. It
// reports false, and leaves the document to encoding/json, whenever data
// is not a single valid JSON value or nests deeper than 64 levels; the
// caller then decodes it as before, with encoding/json's errors. A string
// with escapes or bytes that are not UTF-8 is read by encoding/json too
// (one string at a time), so its value is the same to the byte.
//
// It exists for the call path's arguments (a handful of members, read on
// every call), where encoding/json's decoder into an any costs several
// times as much.
func Decode(data []byte) (any, bool) {
	d := decoder{data: data}
	d.space()
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

// decoder reads one JSON document from data, at i.
type decoder struct {
	data []byte
	i    int
}

func (d *decoder) space() { d.i = skipSpace(d.data, d.i) }

// value reads the value at i, nested depth levels deep.
func (d *decoder) value(depth int) (any, bool) {
	if d.i >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *decoder) object(depth int) (any, bool) {
	if depth > maxDecodeDepth {
		return nil, false
	}
	m := map[string]any{}
	d.i++ // {
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		key, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[key] = v
		more, ok := d.after('}')
		if !ok {
			return nil, false
		}
		if !more {
			return m, true
		}
	}
}

func (d *decoder) array(depth int) (any, bool) {
	if depth > maxDecodeDepth {
		return nil, false
	}
	a := make([]any, 0)
	d.i++ // [
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		more, ok := d.after(']')
		if !ok {
			return nil, false
		}
		if !more {
			return a, true
		}
	}
}

// after reads what follows a member or an element: a comma (more), or
// end, which closes the object or array; ok is false for anything else.
func (d *decoder) after(end byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.data) {
		return false, false
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		d.space()
		return true, true
	case end:
		d.i++
		return false, true
	}
	return false, false
}

// string reads the string whose quote is at i. Plain ASCII, the usual
// kind, is copied as it stands; anything else is checked here and decoded
// by encoding/json.
func (d *decoder) string() (string, bool) {
	start := d.i
	plain := true
	for j := start + 1; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			d.i = j + 1
			if plain {
				return string(d.data[start+1 : j]), true
			}
			var s string
			return s, json.Unmarshal(d.data[start:d.i], &s) == nil
		case c < 0x20:
			return "", false
		case c == '\\':
			plain = false
			j++
			if j >= len(d.data) {
				return "", false
			}
			switch d.data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d.data) || !hex4(d.data[j+1:j+5]) {
					return "", false
				}
				j += 4
			default:
				return "", false
			}
		case c >= 0x80:
			plain = false
		}
	}
	return "", false
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func (d *decoder) number() (any, bool) {
	start, j := d.i, d.i
	if d.data[j] == '-' {
		j++
	}
	switch {
	case j < len(d.data) && d.data[j] == '0':
		j++
	case j < len(d.data) && '1' <= d.data[j] && d.data[j] <= '9':
		j = digits(d.data, j)
	default:
		return nil, false
	}
	if j < len(d.data) && d.data[j] == '.' {
		if j = digits(d.data, j+1); d.data[j-1] == '.' {
			return nil, false
		}
	}
	if j < len(d.data) && (d.data[j] == 'e' || d.data[j] == 'E') {
		j++
		if j < len(d.data) && (d.data[j] == '+' || d.data[j] == '-') {
			j++
		}
		if k := digits(d.data, j); k == j {
			return nil, false
		} else {
			j = k
		}
	}
	d.i = j
	return json.Number(d.data[start:j]), true
}

// digits is the index past the digits that start at data[i].
func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

func (d *decoder) literal(word string) bool {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}
