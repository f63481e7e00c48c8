package h1_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/h1"
)

// server is a real net/http server that counts the connections clients
// open to it and the requests it serves.
type server struct {
	*httptest.Server
	conns    atomic.Int32
	requests atomic.Int32
	closed   chan struct{} // a connection closed
}

func newServer(t *testing.T, tls bool, h http.HandlerFunc) *server {
	s := &server{closed: make(chan struct{}, 100)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
		case http.StateClosed:
			select {
			case s.closed <- struct{}{}:
			default:
			}
		}
	}
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// client is an HTTP client on an h1 transport that trusts s.
func (s *server) client(t *testing.T) (*http.Client, *h1.Transport) {
	base := &http.Transport{MaxIdleConnsPerHost: 8}
	if s.TLS != nil {
		base.TLSClientConfig = s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	tr := h1.New(base)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, tr
}

// echo answers a POST with its body: JSON with a length, or as a
// flushed event stream (chunked).
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Query().Get("stream") != "" {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", body)
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "data: end\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func post(t *testing.T, ctx context.Context, c *http.Client, url, body string) (string, *http.Response) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), resp
}

// TestReuse sends many requests one after another, with answers of a
// known length and chunked streams, over HTTP and HTTPS: one connection
// carries them all.
func TestReuse(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[tls], func(t *testing.T) {
			s := newServer(t, tls, echo)
			c, _ := s.client(t)
			for i := range 50 {
				msg := fmt.Sprintf(`{"n":%d}`, i)
				if got, _ := post(t, t.Context(), c, s.URL, msg); got != msg {
					t.Fatalf("JSON %d: %q", i, got)
				}
				got, resp := post(t, t.Context(), c, s.URL+"?stream=1", msg)
				if got != "data: "+msg+"\n\ndata: end\n\n" {
					t.Fatalf("stream %d: %q", i, got)
				}
				if (resp.TLS != nil) != tls {
					t.Fatalf("TLS state %v", resp.TLS)
				}
			}
			if n := s.conns.Load(); n != 1 {
				t.Fatalf("%d connections for 100 requests in a row, want 1", n)
			}
		})
	}
}

// TestConcurrent runs 16 clients at once: every answer is its own, and
// the connections are kept rather than opened per request.
func TestConcurrent(t *testing.T) {
	s := newServer(t, false, echo)
	c, _ := s.client(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				msg := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(msg))
				resp, err := c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != msg {
					errs <- fmt.Errorf("got %q, %v; want %q", got, err, msg)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// 16 at most at once; the idle pool keeps 8, so a few more may be
	// opened as callers interleave, never one per request.
	if n := s.conns.Load(); n > 64 {
		t.Fatalf("%d connections for 1,600 requests", n)
	}
}

// TestEarlyClose closes a body before its end: that connection is not
// used again (its next bytes would be the rest of the body), and the next
// request goes on a new one.
func TestEarlyClose(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 64<<10))
	})
	c, _ := s.client(t)
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(buf); err == nil {
		t.Fatal("read after close succeeded")
	}
	resp, err = c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(got) != 64<<10 || s.conns.Load() != 2 {
		t.Fatalf("%d bytes on %d connections", len(got), s.conns.Load())
	}
}

// TestServerClosedIdle has the server drop the kept-alive connection
// between two requests: the second goes on a new connection, and reaches
// the server exactly once.
func TestServerClosedIdle(t *testing.T) {
	s := newServer(t, false, echo)
	c, _ := s.client(t)
	post(t, t.Context(), c, s.URL, "1")
	s.CloseClientConnections()
	if got, _ := post(t, t.Context(), c, s.URL, "2"); got != "2" {
		t.Fatalf("got %q", got)
	}
	if r, n := s.requests.Load(), s.conns.Load(); r != 2 || n != 2 {
		t.Fatalf("%d requests on %d connections, want 2 on 2", r, n)
	}
}

// TestCloseIdleConnectionsTo closes one origin's idle connections and
// keeps another's.
func TestCloseIdleConnectionsTo(t *testing.T) {
	a, b := newServer(t, false, echo), newServer(t, false, echo)
	tr := h1.New(&http.Transport{})
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	post(t, t.Context(), c, a.URL, "1")
	post(t, t.Context(), c, b.URL, "1")
	u, err := url.Parse(a.URL + "/mcp?x=1")
	if err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnectionsTo(u)
	select {
	case <-a.closed:
	case <-time.After(20 * time.Second): // a guard against hanging, not a measure
		t.Fatal("the origin's idle connection stayed open")
	}
	post(t, t.Context(), c, a.URL, "2")
	post(t, t.Context(), c, b.URL, "2")
	if n := a.conns.Load(); n != 2 {
		t.Errorf("the closed origin: %d connections, want 2 (a new one after the close)", n)
	}
	if n := b.conns.Load(); n != 1 {
		t.Errorf("the other origin: %d connections, want its first one kept", n)
	}
}

