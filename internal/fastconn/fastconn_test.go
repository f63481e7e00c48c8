package fastconn_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/fastconn"
)

// server is a real http.Server whose /mcp handler takes connections over,
// as toolgate's: the fast handler answers bodies starting with "fast"
// (echoing them and saying who served), panics on "panic", and leaves the
// rest to net/http, which answers "sdk".
type server struct {
	addr  string
	loops *fastconn.Server
	srv   *http.Server

	mu   sync.Mutex
	kept [][]byte // bodies the fast handler kept
}

func newServer(t *testing.T, o fastconn.Options) *server {
	t.Helper()
	s := &server{}
	o.Path = "/mcp"
	o.Serve = s.fast
	s.loops = fastconn.New(o)
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" && s.loops.TakeOver(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "sdk %s %s", r.Method, body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go func() { _ = s.srv.Serve(ln) }()
	go func() { _ = s.srv.Serve(s.loops.Listener()) }()
	t.Cleanup(func() {
		s.loops.Close()
		_ = s.srv.Close()
	})
	return s
}

func (s *server) fast(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("X-Refuse") != "" { // before reading the body, as a refused key
		http.Error(w, "refused", http.StatusForbidden)
		return true
	}
	whole, inLoop := r.Body.(*fastconn.Body)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(err)
	}
	if inLoop && !bytes.Equal(whole.Bytes(), body) {
		panic(fmt.Sprintf("Body.Bytes %q differs from the body read, %q", whole.Bytes(), body))
	}
	switch {
	case strings.HasPrefix(string(body), "panic"):
		panic("asked to")
	case string(body) == "fast slow":
		time.Sleep(300 * time.Millisecond)
	case string(body) == "fast slower":
		time.Sleep(3 * time.Second)
	case !strings.HasPrefix(string(body), "fast"):
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		return false
	}
	s.mu.Lock()
	s.kept = append(s.kept, body) // as the audit keeps the arguments
	s.mu.Unlock()
	via := "net/http"
	if r.Context().Value(http.ServerContextKey) == nil {
		via = "loop"
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Via", via)
	fmt.Fprintf(w, "%s host=%s", body, r.Host)
	return true
}

// client is one kept-alive connection, written and read by hand.
type client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func post(body string, headers ...string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: example.test\r\nContent-Length: %d\r\n%s\r\n%s",
		len(body), strings.Join(append(headers, ""), "\r\n"), body)
}

// takenOver dials s and makes a first fast call, answered through net/http,
// after which the loop serves the connection.
func takenOver(t *testing.T, s *server) *client {
	t.Helper()
	c := dial(t, s.addr)
	c.send(post("fast 1"))
	c.expect(200, "fast 1 host=example.test", "net/http")
	return c
}

func (c *client) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, raw); err != nil {
		c.t.Fatal(err)
	}
}

// answer reads the next response: its status, body and X-Via.
func (c *client) answer() (int, string, string) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.br, nil)
	for err == nil && resp.StatusCode == http.StatusContinue {
		resp, err = http.ReadResponse(c.br, nil)
	}
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, string(body), resp.Header.Get("X-Via")
}

func (c *client) expect(status int, body, via string) {
	c.t.Helper()
	gotStatus, gotBody, gotVia := c.answer()
	if gotStatus != status || gotBody != body || gotVia != via {
		c.t.Fatalf("got %d %q via %q, want %d %q via %q", gotStatus, gotBody, gotVia, status, body, via)
	}
}

// closed reports whether the server closed the connection.
func (c *client) closed() bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.br.ReadByte()
	return err == io.EOF
}

func TestLoopServesAndGivesBack(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := dial(t, s.addr)

	c.send(post("fast 1"))
	c.expect(200, "fast 1 host=example.test", "net/http") // taken over after this answer
	c.send(post("fast 2"))
	c.expect(200, "fast 2 host=example.test", "loop")
	c.send(post(`{"method":"initialize"}`)) // declined: back to net/http, on the same connection
	c.expect(200, `sdk POST {"method":"initialize"}`, "")
	c.send("GET /mcp HTTP/1.1\r\nHost: example.test\r\n\r\n")
	c.expect(200, "sdk GET ", "")
	c.send(post("fast 3"))
	c.expect(200, "fast 3 host=example.test", "net/http")
	c.send(post("fast 4"))
	c.expect(200, "fast 4 host=example.test", "loop")

	// Pipelined: a fast request, one for net/http, and a fast one again,
	// in one write, answered in order.
	c.send(post("fast 5") + post("other") + post("fast 6") + post("fast 7"))
	c.expect(200, "fast 5 host=example.test", "loop")
	c.expect(200, "sdk POST other", "")
	c.expect(200, "fast 6 host=example.test", "net/http")
	c.expect(200, "fast 7 host=example.test", "loop")

	if got, want := s.loops.Stats(), (fastconn.Stats{TakenOver: 3, Served: 4, GivenBack: 2}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}

	// The bodies the handler kept are its own.
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept []string
	for _, b := range s.kept {
		kept = append(kept, string(b))
	}
	if got := strings.Join(kept, ","); got != "fast 1,fast 2,fast 3,fast 4,fast 5,fast 6,fast 7" {
		t.Errorf("kept bodies: %s", got)
	}
}

