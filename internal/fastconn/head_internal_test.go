package fastconn

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// Heads real clients send to /mcp, which the loop must take.
var clientHeads = map[string]string{
	"go-sdk": "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 146\r\n" +
		"Accept: application/json, text/event-stream\r\nAuthorization: Bearer tgk_abc\r\nContent-Type: application/json\r\n" +
		"Mcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: 5WZP3QZ2\r\nAccept-Encoding: gzip\r\n\r\n",
	"typescript-sdk": "POST /mcp?mode=direct HTTP/1.1\r\nhost: localhost:8080\r\nconnection: keep-alive\r\n" +
		"authorization: Bearer tgk_abc\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n" +
		"mcp-session-id: 5WZP3QZ2\r\nmcp-protocol-version: 2025-06-18\r\naccept-language: *\r\nsec-fetch-mode: cors\r\n" +
		"user-agent: node\r\naccept-encoding: gzip, deflate\r\ncontent-length: 98\r\n\r\n",
	"curl": "POST /mcp HTTP/1.1\r\nHost: toolgate.example.com\r\nUser-Agent: curl/7.88.1\r\nAccept: application/json, text/event-stream\r\n" +
		"Authorization: Bearer tgk_abc\r\nContent-Type: application/json\r\nX-Tag: one\r\nX-Tag: two\r\nContent-Length: 58\r\n\r\n",
}

const testMaxBody = 1 << 20

func TestParseHeadTakesWhatClientsSend(t *testing.T) {
	for name, head := range clientHeads {
		got, ok := parseHead([]byte(head), testMaxBody, nil)
		if !ok {
			t.Fatalf("%s: declined", name)
		}
		want, ok := netHTTPWould([]byte(head), testMaxBody)
		if !ok {
			t.Fatalf("%s: net/http's server would not take it", name)
		}
		sameRequest(t, name, got, want)
	}
}

// A connection's requests reuse its last parsed target, each with a URL
// of its own: a handler that changes one request's URL changes no other.
func TestParseHeadReusesTheLastTarget(t *testing.T) {
	var last target
	head := func(target string) []byte {
		return []byte("POST " + target + " HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n")
	}
	first, ok := parseHead(head("/mcp?mode=direct"), testMaxBody, &last)
	if !ok {
		t.Fatal("first head not taken")
	}
	first.URL.RawQuery = "changed"
	second, ok := parseHead(head("/mcp?mode=direct"), testMaxBody, &last)
	if !ok || second.URL == first.URL || second.URL.Path != "/mcp" || second.URL.RawQuery != "mode=direct" {
		t.Fatalf("second URL %+v, first %p", second.URL, first.URL)
	}
	third, ok := parseHead(head("/other"), testMaxBody, &last)
	if !ok || third.URL.Path != "/other" || third.URL.RawQuery != "" {
		t.Fatalf("a new target: URL %+v", third.URL)
	}
	if _, ok := parseHead(head("/%zz"), testMaxBody, &last); ok {
		t.Fatal("a target that does not parse was taken")
	}
}

