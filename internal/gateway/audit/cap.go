package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/db"
)

// Caps on what a row keeps besides its arguments.
const (
	// MaxErrorBytes caps Error.
	MaxErrorBytes = 4 << 10
	// MaxToolBytes caps Tool: real paths have at most 64 characters, but an
	// agent may ask for any string.
	MaxToolBytes = 256
	// maxShortBytes caps Via and SourceID.
	maxShortBytes = 128
	// previewBytes is how much of oversized arguments the row keeps.
	previewBytes = 1 << 10
)

// Truncated is what a row keeps of arguments longer than
// [MaxArgumentBytes]: their size and the start of their JSON text.
type Truncated struct {
	Truncated bool   `json:"_truncated"`
	Bytes     int    `json:"bytes"`
	Limit     int    `json:"limit"`
	Preview   string `json:"preview"`
}

// CapArguments returns arguments as a row keeps them: valid JSON that
// PostgreSQL's jsonb accepts (no NUL characters, no lone surrogates, valid
// UTF-8), and at most [MaxArgumentBytes], else a [Truncated] object. Empty
// arguments are {}.
func CapArguments(args json.RawMessage) json.RawMessage {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	if !json.Valid(args) {
		return marshal(map[string]any{"_invalid": true, "bytes": len(args), "note": "the arguments were not valid JSON"})
	}
	if needsCleaning(args) {
		args = clean(args)
	}
	if len(args) <= MaxArgumentBytes {
		return args
	}
	return marshal(Truncated{Truncated: true, Bytes: len(args), Limit: MaxArgumentBytes, Preview: cut(string(args), previewBytes)})
}

// CapError returns an error message as a row keeps it: valid UTF-8 without
// NUL characters, at most [MaxErrorBytes].
func CapError(msg string) string {
	msg = cleanText(msg)
	if len(msg) <= MaxErrorBytes {
		return msg
	}
	const more = " … (cut)"
	return cut(msg, MaxErrorBytes-len(more)) + more
}

// toRow turns a call into the row the store inserts, capped.
func toRow(c Call) db.NewToolCall {
	row := db.NewToolCall{
		OrgID: c.OrgID, WorkspaceID: c.WorkspaceID,
		Via: cut(cleanText(c.Via), maxShortBytes), Tool: cut(cleanText(c.Tool), MaxToolBytes),
		SourceID: cut(cleanText(c.SourceID), maxShortBytes), Arguments: CapArguments(c.Arguments),
		Outcome: c.Outcome, Error: c.Error, StartedAt: c.StartedAt, DurationUS: c.Duration.Microseconds(),
		ApprovalID: cut(cleanText(c.ApprovalID), maxShortBytes),
	}
	if c.UserID != 0 {
		id := c.UserID
		row.UserID = &id
	}
	if c.KeyID != nil {
		id := *c.KeyID
		row.KeyID = &id
	}
	if !slices.Contains(Outcomes, row.Outcome) {
		row.Error = strings.TrimSpace(fmt.Sprintf("%s (outcome %q is unknown to the audit)", row.Error, cut(cleanText(row.Outcome), 32)))
		row.Outcome = OutcomeError
	}
	row.Error = CapError(row.Error)
	if row.StartedAt.IsZero() {
		row.StartedAt = time.Now()
	}
	row.DurationUS = max(row.DurationUS, 0)
	if c.UpstreamStatus > 0 && c.UpstreamStatus < 1000 {
		row.UpstreamStatus = c.UpstreamStatus
	}
	return row
}

// fallbacks are the forms a row the database refused is tried in: as it is,
// with its arguments replaced by a note, then also with a plain error. A
// call is audited even when its arguments cannot be stored (a number beyond
// PostgreSQL's range, nesting too deep), so odd arguments cannot hide it.
func fallbacks(row db.NewToolCall) []db.NewToolCall {
	noArgs := row
	noArgs.Arguments = marshal(map[string]any{"_unstorable": true, "note": "the database refused these arguments"})
	plain := noArgs
	plain.Error = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return ' '
		}
		return r
	}, row.Error)
	plain.Tool = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, row.Tool)
	return []db.NewToolCall{row, noArgs, plain}
}

// surrogateEscape finds \uD800-\uDFFF escapes, which jsonb refuses unpaired.
var surrogateEscape = regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)

func needsCleaning(args []byte) bool {
	return !utf8.Valid(args) || bytes.Contains(args, []byte(`\u0000`)) || surrogateEscape.Match(args)
}

// clean decodes and re-encodes JSON: encoding/json replaces invalid UTF-8
// and lone surrogates with U+FFFD, and NUL characters are replaced too.
// Numbers keep their text.
func clean(args []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return marshal(map[string]any{"_invalid": true, "bytes": len(args), "note": "the arguments were not valid JSON"})
	}
	return marshal(cleanValue(v))
}

func cleanValue(v any) any {
	switch v := v.(type) {
	case string:
		return cleanText(v)
	case []any:
		for i := range v {
			v[i] = cleanValue(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[cleanText(k)] = cleanValue(e)
		}
		return out
	}
	return v
}

// cleanText makes s valid UTF-8 without NUL characters, which PostgreSQL's
// text refuses.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// marshal encodes v without HTML escaping; v is always encodable.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only our own maps, strings and json.Numbers reach here
	}
	return bytes.TrimSpace(b.Bytes())
}