func TestRefusalBeforeTheBodyIsRead(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	for _, first := range []bool{true, false} {
		c := dial(t, s.addr)
		if !first {
			c.send(post("fast 1"))
			c.expect(200, "fast 1 host=example.test", "net/http")
		}
		c.send(post("fast unread", "X-Refuse: yes"))
		if status, body, _ := c.answer(); status != http.StatusForbidden || body != "refused\n" {
			t.Fatalf("got %d %q", status, body)
		}
		c.send(post("fast 2"))
		if status, body, _ := c.answer(); status != 200 || body != "fast 2 host=example.test" {
			t.Fatalf("after a refusal (first request %v): got %d %q", first, status, body)
		}
	}
}

func TestLoopLeavesToNetHTTPWhatItDoesNotTake(t *testing.T) {
	s := newServer(t, fastconn.Options{MaxBody: 64})
	cases := []struct {
		name, raw string
		status    int
		body      string
	}{
		{"another path", "POST /other HTTP/1.1\r\nHost: example.test\r\nContent-Length: 4\r\n\r\nfast", 200, "sdk POST fast"},
		{"chunked", "POST /mcp HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nfast\r\n0\r\n\r\n", 200, "sdk POST fast"},
		{"over MaxBody", post("fast" + strings.Repeat("x", 64)), 200, "sdk POST fast" + strings.Repeat("x", 64)},
		{"Expect", post("fast", "Expect: 100-continue"), 200, "sdk POST fast"},
		{"two hosts", post("fast", "Host: evil.test"), 400, "400 Bad Request"},
		{"bad header value", post("fast", "X-A: a\x01b"), 400, "400 Bad Request"},
		{"space before colon", post("fast", "X-A : b"), 400, "400 Bad Request"},
		{"bad request line", "POST /mcp HTTP/9.9\r\nHost: example.test\r\nContent-Length: 4\r\n\r\nfast", 505, "505 HTTP Version Not Supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := takenOver(t, s)
			c.send(tc.raw)
			status, body, via := c.answer()
			if status != tc.status || !strings.HasPrefix(body, tc.body) || via != "" {
				t.Fatalf("got %d %q via %q, want %d %q from net/http", status, body, via, tc.status, tc.body)
			}
		})
	}
}

func TestLoopAndNetHTTPAgreeWhereRequestsEnd(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	// Bare LFs, which net/http accepts: each request is answered once.
	c := takenOver(t, s)
	c.send("GET /other HTTP/1.1\nHost: h\n\n" + "GET /second HTTP/1.1\r\nHost: h\r\n\r\n" + post("fast 2"))
	c.expect(200, "sdk GET ", "")
	c.expect(200, "sdk GET ", "")
	c.expect(200, "fast 2 host=example.test", "net/http")
	// A declined bare-LF POST whose body looks like a request.
	c.send("POST /mcp HTTP/1.1\nHost: h\nContent-Length: 29\n\nnot\r\n\r\nGET /smuggled HTTP/1.1" + post("fast 3"))
	c.expect(200, "sdk POST not\r\n\r\nGET /smuggled HTTP/1.1", "")
	c.expect(200, "fast 3 host=example.test", "net/http")
	c.send(post("fast 4"))
	c.expect(200, "fast 4 host=example.test", "loop")
	// An absolute-form URI: net/http checks the Host field itself.
	c.send("POST http://h/mcp HTTP/1.1\r\nHost: bad host\r\nContent-Length: 4\r\n\r\nfast")
	if status, _, _ := c.answer(); status != http.StatusBadRequest {
		t.Fatalf("absolute form with a bad Host: %d", status)
	}
}

