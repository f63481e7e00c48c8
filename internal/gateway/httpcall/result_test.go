package httpcall_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolgate/toolgate/internal/gateway/httpcall"
)

const tenMB = 10 << 20

// stream answers 10 MB in 64 KiB writes, flushed, with or without a
// Content-Length.
func stream(withLength bool) http.HandlerFunc {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(tenMB))
		}
		for sent := 0; sent < tenMB; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client stopped reading
			}
			w.(http.Flusher).Flush()
		}
	}
}

func TestReadResultCapsATenMegabyteAnswer(t *testing.T) {
	const max = httpcall.DefaultMaxBytes
	for _, withLength := range []bool{true, false} {
		t.Run("content-length="+strconv.FormatBool(withLength), func(t *testing.T) {
			srv := httptest.NewServer(stream(withLength))
			defer srv.Close()
			res, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := httpcall.ReadResult(res, max)
			runtime.ReadMemStats(&after)

			if len(r.Body) != max || !r.Truncated || r.Err != nil {
				t.Fatalf("got %d bytes, truncated %v, err %v; want %d bytes, truncated", len(r.Body), r.Truncated, r.Err, max)
			}
			wantTotal := int64(-1)
			if withLength {
				wantTotal = tenMB
			}
			if r.TotalBytes != wantTotal {
				t.Errorf("TotalBytes %d, want %d", r.TotalBytes, wantTotal)
			}
			// The cap bounds what is held, not the answer's size: reading
			// allocates a small multiple of the cap at most, never 10 MB.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("reading allocated %d bytes for a cap of %d", alloc, max)
			if alloc > 3*max {
				t.Errorf("reading allocated %d bytes for a cap of %d", alloc, max)
			}
			wantEnd := "[truncated: showed 1048576 of 10485760 bytes]"
			if !withLength {
				wantEnd = "[truncated: showed 1048576 of more than 1048576 bytes]"
			}
			if text := r.Text(); !strings.HasSuffix(text, "\n"+wantEnd) {
				t.Errorf("text ends %q, want %q", text[len(text)-80:], wantEnd)
			}
		})
	}
}

func TestReadResult(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		max     int64
		want    httpcall.Result
	}{
		{"fits", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"a":1}`)
		}, 100, httpcall.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"a":1}`), TotalBytes: 7}},
		{"exactly the cap", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "12345")
		}, 5, httpcall.Result{Status: 200, ContentType: "text/plain; charset=utf-8", Body: []byte("12345"), TotalBytes: 5}},
		{"one over the cap", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "123456")
		}, 5, httpcall.Result{Status: 200, ContentType: "text/plain; charset=utf-8", Body: []byte("12345"), Truncated: true, TotalBytes: 6}},
		{"empty 204", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}, 5, httpcall.Result{Status: 204, TotalBytes: 0}},
		{"no cap given", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ok")
		}, 0, httpcall.Result{Status: 200, ContentType: "text/plain; charset=utf-8", Body: []byte("ok"), TotalBytes: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			res, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			got := httpcall.ReadResult(res, tc.max)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// An upstream that hangs up mid-answer: what came is kept and the
// error is stated.
func TestReadResultCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := httpcall.ReadResult(res, 1000)
	if string(r.Body) != "partial" || !errors.Is(r.Err, io.ErrUnexpectedEOF) || r.TotalBytes != -1 {
		t.Fatalf("got %q, err %v, total %d", r.Body, r.Err, r.TotalBytes)
	}
	if want := "partial\n[the answer ended early: unexpected EOF]"; r.Text() != want {
		t.Errorf("text %q, want %q", r.Text(), want)
	}
}

func TestResultText(t *testing.T) {
	long := strings.Repeat("e", 3000)
	cases := []struct {
		name   string
		result httpcall.Result
		want   string
	}{
		{"json indented", httpcall.Result{Status: 200, ContentType: "application/json; charset=utf-8", Body: []byte(`{"a":[1,2],"b":{"c":"d"}}`)},
			"{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {\n    \"c\": \"d\"\n  }\n}"},
		{"problem+json indented", httpcall.Result{Status: 201, ContentType: "application/hal+json", Body: []byte(`{"a":1}`)}, "{\n  \"a\": 1\n}"},
		{"invalid json as is, stated", httpcall.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"a":`)},
			"{\"a\":\n[the answer is labelled application/json but is not valid JSON; shown as it came]"},
		{"text as is", httpcall.Result{Status: 200, ContentType: "text/plain", Body: []byte("hello\n")}, "hello\n"},
		{"no body", httpcall.Result{Status: 204}, "HTTP 204 No Content (no body)"},
		{"truncated json as is", httpcall.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"a":"bc`), Truncated: true, TotalBytes: 20},
			"{\"a\":\"bc\n[truncated: showed 8 of 20 bytes]"},
		{"truncated inside a rune", httpcall.Result{Status: 200, ContentType: "text/plain", Body: []byte("ab\xc3"), Truncated: true, TotalBytes: -1},
			"ab\n[truncated: showed 3 of more than 3 bytes]"},
		{"binary", httpcall.Result{Status: 200, ContentType: "image/png", Body: []byte("\x89PNG\x00\xff\xfe")}, "[binary body: 7 bytes of image/png]"},
		{"404", httpcall.Result{Status: 404, ContentType: "application/json", Body: []byte(`{"message":"no such pet"}`), TotalBytes: 25},
			"HTTP 404 Not Found\n{\"message\":\"no such pet\"}"},
		{"500 without body", httpcall.Result{Status: 500}, "HTTP 500 Internal Server Error"},
		{"unknown status", httpcall.Result{Status: 599, Body: []byte("x")}, "HTTP 599\nx"},
		{"long error excerpt", httpcall.Result{Status: 502, ContentType: "text/html", Body: []byte(long), TotalBytes: 3000},
			"HTTP 502 Bad Gateway\n" + long[:2048] + "\n[excerpt: first 2048 of 3000 bytes]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.result.Text(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	if (httpcall.Result{Status: 302}).OK() || !(httpcall.Result{Status: 299}).OK() {
		t.Error("OK must hold for 2xx only")
	}
}
