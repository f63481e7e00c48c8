// Package fastconn serves the requests a handler answers whole and at
// once, the agents' tools/call on /mcp, on kept-alive connections it takes
// over from net/http, and gives a connection back to net/http at the first
// request that handler leaves alone.
//
// net/http's server costs about 10 µs of CPU per request more than reading
// the request and writing the answer: a goroutine and a read deadline
// around every handler (to notice a client that goes away), a context, a
// response writer, and its chunking and flushing machinery. An /mcp call
// needs none of it: its answer is complete before the first byte is
// written, and it runs to its end when the client leaves. So when the fast
// handler has answered a request through net/http, the connection is
// hijacked and served by a plain loop: parse the head (parseHead takes
// only the plainest, and builds the request net/http would), read the
// body, run the handler, write the answer in one write.
// Anything the loop does not take (another path or method, a body of
// unknown or large size, Expect, Connection: close, HTTP/1.0, anything
// net/http would refuse, and every request the handler leaves to the SDK)
// goes back to net/http, which reads it again from the bytes the loop kept.
package fastconn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers a request whole, into w, and reports true; or it writes
// nothing and reports false, and the request goes to net/http as it came.
// w buffers: it has no Flush, and nothing reaches the client before the
// handler returns.
type Handler func(w http.ResponseWriter, r *http.Request) bool

// Options configure a Server.
type Options struct {
	// Path is the one path the loop serves (POST only), e.g. "/mcp".
	Path string
	// Serve is the handler.
	Serve Handler
	// MaxBody is the largest body the loop reads; a larger one goes to
	// net/http. Default 1 MiB.
	MaxBody int64
	// IdleTimeout bounds the wait for the next request, ReadHeaderTimeout
	// the read of a head once its first byte has come, and ReadTimeout the
	// read of a whole request; as http.Server's. Defaults 2 minutes, 10
	// seconds and 1 minute.
	IdleTimeout, ReadHeaderTimeout, ReadTimeout time.Duration
	// Log is called for every request the loop or TakeOver answers.
	Log func(r *http.Request, status int, start time.Time)
	// Logger gets panics in the handler.
	Logger *slog.Logger
}

// maxHead bounds a request head the loop parses (an agent's is about 500
// bytes); a larger one goes to net/http, which applies its own limit. It
// is also the size of a connection's read buffer, as net/http's.
const maxHead = 4 << 10

// Server runs the loops. Its Listener hands the connections they give
// back to an http.Server, which must serve it.
type Server struct {
	opts Options
	log  *slog.Logger
	ln   *listener

	mu      sync.Mutex
	conns   map[*loopConn]struct{}
	closing bool
	loops   sync.WaitGroup

	takenOver, served, givenBack atomic.Int64
}

// Stats count what the loops have done.
type Stats struct {
	TakenOver int64 // connections hijacked from net/http
	Served    int64 // requests the loops answered
	GivenBack int64 // connections handed back to net/http
}

// Stats are the counts so far.
func (s *Server) Stats() Stats {
	return Stats{TakenOver: s.takenOver.Load(), Served: s.served.Load(), GivenBack: s.givenBack.Load()}
}

// New returns a Server; serve its Listener with the http.Server whose
// handler calls TakeOver.
func New(o Options) *Server {
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: o, log: o.Logger, ln: newListener(), conns: map[*loopConn]struct{}{}}
}

// Listener is where the connections the loops give back come from.
func (s *Server) Listener() net.Listener { return s.ln }

// TakeOver is called by net/http's handler for the loop's path. When the
// request is one the loop would take and the handler answers it, the
// answer is written on the hijacked connection, which the loop serves from
// then on, and TakeOver reports true. Otherwise nothing has been written
// and the request is as it came.
func (s *Server) TakeOver(w http.ResponseWriter, r *http.Request) bool {
	if !s.takes(r) || s.isClosing() {
		return false // closing: net/http answers, and closes the connection
	}
	start := time.Now()
	resp := newResponse()
	if !s.opts.Serve(resp, r) {
		return false
	}
	defer s.logRequest(r, resp.status, start)
	if !s.hijack(w, r, resp) {
		resp.copyTo(w) // the connection stays with net/http
	}
	return true
}

// hijack takes r's connection from net/http, writes resp on it and starts
// its loop; false when the connection stays with net/http.
func (s *Server) hijack(w http.ResponseWriter, r *http.Request, resp *response) bool {
	// An answer given before the body was read (a refusal) leaves the body
	// on the connection, where the loop would take it for the next request.
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return false
	}
	// Shutdown sets closing under mu before it waits for the loops, so a
	// loop is either counted before it waits or not started.
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	s.loops.Add(1)
	s.mu.Unlock()
	nc, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.loops.Done()
		return false
	}
	// What the client sent after this request (a pipelined request) is in
	// net/http's reader; the loop reads it first.
	pending, _ := rw.Reader.Peek(rw.Reader.Buffered())
	c := s.track(nc, bytes.Clone(pending))
	s.takenOver.Add(1)
	go func() {
		defer s.loops.Done()
		defer s.untrack(c)
		if c.write(resp, s.isClosing()) {
			s.serve(c)
		}
	}()
	return true
}

// takes reports whether the loop would take r: a POST to its path over
// HTTP/1.1, kept alive, with a body of known size within the limit and
// nothing to negotiate before it (Expect).
func (s *Server) takes(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == s.opts.Path && r.ProtoMajor == 1 && r.ProtoMinor == 1 &&
		!r.Close && len(r.TransferEncoding) == 0 && r.ContentLength >= 0 && r.ContentLength <= s.opts.MaxBody &&
		r.Header.Get("Expect") == ""
}

// Shutdown stops taking connections, closes the idle ones, and waits for
// the loops to finish the requests they are serving, or for ctx to end, when
// it closes the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		if c.idle {
			_ = c.nc.SetReadDeadline(time.Unix(1, 0)) // wakes its wait for a request
		}
	}
	s.mu.Unlock()
	s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.loops.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	// Out of time: the connections close, and the calls still running end
	// when the caller closes the gateway, as under net/http's Shutdown.
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	return ctx.Err()
}

// Close closes every connection at once.
func (s *Server) Close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Shutdown(ctx)
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// loopConn is one connection a loop serves.
type loopConn struct {
	nc net.Conn
	// remoteAddr is nc's, as every request's RemoteAddr.
	remoteAddr string
	br         *bufio.Reader
	raw        []byte // the head of the request being served, as it came
	body       []byte // its body
	out        []byte // the answer being written
	target     target // the last request's
	idle       bool   // waiting for a request; guarded by Server.mu
}

func (s *Server) track(nc net.Conn, pending []byte) *loopConn {
	c := &loopConn{nc: nc, remoteAddr: nc.RemoteAddr().String()}
	var src io.Reader = nc
	if len(pending) > 0 {
		src = io.MultiReader(bytes.NewReader(pending), nc)
	}
	c.br = bufio.NewReaderSize(src, maxHead)
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c
}

func (s *Server) untrack(c *loopConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// setIdle marks c waiting for a request, or not; false when the server is
// closing, and c must close.
func (s *Server) setIdle(c *loopConn, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.idle = idle
	return !s.closing
}

// serve is the loop: it serves c's requests until c closes, fails, or a
// request goes back to net/http.
func (s *Server) serve(c *loopConn) {
	for {
		// The deadline is set before c is marked idle, so a Shutdown that
		// sees it idle wakes it.
		_ = c.nc.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
		if !s.setIdle(c, true) {
			c.nc.Close()
			return
		}
		err := skipBlankLines(c.br)
		if !s.setIdle(c, false) || err != nil {
			c.nc.Close()
			return
		}
		start := time.Now()
		r, ok, err := s.readRequest(c, start)
		if err != nil {
			c.nc.Close()
			return
		}
		if !ok {
			s.giveBack(c)
			return
		}
		resp := newResponse()
		if !s.run(resp, r) {
			s.giveBack(c)
			return
		}
		s.served.Add(1)
		s.logRequest(r, resp.status, start)
		if !c.write(resp, s.isClosing()) || resp.close {
			c.nc.Close()
			return
		}
	}
}

// skipBlankLines waits for the next request's first byte, dropping up to
// four CR or LF bytes before it, as net/http does after a POST (and every
// request the loop serves is one): some clients end a body with a stray
// CRLF. Left in place, they would make the connection's next request one
// net/http refuses, once the loop gave it back.
func skipBlankLines(br *bufio.Reader) error {
	for range 4 {
		b, err := br.Peek(1)
		if err != nil {
			return err
		}
		if b[0] != '\r' && b[0] != '\n' {
			return nil
		}
		_, _ = br.Discard(1)
	}
	_, err := br.Peek(1)
	return err
}

// readRequest reads the next request, whose first byte came at start. ok
// is false, with no error, for a request the loop does not take; what was
// read of it is in c.raw and c.body, to give back. An error is a
// connection to close.
func (s *Server) readRequest(c *loopConn, start time.Time) (r *http.Request, ok bool, err error) {
	c.raw, c.body = c.raw[:0], nil
	n, err := headLength(c.br, func() { _ = c.nc.SetReadDeadline(start.Add(s.opts.ReadHeaderTimeout)) })
	if err != nil || n == 0 {
		return nil, false, err // n 0: not for the loop, nothing read
	}
	head, _ := c.br.Peek(n)
	c.raw = append(c.raw, head...)
	_, _ = c.br.Discard(n)
	r, ok = parseHead(c.raw, s.opts.MaxBody, &c.target)
	if !ok || r.URL.Path != s.opts.Path {
		return nil, false, nil
	}
	body, err := c.readBody(r.ContentLength, func() { _ = c.nc.SetReadDeadline(start.Add(s.opts.ReadTimeout)) })
	if err != nil {
		return nil, false, err
	}
	c.body = body
	r.Body = newBody(body)
	r.RemoteAddr = c.remoteAddr
	if tc, ok := c.nc.(*tls.Conn); ok {
		state := tc.ConnectionState()
		r.TLS = &state
	}
	return r, true, nil
}

// readBody reads a body of n bytes into a slice of its own: the handler
// may keep slices of it (the audit row's arguments are written later). A
// body already buffered whole is copied out at its size; one still
// arriving grows as it comes, rather than sized by what the client
// announced; wait is called before the first read that may block.
func (c *loopConn) readBody(n int64, wait func()) ([]byte, error) {
	if int64(c.br.Buffered()) >= n {
		body := make([]byte, n)
		_, _ = io.ReadFull(c.br, body)
		return body, nil
	}
	wait()
	body, err := io.ReadAll(io.LimitReader(c.br, n))
	if err != nil || int64(len(body)) != n {
		return nil, errors.New("fastconn: the body ended early")
	}
	return body, nil
}

// Body is the body of a request the loop serves, read whole before the
// handler runs. Bytes returns it without a copy, for a handler that wants
// it whole; it is the request's own and stays valid after the answer.
type Body struct {
	bytes.Reader
	whole []byte
}

func newBody(b []byte) *Body {
	body := &Body{whole: b}
	body.Reset(b)
	return body
}

// Bytes is the whole body, whatever has been read of it.
func (b *Body) Bytes() []byte { return b.whole }

// Close does nothing: the body is in memory.
func (*Body) Close() error { return nil }

// headLength is the length of the request head at the start of br, up to
// and including its blank line; 0 when the loop leaves it to net/http: a
// head longer than maxHead, or with a line ended by a bare LF, which
// net/http accepts and the loop does not parse. wait is called once,
// before the first read that may block: a head that came whole in the
// first read (the usual case) needs no read deadline of its own.
func headLength(br *bufio.Reader, wait func()) (int, error) {
	for waited := false; ; {
		buf, err := br.Peek(br.Buffered())
		for i := 0; ; {
			j := bytes.IndexByte(buf[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			switch {
			case i < 2 || buf[i-2] != '\r':
				return 0, nil // a bare LF
			case bytes.HasPrefix(buf[i:], []byte("\r\n")):
				return i + 2, nil // the blank line
			case bytes.HasPrefix(buf[i:], []byte("\n")):
				return 0, nil
			}
		}
		if len(buf) >= maxHead {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if !waited {
			wait()
			waited = true
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return 0, err
		}
	}
}

// run calls the handler; a panic is logged and answered 500, and the
// connection closes after the answer.
func (s *Server) run(resp *response, r *http.Request) (served bool) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("mcp: panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp.reset()
			resp.Header().Set("Content-Type", "text/plain; charset=utf-8")
			resp.WriteHeader(http.StatusInternalServerError)
			_, _ = resp.Write([]byte("toolgate failed to serve the request\n"))
			resp.close, served = true, true
		}
	}()
	return s.opts.Serve(resp, r)
}

// giveBack hands c to net/http with the request it did not take unread.
func (s *Server) giveBack(c *loopConn) {
	buffered, _ := c.br.Peek(c.br.Buffered())
	pending := slices.Concat(c.raw, c.body, buffered)
	_ = c.nc.SetReadDeadline(time.Time{})
	s.givenBack.Add(1)
	if !s.ln.give(&replayConn{Conn: c.nc, pending: pending}) {
		c.nc.Close()
	}
}

func (s *Server) logRequest(r *http.Request, status int, start time.Time) {
	if s.opts.Log != nil {
		s.opts.Log(r, status, start)
	}
}

// write sends resp; false when the connection failed. closing adds
// Connection: close, after which c is closed.
func (c *loopConn) write(resp *response, closing bool) bool {
	if closing {
		resp.close = true
	}
	c.out = resp.appendTo(c.out[:0])
	_, err := c.nc.Write(c.out)
	if cap(c.out) > 64<<10 {
		c.out = nil // one large answer does not stay with the connection
	}
	return err == nil
}

// replayConn is a connection given back to net/http: the bytes the loop
// read of it come first.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// listener is where given-back connections wait for net/http's Accept.
type listener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newListener() *listener {
	return &listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *listener) give(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *listener) Addr() net.Addr { return handoffAddr{} }

type handoffAddr struct{}

func (handoffAddr) Network() string { return "fastconn" }
func (handoffAddr) String() string  { return "given back by the fast loop" }