func TestLoopGivesALargeHeadToNetHTTP(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	// net/http reads it, and it is taken over again from there.
	c.send(post("fast 2", "X-Big: "+strings.Repeat("b", 5000)))
	c.expect(200, "fast 2 host=example.test", "net/http")
	c.send(post("fast 3"))
	c.expect(200, "fast 3 host=example.test", "loop")
}

func TestLoopConnectionClose(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	c.send(post("fast 2", "Connection: close")) // net/http's to close
	c.expect(200, "sdk POST fast 2", "")
	if !c.closed() {
		t.Fatal("the connection stayed open after Connection: close")
	}
}

func TestLoopPanicAnswers500AndCloses(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	c.send(post("panic"))
	status, body, _ := c.answer()
	if status != 500 || !strings.Contains(body, "failed to serve") {
		t.Fatalf("got %d %q", status, body)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open after a panic")
	}
	// The server goes on.
	c = dial(t, s.addr)
	c.send(post("fast 2"))
	c.expect(200, "fast 2 host=example.test", "net/http")
}

func TestLoopTimesOutAnIdleConnection(t *testing.T) {
	s := newServer(t, fastconn.Options{IdleTimeout: 100 * time.Millisecond})
	c := takenOver(t, s)
	if !c.closed() {
		t.Fatal("an idle connection stayed open past IdleTimeout")
	}
}

// A request that stalls halfway is cut off by its own limit: the head's
// (10 s by default) or the whole request's (1 minute), not the idle one
// (2 minutes).
func TestLoopTimesOutAStalledRequest(t *testing.T) {
	for name, tc := range map[string]struct {
		opts    fastconn.Options
		partial string
	}{
		"head": {fastconn.Options{ReadHeaderTimeout: 100 * time.Millisecond}, "POST /mcp HTTP/1.1\r\nHost: exa"},
		"body": {fastconn.Options{ReadTimeout: 100 * time.Millisecond}, "POST /mcp HTTP/1.1\r\nHost: example.test\r\nContent-Length: 10\r\n\r\nfast"},
	} {
		t.Run(name, func(t *testing.T) {
			c := takenOver(t, newServer(t, tc.opts))
			c.send(tc.partial) // and nothing more
			if !c.closed() {
				t.Fatalf("a connection stalled inside a %s stayed open past its limit", name)
			}
		})
	}
}

// A stray CRLF after a body, which net/http skips after a POST, is
// skipped too, before a request the loop serves and before one it gives
// back.
func TestLoopSkipsBlankLinesAfterABody(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	c.send(post("fast 2") + "\r\n")
	c.expect(200, "fast 2 host=example.test", "loop")
	c.send("\r\n" + post("fast 3"))
	c.expect(200, "fast 3 host=example.test", "loop")
	c.send(post("fast 4") + "\r\n\r\n")
	c.expect(200, "fast 4 host=example.test", "loop")
	c.send(post("other"))
	c.expect(200, "sdk POST other", "")
}

// A head and a body that come in pieces are read whole.
func TestLoopReadsARequestInPieces(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	req := post("fast in pieces")
	for _, piece := range []string{req[:10], req[10:40], req[40 : len(req)-5], req[len(req)-5:]} {
		c.send(piece)
		time.Sleep(20 * time.Millisecond)
	}
	c.expect(200, "fast in pieces host=example.test", "loop")
}

func TestShutdownClosesIdleLoops(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	c.send(post("fast 2"))
	c.expect(200, "fast 2 host=example.test", "loop")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.loops.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !c.closed() {
		t.Fatal("an idle loop connection stayed open after Shutdown")
	}
	// After Shutdown nothing is taken over: net/http serves.
	c = dial(t, s.addr)
	c.send(post("fast 3"))
	c.expect(200, "sdk POST fast 3", "")
}

func TestShutdownKeepsToItsDeadline(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	c.send(post("fast slower"))
	time.Sleep(50 * time.Millisecond) // the loop is in the handler
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.loops.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("shutdown past its deadline: %v", err)
	}
	if waited := time.Since(start); waited > 1500*time.Millisecond { // the handler takes 3 s
		t.Fatalf("shutdown waited %v for a handler after its deadline", waited)
	}
}

func TestShutdownFinishesTheRequestInFlight(t *testing.T) {
	s := newServer(t, fastconn.Options{})
	c := takenOver(t, s)
	c.send(post("fast slow"))
	time.Sleep(50 * time.Millisecond) // the loop is in the handler
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.loops.Shutdown(ctx) }()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("the request in flight was cut off: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "fast slow host=example.test" || !resp.Close {
		t.Fatalf("got %q, Connection: close %v", body, resp.Close)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open after its last answer")
	}
}
