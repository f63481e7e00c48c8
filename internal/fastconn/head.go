package fastconn

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/internal/httphead"
)

// parseHead reads a request head, whole and ended by its blank line with
// every line ended by CRLF, into a request for the loop. It takes only
// the plainest requests: a POST in origin form over HTTP/1.1, with one
// valid Host, at most one Content-Length of digits alone, valid field
// names and values, and none of the fields that change how a request is
// framed or read (Transfer-Encoding, Expect, Trailer, Pragma, a Connection
// that says close) nor a folded line. For those it builds the request
// net/http's server would, field for field, with a few allocations instead
// of net/http's two dozen. Anything else is false, and goes to net/http,
// which parses it itself and answers what it must.
//
// last holds the target parsed for the connection's previous request: a
// client sends the same one each time, so it is parsed once.
func parseHead(head []byte, maxBody int64, last *target) (*http.Request, bool) {
	s := string(head) // one allocation; the names and values are slices of it
	line, rest, _ := strings.Cut(s, "\r\n")
	target, ok := strings.CutPrefix(line, "POST ")
	if !ok {
		return nil, false
	}
	target, ok = strings.CutSuffix(target, " HTTP/1.1")
	if !ok || !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t") {
		return nil, false
	}
	u, ok := last.url(target)
	if !ok {
		return nil, false
	}
	fields := strings.Count(rest, "\r\n") - 1 // the blank line ends the head
	if fields < 1 {
		return nil, false
	}
	h := httphead.NewFields(fields)
	r := &http.Request{
		Method: http.MethodPost, URL: u, RequestURI: target,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h.Header,
	}
	hosts, lengths := 0, 0
	for {
		line, rest, _ = strings.Cut(rest, "\r\n")
		if line == "" {
			break
		}
		key, value, ok := httphead.Field(line)
		if !ok {
			return nil, false
		}
		switch key {
		case "Host":
			hosts++
			r.Host = value
			continue // net/http keeps it out of Header
		case "Content-Length":
			lengths++
			n, err := strconv.ParseUint(value, 10, 63) // as net/http: digits alone
			if err != nil || n > uint64(maxBody) {
				return nil, false
			}
			r.ContentLength = int64(n)
		case "Transfer-Encoding", "Expect", "Trailer", "Pragma":
			return nil, false
		case "Connection":
			if httpguts.HeaderValuesContainsToken([]string{value}, "close") {
				return nil, false
			}
		}
		h.Add(key, value)
	}
	if hosts != 1 || lengths > 1 || !httpguts.ValidHostHeader(r.Host) || rest != "" {
		return nil, false
	}
	return r, true
}

// target is a request target and its URL, as parsed.
type target struct {
	raw    string
	parsed url.URL
}

// url returns raw parsed, a URL of the request's own.
func (t *target) url(raw string) (*url.URL, bool) {
	if t != nil && t.raw == raw && raw != "" {
		u := new(url.URL)
		*u = t.parsed
		return u, true
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return nil, false
	}
	if t != nil {
		t.raw, t.parsed = raw, *u
	}
	return u, true
}
