package httpcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBytes is how much of an answer [ReadResult] keeps when given
// no cap (TOOLGATE_MAX_RESULT_BYTES's default).
const DefaultMaxBytes = 1 << 20

// ErrorExcerptBytes is how much of a non-2xx answer's body [Result.Text] shows.
const ErrorExcerptBytes = 2 << 10

// Result is an upstream's answer, its body cut at a cap.
type Result struct {
	Status      int
	ContentType string
	// Body holds at most the cap's bytes.
	Body []byte
	// Truncated reports that the answer was longer than the cap.
	Truncated bool
	// TotalBytes is the answer's full length: len(Body) when it was read
	// whole, the Content-Length when it was cut, -1 when that is unknown.
	TotalBytes int64
	// Err is the error that ended the read early, if any (an upstream that
	// hung up mid-answer); Body holds what came before it.
	Err error
}

// ReadResult reads res's body, at most maxBytes of it (DefaultMaxBytes
// when maxBytes <= 0) plus one byte to tell a cut answer from one that
// fits, and closes it. The rest of a longer answer is never read.
func ReadResult(res *http.Response, maxBytes int64) Result {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	r := Result{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), TotalBytes: -1}
	if res.Body == nil {
		r.TotalBytes = 0
		return r
	}
	defer res.Body.Close()
	r.Body, r.Err = readAtMost(res.Body, res.ContentLength, maxBytes+1)
	if int64(len(r.Body)) > maxBytes {
		r.Body = r.Body[:maxBytes:maxBytes]
		r.Truncated = true
		if res.ContentLength > maxBytes {
			r.TotalBytes = res.ContentLength
		}
		return r
	}
	if r.Err == nil {
		r.TotalBytes = int64(len(r.Body))
	}
	return r
}

// readAtMost reads up to limit bytes. It starts from the announced length
// (within the limit), so a body of known length takes one allocation, and
// otherwise grows by doubling, never past the limit.
func readAtMost(body io.Reader, announced, limit int64) ([]byte, error) {
	size := min(int64(32<<10), limit)
	if announced >= 0 {
		size = min(announced+1, limit)
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(cap(buf)) >= limit {
				return buf, nil
			}
			buf = slices.Grow(buf, int(min(2*int64(cap(buf)), limit))-len(buf))
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// OK reports a 2xx answer.
func (r Result) OK() bool { return r.Status >= 200 && r.Status < 300 }

// StatusLine is "HTTP 404 Not Found".
func (r Result) StatusLine() string {
	if text := http.StatusText(r.Status); text != "" {
		return fmt.Sprintf("HTTP %d %s", r.Status, text)
	}
	return fmt.Sprintf("HTTP %d", r.Status)
}

// Text is the answer as an agent reads it. A 2xx answer is its body, JSON
// indented when the whole of it came (JSON that does not parse is shown as
// it came, and said so), with a last line stating a cut
// ("[truncated: showed 1048576 of 10485760 bytes]"). Any other answer
// is its status line and the first ErrorExcerptBytes of its body; the
// gateway returns it as a tool error ([Result.OK]).
func (r Result) Text() string {
	var b strings.Builder
	if !r.OK() {
		b.WriteString(r.StatusLine())
		excerpt := r.Body
		cut := len(excerpt) > ErrorExcerptBytes
		if cut {
			excerpt = excerpt[:ErrorExcerptBytes]
		}
		if body := printable(excerpt, r.ContentType); body != "" {
			b.WriteByte('\n')
			b.WriteString(body)
		}
		if cut || r.Truncated {
			fmt.Fprintf(&b, "\n[excerpt: first %d of %s bytes]", len(excerpt), r.total())
		}
		r.writeErr(&b)
		return b.String()
	}
	switch {
	case len(r.Body) == 0:
		b.WriteString(r.StatusLine())
		b.WriteString(" (no body)")
	case !r.Truncated && isJSONType(mediaBase(r.ContentType)) && json.Valid(r.Body):
		var out bytes.Buffer
		if json.Indent(&out, r.Body, "", "  ") == nil {
			b.Write(out.Bytes())
		} else {
			b.Write(r.Body)
		}
	default:
		b.WriteString(printable(r.Body, r.ContentType))
		if !r.Truncated && r.Err == nil && isJSONType(mediaBase(r.ContentType)) {
			fmt.Fprintf(&b, "\n[the answer is labelled %s but is not valid JSON; shown as it came]", mediaBase(r.ContentType))
		}
	}
	if r.Truncated {
		fmt.Fprintf(&b, "\n[truncated: showed %d of %s bytes]", len(r.Body), r.total())
	}
	r.writeErr(&b)
	return b.String()
}

// total is TotalBytes as text, "more than N" when it is not known.
func (r Result) total() string {
	if r.TotalBytes >= 0 {
		return fmt.Sprint(r.TotalBytes)
	}
	return fmt.Sprintf("more than %d", len(r.Body))
}

func (r Result) writeErr(b *strings.Builder) {
	if r.Err != nil {
		fmt.Fprintf(b, "\n[the answer ended early: %v]", r.Err)
	}
}

// printable is a body as text: as is when it is UTF-8 (a rune cut at the
// end of an excerpt aside), else a note of its size and type.
func printable(body []byte, contentType string) string {
	text := body
	// Drop a rune the cut split.
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			if !utf8.FullRune(text[i:]) {
				text = text[:i]
			}
			break
		}
	}
	if utf8.Valid(text) {
		return string(text)
	}
	if contentType == "" {
		contentType = "unknown type"
	}
	return fmt.Sprintf("[binary body: %d bytes of %s]", len(body), contentType)
}
