package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// marshal encodes a schema built from generic values as compact JSON.
// It writes what encoding/json writes with HTML escaping off (keys sorted,
// descriptions keeping their < and >), without reflection: schemas are
// most of what Build produces. The builder's one buffer is reused and the
// result copied at its exact size.
func (b *builder) marshal(v any) (json.RawMessage, error) {
	b.enc.buf = b.enc.buf[:0]
	if err := b.enc.value(v); err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return bytes.Clone(b.enc.buf), nil
}

// encoder appends generic values to buf.
type encoder struct {
	buf []byte
}

// value appends one value.
func (e *encoder) value(v any) error {
	switch t := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, t)
	case string:
		e.buf = appendString(e.buf, t)
	case json.Number:
		if t == "" {
			t = "0"
		}
		e.buf = append(e.buf, t...)
	case map[string]any:
		return e.object(t)
	case []any:
		e.buf = append(e.buf, '[')
		for i, item := range t {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(item); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	default:
		raw, err := json.Marshal(t)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, raw...)
	}
	return nil
}

// object appends an object with its keys sorted.
func (e *encoder) object(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendString(e.buf, k)
		e.buf = append(e.buf, ':')
		if err := e.value(m[k]); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// appendString appends s as a JSON string the way encoding/json does
// without HTML escaping: control characters escaped, invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped for JavaScript's sake.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