// TestConnectionClose honours a server's Connection: close.
func TestConnectionClose(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	c, _ := s.client(t)
	for range 3 {
		if got, resp := post(t, t.Context(), c, s.URL, ""); got != "bye" || !resp.Close {
			t.Fatalf("got %q, close %v", got, resp.Close)
		}
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// TestNoBodyAndInformational covers answers without a body (HEAD, 204)
// and a 103 before the final answer; the connection carries on.
func TestNoBodyAndInformational(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, "final")
		default:
			_, _ = io.WriteString(w, "page")
		}
	})
	c, _ := s.client(t)
	resp, err := c.Head(s.URL)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatal(resp, err)
	}
	resp.Body.Close()
	if got, resp := post(t, t.Context(), c, s.URL+"/empty", "x"); got != "" || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("204: %q %d", got, resp.StatusCode)
	}
	if got, resp := post(t, t.Context(), c, s.URL+"/hints", "x"); got != "final" || resp.StatusCode != http.StatusOK {
		t.Fatalf("103: %q %d", got, resp.StatusCode)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestCancel ends a request's context while the server holds the answer:
// before its head, and in the middle of its body. The caller gets the
// context's error at once and the server sees the connection go.
func TestCancel(t *testing.T) {
	gone := make(chan struct{}, 2)
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // then net/http watches for the client going
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		if r.URL.Query().Get("head") != "" {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		gone <- struct{}{}
	})
	c, _ := s.client(t)

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader("x"))
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("before the head: %v", err)
	}
	<-gone

	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"?head=1", strings.NewReader("x"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "partial" {
		t.Fatalf("%q %v", buf, err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("in the body: %v", err)
	}
	resp.Body.Close()
	<-gone
	if got, _ := post(t, t.Context(), c, s.URL+"/ok", ""); got != "ok" {
		t.Fatalf("after: %q", got)
	}
}

// TestDetach reads a stream's end after its request's context has ended:
// a detached body is read whole and its connection carries the next
// request; one that is not detached fails as the context ends. A body that
// has ended, or whose context ended first, cannot be detached.
func TestDetach(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			_, _ = io.WriteString(w, "data: end\n\n")
		case <-r.Context().Done():
		}
	})
	c, _ := s.client(t)
	stream := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader("x"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("data: first\n\n"))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		return resp, cancel
	}

	resp, cancel := stream()
	if !h1.Detach(resp.Body) {
		t.Fatal("a body being read could not be detached")
	}
	cancel()
	release <- struct{}{}
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "data: end\n\n" {
		t.Fatalf("the detached body's end: %q %v", rest, err)
	}
	if h1.Detach(resp.Body) {
		t.Fatal("a body read to its end was detached")
	}
	if got, _ := post(t, t.Context(), c, s.URL+"/ok", ""); got != "ok" {
		t.Fatalf("after: %q", got)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want the detached body's one kept", n)
	}

	resp, cancel = stream()
	cancel()
	if h1.Detach(resp.Body) {
		t.Fatal("a body whose context ended was detached")
	}
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("a body not detached, its context ended: %v", err)
	}
	resp.Body.Close()
	if h1.Detach(io.NopCloser(strings.NewReader(""))) {
		t.Fatal("a body of another transport was detached")
	}
}

// TestCloseUnblocksRead closes a body from another goroutine while a read
// waits on it, as the MCP SDK does to end a stream.
func TestCloseUnblocksRead(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c, _ := s.client(t)
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		read <- err
	}()
	resp.Body.Close()
	if err := <-read; err == nil {
		t.Fatal("a read on a closed body ended cleanly")
	}
}

// TestFallback sends what the transport leaves to net/http: a body of
// unknown length. It arrives whole.
func TestFallback(t *testing.T) {
	s := newServer(t, false, echo)
	c, _ := s.client(t)
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "streamed ")
		_, _ = io.WriteString(pw, "body")
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, s.URL, pr)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "streamed body" || len(resp.TransferEncoding) != 0 && resp.ProtoMajor != 1 {
		t.Fatalf("got %q", got)
	}
}

// TestRedirect has http.Client follow a 307 for a POST through the
// transport: the body is sent again to the new address.
func TestRedirect(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
			return
		}
		echo(w, r)
	})
	c, _ := s.client(t)
	if got, resp := post(t, t.Context(), c, s.URL+"/old", "moved"); got != "moved" || resp.Request.URL.Path != "/new" {
		t.Fatalf("got %q at %s", got, resp.Request.URL)
	}
}

// TestDialRefused names the failure of a connection nobody accepts.
func TestDialRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := &http.Client{Transport: h1.New(&http.Transport{})}
	_, err = c.Get("http://" + addr + "/")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("err = %v", err)
	}
}

// TestIdleExpiry closes a connection left idle past the base's
// IdleConnTimeout, without another request to notice it.
func TestIdleExpiry(t *testing.T) {
	s := newServer(t, false, echo)
	tr := h1.New(&http.Transport{IdleConnTimeout: 20 * time.Millisecond})
	t.Cleanup(tr.CloseIdleConnections)
	post(t, t.Context(), &http.Client{Transport: tr}, s.URL, "x")
	select {
	case <-s.closed:
	case <-time.After(20 * time.Second): // a guard against hanging, not a measure
		t.Fatal("the idle connection was never closed")
	}
}

