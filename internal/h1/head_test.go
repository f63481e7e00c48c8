package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWriteRequestAsNetHTTP holds writeRequest to Request.Write's bytes,
// request by request, and to asking for gzip with one more field.
func TestWriteRequestAsNetHTTP(t *testing.T) {
	type build func() *http.Request
	req := func(method, url, body string, header map[string][]string, edit func(*http.Request)) build {
		return func() *http.Request {
			var r io.Reader
			if body != "" {
				r = strings.NewReader(body)
			}
			req, err := http.NewRequest(method, url, r)
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range header {
				req.Header[k] = vs
			}
			if edit != nil {
				edit(req)
			}
			return req
		}
	}
	for name, b := range map[string]build{
		"GET":                 req("GET", "http://example.test/a/b?x=1&y=%20", "", nil, nil),
		"HEAD":                req("HEAD", "http://example.test/", "", nil, nil),
		"POST":                req("POST", "http://example.test:8080/mcp", `{"jsonrpc":"2.0"}`, map[string][]string{"Content-Type": {"application/json"}, "Mcp-Session-Id": {"abc"}, "Accept": {"application/json, text/event-stream"}}, nil),
		"POST without a body": req("POST", "http://example.test/", "", nil, nil),
		"DELETE":              req("DELETE", "http://example.test/items/7", "", nil, nil),
		"OPTIONS":             req("OPTIONS", "http://example.test/", "", nil, nil),
		"own User-Agent":      req("GET", "http://example.test/", "", map[string][]string{"User-Agent": {"  agent/1 "}}, nil),
		"no User-Agent":       req("GET", "http://example.test/", "", map[string][]string{"User-Agent": {""}}, nil),
		"blank User-Agent":    req("GET", "http://example.test/", "", map[string][]string{"User-Agent": {"  "}}, nil),
		"values trimmed and repeated": req("PUT", "http://example.test/", "body", map[string][]string{
			"X-B": {" two ", "\tthree"}, "X-A": {"one"}, "x-lower": {"kept as written"},
			"Host": {"ignored"}, "Content-Length": {"99"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}}, nil),
		"Host set":         req("GET", "http://example.test/", "", nil, func(r *http.Request) { r.Host = "other.test:81" }),
		"Connection close": req("GET", "http://example.test/", "", nil, func(r *http.Request) { r.Close = true }),
		"IPv6":             req("GET", "http://[::1]:8080/p", "", nil, nil),
		"opaque":           req("GET", "http://example.test/", "", nil, func(r *http.Request) { r.URL.Opaque = "//example.test/raw%2Fpath" }),
		"https":            req("PATCH", "https://example.test/x", "{}", nil, nil),
	} {
		t.Run(name, func(t *testing.T) {
			var want, got, gz bytes.Buffer
			if err := b().Write(&want); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				buf *bytes.Buffer
				gz  bool
			}{{&got, false}, {&gz, true}} {
				bw := bufio.NewWriter(w.buf)
				if err := writeRequest(bw, b(), w.gz); err != nil {
					t.Fatal(err)
				}
				bw.Flush()
			}
			if got.String() != want.String() {
				t.Fatalf("writeRequest wrote\n%q\nRequest.Write writes\n%q", got.String(), want.String())
			}
			if !strings.Contains(gz.String(), "\r\nAccept-Encoding: gzip\r\n") || strings.Replace(gz.String(), "Accept-Encoding: gzip\r\n", "", 1) != want.String() {
				t.Fatalf("with gzip:\n%q\nwithout\n%q", gz.String(), want.String())
			}
		})
	}
}

// TestWriteRequestLengthWithoutBody leaves a length with no body to
// net/http (which refuses it, or sends no body as 0) rather than announce
// bytes that never come and leave the connection out of step.
func TestWriteRequestLengthWithoutBody(t *testing.T) {
	for _, body := range []io.ReadCloser{nil, http.NoBody} {
		req, _ := http.NewRequest("POST", "http://example.test/", nil)
		req.Body, req.ContentLength = body, 5
		var want, got bytes.Buffer
		wantErr := req.Write(&want)
		bw := bufio.NewWriter(&got)
		err := writeRequest(bw, req, false)
		bw.Flush()
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || got.String() != want.String() || strings.Contains(got.String(), "Content-Length: 5") {
			t.Fatalf("body %v: writeRequest %v %q; Request.Write %v %q", body, err, got.String(), wantErr, want.String())
		}
	}
}

// TestWriteRequestBodyLength refuses a body longer or shorter than the
// request says, as net/http does, and closes it either way.
func TestWriteRequestBodyLength(t *testing.T) {
	for _, n := range []int64{3, 5} {
		req, _ := http.NewRequest("POST", "http://example.test/", nil)
		body := &closeCounter{Reader: strings.NewReader("four")}
		req.Body, req.ContentLength = body, n
		err := writeRequest(bufio.NewWriter(io.Discard), req, false)
		if err == nil || !strings.Contains(err.Error(), "with Body length 4") {
			t.Fatalf("ContentLength %d: %v", n, err)
		}
		if body.closed != 1 {
			t.Fatalf("ContentLength %d: body closed %d times", n, body.closed)
		}
	}
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }
