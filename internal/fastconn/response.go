package fastconn

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is the buffered http.ResponseWriter the handler answers into.
type response struct {
	header http.Header
	status int // 0 until WriteHeader
	body   []byte
	close  bool // answer with Connection: close and close the connection
}

func newResponse() *response { return &response{header: http.Header{}} }

func (r *response) Header() http.Header { return r.header }

func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *response) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.body = append(r.body, p...)
	return len(p), nil
}

func (r *response) reset() {
	r.header, r.status, r.body = http.Header{}, 0, nil
}

// copyTo writes the answer through w, for a connection that could not be
// hijacked.
func (r *response) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.statusCode())
	_, _ = w.Write(r.body)
}

func (r *response) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// The headers the loop writes itself, whatever the handler set.
var ownHeaders = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Date": true}

// valueEscaper makes a header value one line, as net/http does.
var valueEscaper = strings.NewReplacer("\r", " ", "\n", " ")

// appendTo appends the answer as HTTP/1.1 to b: the status line, the
// handler's headers in order, Date, Content-Length (or none where the
// status has no body), and the body.
func (r *response) appendTo(b []byte) []byte {
	status := r.statusCode()
	if status < 200 || status > 999 {
		status = http.StatusInternalServerError // 1xx would need a final answer after it
	}
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)
	bodyAllowed := status != http.StatusNoContent && status != http.StatusNotModified
	if bodyAllowed && len(r.body) > 0 && r.header.Get("Content-Type") == "" {
		r.header.Set("Content-Type", http.DetectContentType(r.body)) // as net/http
	}
	keys := make([]string, 0, len(r.header))
	for k := range r.header {
		if !ownHeaders[k] && httpguts.ValidHeaderFieldName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range r.header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			if strings.ContainsAny(v, "\r\n") {
				v = valueEscaper.Replace(v)
			}
			b = append(b, strings.TrimSpace(v)...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "Date: "...)
	b = append(b, httpDate()...)
	b = append(b, "\r\n"...)
	if bodyAllowed {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(r.body)), 10)
		b = append(b, "\r\n"...)
	}
	if r.close {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	if bodyAllowed {
		b = append(b, r.body...)
	}
	return b
}

// date is the Date header's value, formatted once a second.
var date atomic.Pointer[dateValue]

type dateValue struct {
	second int64
	text   string
}

func httpDate() string {
	now := time.Now()
	if d := date.Load(); d != nil && d.second == now.Unix() {
		return d.text
	}
	d := &dateValue{second: now.Unix(), text: now.UTC().Format(http.TimeFormat)}
	date.Store(d)
	return d.text
}