// TestNotReused covers what must not keep a connection: a request that
// asks to close it, and large or streamed uploads, which net/http sends
// (it reads an early answer while it writes). Each arrives whole.
func TestNotReused(t *testing.T) {
	s := newServer(t, false, echo)
	c, _ := s.client(t)
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader("bye"))
		req.Close = true
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "bye" {
			t.Fatalf("got %q", got)
		}
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d connections for two requests that close theirs, want 2", n)
	}
	big := strings.Repeat("b", 200<<10)
	if got, _ := post(t, t.Context(), c, s.URL, big); got != big {
		t.Fatalf("a 200 KiB body came back as %d bytes", len(got))
	}
}

// rawServer runs answer for every request read on every connection it
// accepts: a server written by hand, to misbehave in ways net/http's
// server does not.
func rawServer(t *testing.T, answer func(c net.Conn, conn, i int, req *http.Request) bool) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if !answer(c, n, i, req) {
						return
					}
				}
			})
		}
	})
	return "http://" + l.Addr().String()
}

func reply(c net.Conn, body string) {
	_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// TestOutOfStep has a server send a response nobody asked for after its
// first answer, in the same write or a moment later. Every caller still
// gets the answer to its own request: a connection with unread bytes is
// never used again.
func TestOutOfStep(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "same write", true: "later"}[late], func(t *testing.T) {
			sent := make(chan struct{})
			url := rawServer(t, func(c net.Conn, conn, i int, req *http.Request) bool {
				name := req.URL.Query().Get("who")
				if conn == 0 && i == 0 {
					extra := "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nfor nobody!"
					if late {
						reply(c, "for "+name)
						_, _ = io.WriteString(c, extra)
					} else {
						_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nfor %s%s", len(name)+4, name, extra)
					}
					close(sent) // on loopback, written is delivered
					return true
				}
				reply(c, "for "+name)
				return true
			})
			c := &http.Client{Transport: h1.New(&http.Transport{})}
			t.Cleanup(c.CloseIdleConnections)
			for i, who := range []string{"alice", "bob", "carol"} {
				if i == 1 {
					<-sent
				}
				got, _ := post(t, t.Context(), c, url+"?who="+who, "x")
				if got != "for "+who {
					t.Fatalf("%s got %q", who, got)
				}
			}
		})
	}
}

// TestNoReplay has a server read a POST and then drop the connection
// without answering, as a crashing handler would: the caller gets an
// error and the POST is not sent again, as with net/http. A GET, which is
// safe to repeat, is.
func TestNoReplay(t *testing.T) {
	var seen sync.Map
	url := rawServer(t, func(c net.Conn, _, i int, req *http.Request) bool {
		n, _ := seen.LoadOrStore(req.Method+" "+req.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if req.URL.Path == "/crash" {
			return false
		}
		reply(c, "ok")
		return true
	})
	c := &http.Client{Transport: h1.New(&http.Transport{})}
	t.Cleanup(c.CloseIdleConnections)
	count := func(key string) int32 {
		n, ok := seen.Load(key)
		if !ok {
			return 0
		}
		return n.(*atomic.Int32).Load()
	}
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		post(t, t.Context(), c, url+"/warm", "x") // a kept-alive connection to reuse
		req, _ := http.NewRequest(method, url+"/crash", strings.NewReader("x"))
		if method == http.MethodGet {
			req.Body, req.GetBody, req.ContentLength = nil, nil, 0
		}
		if _, err := c.Do(req); err == nil {
			t.Fatalf("%s: no error from a server that crashed", method)
		}
	}
	if n := count("POST /crash"); n != 1 {
		t.Fatalf("the POST reached the server %d times, want 1", n)
	}
	if n := count("GET /crash"); n != 2 {
		t.Fatalf("the GET reached the server %d times, want 2 (sent again once)", n)
	}
}

// TestGzip asks for a compressed answer and undoes it, as net/http does,
// unless the caller chose an encoding itself; the connection carries on
// either way.
func TestGzip(t *testing.T) {
	const text = "a long answer, a long answer, a long answer"
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			_, _ = io.WriteString(w, "plain: "+r.Header.Get("Accept-Encoding"))
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, text)
		_ = zw.Close()
	})
	c, _ := s.client(t)
	for range 2 {
		got, resp := post(t, t.Context(), c, s.URL, "x")
		if got != text || !resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" || resp.ContentLength != -1 {
			t.Fatalf("got %q, uncompressed %v, header %v", got, resp.Uncompressed, resp.Header)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "plain: identity" || resp.Uncompressed {
		t.Fatalf("got %q", got)
	}
	if req.Header.Get("Accept-Encoding") != "identity" || len(req.Header) != 1 {
		t.Fatalf("the caller's request was changed: %v", req.Header)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}
