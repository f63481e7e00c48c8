// Package validation checks input field by field and collects a message per
// field, so forms can show each next to its field and the API can return
// them under "fields".
package validation

import (
	"fmt"
	"net/mail"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Errors maps a field name to what is wrong with it.
type Errors map[string]string

// Error lists the problems in field order.
func (e Errors) Error() string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+e[k])
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Add records a problem unless the field already has one.
func (e Errors) Add(field, msg string) {
	if _, ok := e[field]; !ok {
		e[field] = msg
	}
}

// Err returns e as an error, or nil when there is no problem.
func (e Errors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// Field returns a single-field error.
func Field(field, msg string) Errors { return Errors{field: msg} }

// MaxNameLen is the longest organization, workspace or token name.
const MaxNameLen = 80

// Name checks a display name: 1 to max characters of letters, digits, spaces
// and a little punctuation.
func (e Errors) Name(field, v string, max int) {
	switch {
	case v == "":
		e.Add(field, "Enter a name.")
	case utf8.RuneCountInString(v) > max:
		e.Add(field, fmt.Sprintf("Use at most %d characters.", max))
	case !utf8.ValidString(v) || strings.IndexFunc(v, oddNameRune) >= 0:
		e.Add(field, "Use letters, digits, spaces and - _ . , ' & ( ) only.")
	}
}

func oddNameRune(r rune) bool {
	if unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' {
		return false
	}
	return !strings.ContainsRune("-_.,'&()", r)
}

var slugPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// Slug checks a URL slug: lowercase letters, digits and inner hyphens, at most 40.
func (e Errors) Slug(field, v string) {
	switch {
	case v == "":
		e.Add(field, "Enter a URL name.")
	case len(v) > 40:
		e.Add(field, "Use at most 40 characters.")
	case !slugPattern.MatchString(v):
		e.Add(field, "Use lowercase letters, digits and hyphens, starting and ending with a letter or digit.")
	}
}

// Email checks a bare email address of at most 254 characters.
func (e Errors) Email(field, v string) {
	switch {
	case v == "":
		e.Add(field, "Enter an email address.")
	case len(v) > 254:
		e.Add(field, "Use at most 254 characters.")
	default:
		a, err := mail.ParseAddress(v)
		if err != nil || a.Address != v || !strings.Contains(v[strings.LastIndexByte(v, '@')+1:], ".") && !strings.HasSuffix(v, "@localhost") {
			e.Add(field, "Enter an email address like name@example.com.")
		}
	}
}

// Password limits, in characters.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 128
)

// Password checks a new password's length.
func (e Errors) Password(field, v string) {
	n := utf8.RuneCountInString(v)
	switch {
	case n < MinPasswordLen:
		e.Add(field, fmt.Sprintf("Use at least %d characters.", MinPasswordLen))
	case n > MaxPasswordLen:
		e.Add(field, fmt.Sprintf("Use at most %d characters.", MaxPasswordLen))
	}
}

// Slugify derives a slug from a name: lowercase ASCII letters and digits
// joined by single hyphens, at most 40 characters. It may return "" for a
// name without any such character.
func Slugify(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
		default:
			hyphen = true
		}
	}
	return strings.Trim(b.String(), "-")
}
