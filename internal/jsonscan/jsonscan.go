// Package jsonscan finds the members of a JSON object without decoding
// them: each key as written and each value as its raw bytes, which alias
// the input (String decodes one string value when it is wanted). Decoding a small object into a map or a struct costs a
// validation pass per nesting level, a map and a copy of every value;
// this costs one pass over the bytes and no allocation. It is for the
// request paths where that difference is measured (the /mcp fast path);
// everything else should decode normally.
//
// The input must already be valid JSON (json.Valid): jsonscan only finds
// where values start and end, and says nothing useful about invalid input.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Members calls fn with the key and the raw value of each member of the
// JSON object data, in order, and stops when fn returns false. A JSON null
// is an object with no members. It returns false when data is neither an
// object nor null, when a key has an escape sequence (its bytes would not
// be its value), or when fn returned false; true when every member was
// seen.
func Members(data []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i < len(data) && data[i] == 'n' {
		return string(trimRight(data[i:])) == "null"
	}
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		end := stringEnd(data, i)
		if end < 0 {
			return false
		}
		key := data[i+1 : end-1]
		for _, b := range key {
			if b == '\\' {
				return false
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		start := skipSpace(data, i+1)
		stop := valueEnd(data, start)
		if stop < 0 {
			return false
		}
		if !fn(key, data[start:stop]) {
			return false
		}
		var more bool
		if i, more = next(data, stop, '}'); !more {
			return i >= 0
		}
	}
	return false
}

// Fields reads the object data into values by key: values[i] is the raw
// value of keys[i], nil when the object has no such member. It returns
// false when data is neither an object nor null, and when a key is not
// among keys, is written with escapes or repeats: a reader that takes only
// what it knows, spelled exactly, once.
func Fields(data []byte, keys []string, values [][]byte) bool {
	clear(values)
	return Members(data, func(k, v []byte) bool {
		for i, key := range keys {
			if string(k) == key {
				if values[i] != nil {
					return false
				}
				values[i] = v
				return true
			}
		}
		return false
	})
}

// String is the string the JSON value raw holds; false when raw is not a
// JSON string. One without escapes, the usual kind, is read without a
// decoder. raw must come from a document already checked valid.
func String(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	if inner := raw[1 : n-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil // escapes, and U+FFFD for bytes that are not UTF-8
}

// next reads what follows a value at data[i] inside an object or array
// that ends with end: a comma (more is true, and the index is the next
// member's or element's start), the end (more is false, the index is
// that of the end), or anything else (more is false, the index is -1).
func next(data []byte, i int, end byte) (int, bool) {
	i = skipSpace(data, i)
	switch {
	case i >= len(data):
		return -1, false
	case data[i] == ',':
		return skipSpace(data, i+1), true
	case data[i] == end:
		return i, false
	}
	return -1, false
}

// valueEnd is the index just past the value that starts at data[i], or -1.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := stringEnd(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // a number, true, false or null
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// stringEnd is the index just past the string whose opening quote is at
// data[i], or -1.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++ // the escaped byte cannot end the string
		case '"':
			return j + 1
		}
	}
	return -1
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func trimRight(data []byte) []byte {
	n := len(data)
	for n > 0 {
		switch data[n-1] {
		case ' ', '\t', '\n', '\r':
			n--
		default:
			return data[:n]
		}
	}
	return data[:n]
}

// Elements calls fn with each element of the JSON array data, in order,
// and stops when fn returns false. It returns false when data is not an
// array or fn returned false; true when every element was seen.
func Elements(data []byte, fn func(value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return true
	}
	for i < len(data) {
		stop := valueEnd(data, i)
		if stop < 0 {
			return false
		}
		if !fn(data[i:stop]) {
			return false
		}
		var more bool
		if i, more = next(data, stop, ']'); !more {
			return i >= 0
		}
	}
	return false
}

// Depth is how deeply objects and arrays nest in data: 0 for a scalar, 1
// for a flat object or array.
func Depth(data []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i)
			if end < 0 {
				return deepest
			}
			i = end - 1
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
