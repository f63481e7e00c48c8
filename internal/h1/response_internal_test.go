package h1

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"testing"
)

// Responses real servers send, each followed by the start of the next one
// on the connection.
var serverResponses = map[string]string{
	"go-sdk event stream": "HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\n" +
		"Content-Type: text/event-stream\r\nMcp-Session-Id: 5WZP3QZ2\r\nDate: Tue, 24 Nov 2026 10:00:00 GMT\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" +
		"5f\r\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n\r\n0\r\n\r\n",
	"JSON": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Tue, 24 Nov 2026 10:00:00 GMT\r\nContent-Length: 15\r\n\r\n" +
		"{\"text\":\"hi\"}\n",
	"error with trailer fields": "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n" +
		"transfer-encoding: chunked\r\n\r\n4\r\ngone\r\n0\r\nX-Checksum: 1\r\n\r\n",
	"empty": "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
}

const nextResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func TestReadPlainResponseTakesWhatServersSend(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://h/mcp", nil)
	for name, raw := range serverResponses {
		got, ok := readAll(t, raw+nextResponse, req, true)
		if !ok {
			t.Fatalf("%s: declined", name)
		}
		want, _ := readAll(t, raw+nextResponse, req, false)
		sameResponse(t, name, got, want)
	}
}

func TestReadPlainResponseDeclines(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://h/mcp", nil)
	head, _ := http.NewRequest(http.MethodHead, "http://h/mcp", nil)
	for name, raw := range map[string]string{
		"HTTP/1.0":            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"informational":       "HTTP/1.1 100 Continue\r\n\r\n",
		"no content":          "HTTP/1.1 204 No Content\r\n\r\n",
		"not modified":        "HTTP/1.1 304 Not Modified\r\n\r\n",
		"read to the close":   "HTTP/1.1 200 OK\r\n\r\nok",
		"framed twice":        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
		"two lengths":         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"gzip, chunked":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"Trailer":             "HTTP/1.1 200 OK\r\nTrailer: X\r\nContent-Length: 2\r\n\r\nok",
		"Pragma":              "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 2\r\n\r\nok",
		"chunked, Unicode K":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"Connection: close":   "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"folded":              "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
		"bare LF":             "HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok",
		"head not all in yet": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
		"signed status":       "HTTP/1.1 +99 OK\r\nContent-Length: 2\r\n\r\nok",
	} {
		br := bufio.NewReader(bytes.NewReader([]byte(raw)))
		_, _ = br.Peek(len(raw))
		if _, ok := readPlainResponse(br, req); ok {
			t.Errorf("%s: taken", name)
		}
		if br.Buffered() != len(raw) {
			t.Errorf("%s: declined after reading %d bytes", name, len(raw)-br.Buffered())
		}
	}
	raw := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
	br := bufio.NewReader(bytes.NewReader([]byte(raw)))
	_, _ = br.Peek(len(raw))
	if _, ok := readPlainResponse(br, head); ok {
		t.Error("the response to HEAD: taken")
	}
}

// TestReadPlainResponseAgreesWithNetHTTP mutates real responses at random:
// whatever readPlainResponse takes, http.ReadResponse reads as the same
// response, with the same body, ending at the same byte.
func TestReadPlainResponseAgreesWithNetHTTP(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://h/mcp", nil)
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(" \t:\r\n,;0129aAfF\x00\x01\x7f\x80-+x")
	var bases [][]byte
	for _, r := range serverResponses {
		bases = append(bases, []byte(r+nextResponse))
	}
	taken := 0
	for range 200_000 {
		raw := bytes.Clone(bases[rng.IntN(len(bases))])
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(raw))
			switch rng.IntN(3) {
			case 0:
				raw = append(raw[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, raw[i:]...)...)
			case 1:
				raw[i] = alphabet[rng.IntN(len(alphabet))]
			case 2:
				raw = append(raw[:i], raw[i+1:]...)
			}
		}
		got, ok := readAll(t, string(raw), req, true)
		if !ok {
			continue
		}
		taken++
		want, _ := readAll(t, string(raw), req, false)
		sameResponse(t, string(raw), got, want)
	}
	if taken < 10_000 {
		t.Fatalf("only %d of the mutated responses were taken: the test shows too little", taken)
	}
}

// read is a response read to the end of its body.
type read struct {
	err     error // reading the head
	resp    *http.Response
	body    []byte
	bodyErr error
	left    []byte // what the connection holds after the body
}

// readAll reads raw's first response with readPlainResponse (lean) or
// http.ReadResponse; ok is false when the lean reader declines.
func readAll(t *testing.T, raw string, req *http.Request, lean bool) (r read, ok bool) {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader([]byte(raw)), 4<<10)
	_, _ = br.Peek(len(raw))
	if lean {
		if r.resp, ok = readPlainResponse(br, req); !ok {
			return r, false
		}
	} else if r.resp, r.err = http.ReadResponse(br, req); r.err != nil {
		return r, true
	}
	r.body, r.bodyErr = io.ReadAll(r.resp.Body)
	r.left, _ = io.ReadAll(br)
	return r, true
}

func sameResponse(t *testing.T, what string, got, want read) {
	t.Helper()
	if want.err != nil {
		t.Fatalf("%q: taken, but http.ReadResponse says %v", what, want.err)
	}
	g, w := got.resp, want.resp
	same := g.Status == w.Status && g.StatusCode == w.StatusCode && g.Proto == w.Proto && g.ProtoMajor == w.ProtoMajor &&
		g.ProtoMinor == w.ProtoMinor && g.ContentLength == w.ContentLength && g.Close == w.Close &&
		reflect.DeepEqual(g.TransferEncoding, w.TransferEncoding) && reflect.DeepEqual(g.Header, w.Header) &&
		reflect.DeepEqual(g.Trailer, w.Trailer) && bytes.Equal(got.body, want.body) && bytes.Equal(got.left, want.left) &&
		(got.bodyErr == nil) == (want.bodyErr == nil)
	if !same {
		t.Fatalf("%q:\n got %q %d %s length=%d te=%v close=%v %v trailer=%v body=%q (%v) left=%q\nwant %q %d %s length=%d te=%v close=%v %v trailer=%v body=%q (%v) left=%q",
			what, g.Status, g.StatusCode, g.Proto, g.ContentLength, g.TransferEncoding, g.Close, g.Header, g.Trailer, got.body, got.bodyErr, got.left,
			w.Status, w.StatusCode, w.Proto, w.ContentLength, w.TransferEncoding, w.Close, w.Header, w.Trailer, want.body, want.bodyErr, want.left)
	}
}

func BenchmarkReadResponse(b *testing.B) {
	raw := []byte(serverResponses["go-sdk event stream"])
	req, _ := http.NewRequest(http.MethodPost, "http://h/mcp", nil)
	for _, lean := range []bool{true, false} {
		name := "readPlainResponse"
		if !lean {
			name = "http.ReadResponse"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			rd := bytes.NewReader(raw)
			br := bufio.NewReaderSize(nil, 4<<10)
			buf := make([]byte, 512)
			for b.Loop() {
				rd.Reset(raw)
				br.Reset(rd)
				_, _ = br.Peek(len(raw))
				var resp *http.Response
				if lean {
					resp, _ = readPlainResponse(br, req)
				} else {
					resp, _ = http.ReadResponse(br, req)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
			}
		})
	}
}