func TestParseHeadDeclines(t *testing.T) {
	base := "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n"
	for name, head := range map[string]string{
		"GET":                    "GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
		"lower-case method":      "post /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
		"HTTP/1.0":               "POST /mcp HTTP/1.0\r\nHost: h\r\n\r\n",
		"absolute form":          "POST http://h/mcp HTTP/1.1\r\nHost: h\r\n\r\n",
		"space in target":        "POST /m cp HTTP/1.1\r\nHost: h\r\n\r\n",
		"no Host":                "POST /mcp HTTP/1.1\r\nContent-Length: 4\r\n\r\n",
		"two Hosts":              base + "Host: h\r\n\r\n",
		"bad Host":               "POST /mcp HTTP/1.1\r\nHost: a b\r\n\r\n",
		"two lengths":            base + "Content-Length: 4\r\n\r\n",
		"signed length":          "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: +4\r\n\r\n",
		"negative length":        "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
		"empty length":           "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n",
		"length over the limit":  "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1048577\r\n\r\n",
		"chunked":                base + "Transfer-Encoding: chunked\r\n\r\n",
		"Expect":                 base + "Expect: 100-continue\r\n\r\n",
		"Trailer":                base + "Trailer: X\r\n\r\n",
		"Pragma":                 base + "Pragma: no-cache\r\n\r\n",
		"Connection: close":      base + "Connection: keep-alive, Close\r\n\r\n",
		"folded line":            base + "X-A: a\r\n b\r\n\r\n",
		"space before the colon": base + "X-A : b\r\n\r\n",
		"no colon":               base + "X-A\r\n\r\n",
		"control in a value":     base + "X-A: a\x01b\r\n\r\n",
		"bad name":               base + "X(A): b\r\n\r\n",
	} {
		if _, ok := parseHead([]byte(head), testMaxBody, nil); ok {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestParseHeadAgreesWithNetHTTP mutates real heads at random: whatever
// parseHead takes, net/http's server takes too and reads as the same
// request.
func TestParseHeadAgreesWithNetHTTP(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var last target
	alphabet := []byte(" \t:\r\n,;=+-0aAzZ\x00\x01\x7f\x80\xff/?#%\"")
	var bases [][]byte
	for _, h := range clientHeads {
		bases = append(bases, []byte(h))
	}
	taken := 0
	for range 200_000 {
		head := bytes.Clone(bases[rng.IntN(len(bases))])
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(head))
			switch rng.IntN(4) {
			case 0: // insert
				head = append(head[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, head[i:]...)...)
			case 1: // replace
				head[i] = alphabet[rng.IntN(len(alphabet))]
			case 2: // delete
				head = append(head[:i], head[i+1:]...)
			case 3: // repeat a line
				lines := bytes.SplitAfter(head, []byte("\r\n"))
				j := 1 + rng.IntN(max(len(lines)-2, 1))
				if j < len(lines) {
					head = bytes.Join(append(lines[:j:j], append([][]byte{lines[j]}, lines[j:]...)...), nil)
				}
			}
		}
		n, _ := headLength(bufio.NewReader(bytes.NewReader(head)), func() {})
		if n == 0 {
			continue // the loop leaves it to net/http unparsed
		}
		head = head[:n]
		got, ok := parseHead(head, testMaxBody, &last) // one connection's: the last target is kept
		if !ok {
			continue
		}
		taken++
		want, ok := netHTTPWould(head, testMaxBody)
		if !ok {
			t.Fatalf("taken, but net/http's server would refuse or not take it: %q", head)
		}
		sameRequest(t, string(head), got, want)
	}
	if taken < 10_000 {
		t.Fatalf("only %d of the mutated heads were taken: the test shows too little", taken)
	}
}

// netHTTPWould is the request net/http's server builds from head, and
// whether the loop may serve it: what http.ReadRequest reads, after the
// server's own checks (one valid Host, valid field names and values) and
// the loop's (a POST over HTTP/1.1 in
// origin form, framed by its Content-Length alone, up to maxBody).
func netHTTPWould(head []byte, maxBody int64) (*http.Request, bool) {
	br := bufio.NewReader(bytes.NewReader(head))
	r, err := http.ReadRequest(br)
	if err != nil || br.Buffered() != 0 {
		return nil, false
	}
	if hostLines(head) != 1 || !httpguts.ValidHostHeader(r.Host) { // ReadRequest keeps the first, out of Header
		return nil, false
	}
	for name, values := range r.Header {
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, false
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, false
			}
		}
	}
	takes := r.Method == http.MethodPost && r.ProtoMajor == 1 && r.ProtoMinor == 1 && strings.HasPrefix(r.RequestURI, "/") &&
		!r.Close && len(r.TransferEncoding) == 0 && r.ContentLength >= 0 && r.ContentLength <= maxBody && r.Header.Get("Expect") == ""
	return r, takes
}

func sameRequest(t *testing.T, what string, got, want *http.Request) {
	t.Helper()
	if got.Method != want.Method || got.URL.String() != want.URL.String() || got.RequestURI != want.RequestURI ||
		got.Proto != want.Proto || got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor ||
		got.Host != want.Host || got.ContentLength != want.ContentLength || got.Close != want.Close ||
		!reflect.DeepEqual(got.Header, want.Header) {
		t.Fatalf("%q:\n got %s %s %s host=%q length=%d close=%v %v\nwant %s %s %s host=%q length=%d close=%v %v", what,
			got.Method, got.RequestURI, got.Proto, got.Host, got.ContentLength, got.Close, got.Header,
			want.Method, want.RequestURI, want.Proto, want.Host, want.ContentLength, want.Close, want.Header)
	}
}

func BenchmarkParseHead(b *testing.B) {
	head := []byte(clientHeads["go-sdk"])
	b.Run("parseHead", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := parseHead(head, testMaxBody, nil); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("http.ReadRequest", func(b *testing.B) {
		b.ReportAllocs()
		br := bufio.NewReaderSize(nil, maxHead)
		rd := bytes.NewReader(head)
		for b.Loop() {
			rd.Reset(head)
			br.Reset(rd)
			if _, err := http.ReadRequest(br); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// hostLines counts the Host fields of a request head (http.ReadRequest
// keeps only the first).
func hostLines(head []byte) int {
	n := 0
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		if len(line) >= 5 && bytes.EqualFold(line[:5], []byte("host:")) {
			n++
		}
	}
	return n
}
