package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/internal/httphead"
)

// readPlainResponse reads the usual response head, already whole in br:
// HTTP/1.1, a final status that may carry a body, every line ended by
// CRLF, valid field names and values, no Trailer, Pragma or Connection: close,
// and a body framed by one Content-Length of digits or by chunked alone. It builds the response
// http.ReadResponse would, with a few allocations instead of its two
// dozen. For any other head, ok is false and nothing has been read:
// http.ReadResponse reads it.
func readPlainResponse(br *bufio.Reader, req *http.Request) (resp *http.Response, ok bool) {
	if req.Method == http.MethodHead {
		return nil, false
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 || bareLF(buf[:end+2]) {
		return nil, false
	}
	s := string(buf[:end+2]) // the names and values are slices of it
	line, rest, _ := strings.Cut(s, "\r\n")
	status, ok := strings.CutPrefix(line, "HTTP/1.1 ")
	if !ok || len(status) < 3 || len(status) > 3 && status[3] != ' ' || !digits(status[:3]) {
		return nil, false
	}
	code, _ := strconv.Atoi(status[:3])
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, false // no body, or not the final response
	}
	fields := strings.Count(rest, "\r\n")
	h := httphead.NewFields(fields)
	resp = &http.Response{
		Status: status, StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  h.Header,
		Request: req,
	}
	lengths, encodings := 0, 0
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\r\n")
		key, value, ok := httphead.Field(line)
		if !ok {
			return nil, false
		}
		switch key {
		case "Content-Length":
			lengths++
			n, err := strconv.ParseUint(value, 10, 63) // as net/http: digits alone
			if err != nil {
				return nil, false
			}
			resp.ContentLength = int64(n)
		case "Transfer-Encoding":
			encodings++
			if !asciiEqualFold(value, "chunked") { // as net/http: not Unicode's folding, where K is k too
				return nil, false
			}
			continue // net/http keeps it out of Header
		case "Trailer", "Pragma": // net/http adds Cache-Control for a Pragma
			return nil, false
		case "Connection":
			if httpguts.HeaderValuesContainsToken([]string{value}, "close") {
				return nil, false // net/http drops the field as it reads it
			}
		}
		h.Add(key, value)
	}
	switch {
	case lengths+encodings != 1:
		return nil, false // read to the close, or framed twice
	case encodings == 1:
		resp.ContentLength, resp.TransferEncoding = -1, []string{"chunked"}
	}
	_, _ = br.Discard(end + 4)
	switch {
	case encodings == 1:
		resp.Body = &chunkedBody{r: httputil.NewChunkedReader(br), br: br, resp: resp}
	case resp.ContentLength == 0:
		resp.Body = http.NoBody
	default:
		resp.Body = &lengthBody{br: br, n: resp.ContentLength}
	}
	return resp, true
}

// asciiEqualFold reports whether s and t are equal when ASCII letters
// are folded to lower case; lower is lower case already.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// bareLF reports whether a line of head ends with LF alone.
func bareLF(head []byte) bool {
	for i := range head {
		if head[i] == '\n' && (i == 0 || head[i-1] != '\r') {
			return true
		}
	}
	return false
}

// lengthBody is a body of a known length, read as net/http reads one: the
// read that reaches its end says io.EOF with the last bytes, and an end
// of the connection before it is io.ErrUnexpectedEOF.
type lengthBody struct {
	br *bufio.Reader
	n  int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	switch {
	case err == io.EOF && b.n > 0:
		err = io.ErrUnexpectedEOF
	case err == nil && b.n == 0:
		err = io.EOF
	}
	return n, err
}

// Close is never called: [body] does not close what it reads.
func (b *lengthBody) Close() error { return nil }

// chunkedBody is a chunked body; after its last chunk come the trailer
// fields, if any, which go to the response's Trailer as net/http puts
// them, and the blank line that ends the message.
type chunkedBody struct {
	r    io.Reader // the chunks
	br   *bufio.Reader
	resp *http.Response
	err  error // once set, what every Read returns
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		b.err = io.EOF
		if terr := b.readTrailer(); terr != nil {
			b.err = terr
		}
	case err != nil:
		b.err = err
	}
	return n, b.err
}

// readTrailer reads what follows the last chunk as net/http does: the
// blank line, or trailer fields whose end is already in the buffer (a
// longer trailer is refused, so none can be endless) and the blank line.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.br.Peek(2)
	switch {
	case string(buf) == "\r\n":
		_, _ = b.br.Discard(2)
		return nil
	case len(buf) < 2:
		return errTrailerEOF
	case err != nil:
		return err
	case !blankLineBuffered(b.br):
		return errors.New("h1: suspiciously long trailer after chunked body")
	}
	trailer, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			err = errTrailerEOF
		}
		return err
	}
	b.resp.Trailer = http.Header(trailer)
	return nil
}

var errTrailerEOF = errors.New("h1: unexpected EOF reading trailer")

// blankLineBuffered reports whether a CRLF CRLF comes up in br before its
// buffer is full.
func blankLineBuffered(br *bufio.Reader) bool {
	for n := 4; ; {
		buf, err := br.Peek(n)
		if bytes.Contains(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
		n = max(br.Buffered(), n+1) // what has come, or wait for one more byte
	}
}

// Close is never called: [body] does not close what it reads.
func (b *chunkedBody) Close() error { return nil }
