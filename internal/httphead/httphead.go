// Package httphead reads the fields of an HTTP/1.1 head as net/http does,
// for the lean parsers of the loop's requests (fastconn) and the upstream
// transport's responses (h1), which take only heads whose every line they
// can read this way.
package httphead

import (
	"net/http"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Field reads one field line: its canonical name and its value without
// the spaces around it. ok is false for a line net/http refuses or reads
// otherwise: no colon, a name that is not a token (a space before the
// colon, or a folded line, which starts with one), a value with a control
// character.
func Field(line string) (key, value string, ok bool) {
	name, value, ok := strings.Cut(line, ":")
	if !ok || !httpguts.ValidHeaderFieldName(name) {
		return "", "", false
	}
	value = strings.Trim(value, " \t")
	if !httpguts.ValidHeaderFieldValue(value) {
		return "", "", false
	}
	return textproto.CanonicalMIMEHeaderKey(name), value, true
}

// Fields builds a header of up to n names, as textproto does: each name's
// first value is a slice of one shared array, a repeated name's values are
// appended in order.
type Fields struct {
	Header http.Header
	values []string
}

// NewFields makes room for n fields.
func NewFields(n int) Fields {
	return Fields{Header: make(http.Header, n), values: make([]string, 0, n)}
}

// Add adds the field key: value.
func (f *Fields) Add(key, value string) {
	if prior := f.Header[key]; prior != nil {
		f.Header[key] = append(prior, value)
		return
	}
	f.values = append(f.values, value)
	n := len(f.values)
	f.Header[key] = f.values[n-1 : n : n]
}
