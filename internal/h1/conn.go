package h1

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// conn is one connection to an origin, used by one exchange at a time.
type conn struct {
	t   *Transport
	key originKey
	nc  net.Conn        // TCP, or TLS over it
	raw syscall.RawConn // the TCP connection's descriptor; nil when it has none
	// What idle's peek at raw found.
	peekFn    func(fd uintptr)
	peekBuf   [1]byte
	peekErrno syscall.Errno
	peeked    bool
	br        *bufio.Reader
	bw        *bufio.Writer
	out       *countingWriter // beneath bw: what reached the socket
	lastUsed  time.Time
	// stale is set when the server closed the connection before answering
	// the last request, and that request may be sent again elsewhere:
	// none of it reached the server, or it is replayable.
	stale bool
}

// countingWriter counts the bytes its connection took.
type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// exchange writes req and reads the head of its response. The body is
// read by the caller through the response; the connection goes back to
// the transport when the body has been read to its end, and is closed
// when the body is closed earlier, the server asked for it, or the
// request's context ends before the exchange does.
func (c *conn) exchange(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ctx.Err() != nil {
		c.nc.Close()
		closeBody(req)
		return nil, cause(ctx)
	}
	c.stale = false
	c.out.n = 0
	stop := context.AfterFunc(ctx, c.interrupt)
	fail := func(err error) (*http.Response, error) {
		if !stop() {
			err = cause(ctx)
		}
		c.nc.Close()
		return nil, err
	}
	gz := c.t.askGzip(req)
	if err := writeRequest(c.bw, req, gz); err != nil {
		c.stale = brokenPipe(err) && c.out.n == 0
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		c.stale = brokenPipe(err) && c.out.n == 0
		return fail(err)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return fail(err)
	}
	resp.Request = req
	if tc, ok := c.nc.(*tls.Conn); ok {
		state := tc.ConnectionState()
		resp.TLS = &state
	}
	reuse := !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		c.finish(stop(), reuse)
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, ctx: ctx, stop: stop, reusable: reuse}
	if gz && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		// As net/http: the caller reads the answer as sent before it was
		// compressed, and is told so.
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength, resp.Uncompressed = -1, true
		resp.Body = &gunzip{body: resp.Body}
	}
	return resp, nil
}

// gunzip decompresses a gzip-encoded body as it is read. The compressed
// body is read to its end (gzip reads past its last member), which hands
// the connection back.
type gunzip struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		g.zr, g.err = gzip.NewReader(g.body)
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.zr.Read(p)
}

func (g *gunzip) Close() error { return g.body.Close() }

// finish ends an exchange: the connection goes back to the transport when
// reuse is set, the request's context did not end first (detached is
// false when its interrupt closed c), and nothing more has come (a server
// that sends more than it was asked for is out of step).
func (c *conn) finish(detached, reuse bool) {
	if detached && reuse && c.br.Buffered() == 0 {
		c.t.put(c)
		return
	}
	c.nc.Close()
}

// maxInformational bounds the 1xx responses read before the final one,
// as net/http does.
const maxInformational = 5

// readResponse reads the final response to req, past any informational
// ones.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	if _, err := c.br.Peek(1); err != nil {
		// Closed before answering: the request may go again only when
		// none of it arrived or running it twice is harmless.
		c.stale = (errors.Is(err, io.EOF) || brokenPipe(err)) && (c.out.n == 0 || replayable(req))
		return nil, err
	}
	for range maxInformational + 1 {
		if resp, ok := readPlainResponse(c.br, req); ok {
			return resp, nil
		}
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("h1: the server switched protocols, which was not asked for")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue // 100 Continue, 103 Early Hints: the response follows
		}
		return resp, nil
	}
	return nil, errors.New("h1: the server sent too many informational (1xx) responses")
}

// interrupt ends the I/O in progress on c: its request's context ended.
// The connection is never used again.
func (c *conn) interrupt() { c.nc.Close() }

// idle reports whether an idle connection can carry a request: it is
// open and nothing has come on it. A server's close, or bytes nobody
// asked for (a server out of step), show as something to read; the check
// peeks at the TCP socket without waiting or taking anything from it.
func (c *conn) idle() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	if c.raw == nil {
		return true
	}
	c.peeked = false
	if err := c.raw.Control(c.peekFn); err != nil || !c.peeked {
		return false
	}
	// Nothing to read, not even an end: alive. A byte, an end (0 bytes,
	// no error) or an error (a reset): not.
	return c.peekErrno == syscall.EAGAIN || c.peekErrno == syscall.EWOULDBLOCK
}

// peek looks at the socket fd for a byte without waiting or taking it.
// It is c.peekFn, made once per connection: a closure made on each call
// would cost allocations on every reuse, and so would syscall.Recvfrom's
// address buffer, which a connected socket does not fill.
func (c *conn) peek(fd uintptr) {
	_, _, c.peekErrno = syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.peekBuf[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	c.peeked = true
}

// replayable reports whether req may be sent twice, as net/http decides:
// its method is safe, or it carries an idempotency key.
func replayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// brokenPipe reports whether err says the peer had closed the connection.
func brokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// cause is why ctx ended.
func cause(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return errCanceled
}

// body is a response body on a kept-alive connection.
type body struct {
	rc       io.ReadCloser // net/http's reader of the body; never closed, as it would drain
	c        *conn
	ctx      context.Context // the request's
	stop     func() bool     // detaches ctx from c
	reusable bool            // the server keeps the connection open

	mu       sync.Mutex
	done     bool
	detached bool  // stop has run and found ctx alive; see Detach
	err      error // what Read returns once done
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.done {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.end(true, io.EOF)
	case err != nil:
		b.mu.Lock()
		detached := b.detached
		b.mu.Unlock()
		if !detached && b.ctx.Err() != nil {
			err = cause(b.ctx)
		}
		b.end(false, err)
	}
	return n, err
}

// Close ends the body; one not read to its end closes the connection,
// which also ends a Read blocked on it.
func (b *body) Close() error {
	b.end(false, http.ErrBodyReadAfterClose)
	return nil
}

// detach unties b from its request's context; see [Detach].
func (b *body) detach() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return false
	}
	if !b.detached {
		// false: the context has ended, and its interrupt is closing c.
		b.detached = b.stop()
	}
	return b.detached
}

// end finishes the exchange once; later reads return err.
func (b *body) end(clean bool, err error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done, b.err = true, err
	detached := b.detached
	b.mu.Unlock()
	b.c.finish(detached || b.stop(), clean && b.reusable)
}

// Detach unties a response body of this transport from its request's
// context, so that the body can be read to its end after the context has
// ended and its connection still serve the next request. Reading it then
// waits as long as the server takes: the caller bounds it, by closing the
// body when it has waited enough, which closes the connection too. Detach
// reports false for a body that has ended, whose context ended first, or
// that is not one of this transport's (net/http's own transport, which
// this one hands some requests to, has no such thing).
func Detach(rc io.ReadCloser) bool {
	switch b := rc.(type) {
	case *body:
		return b.detach()
	case *gunzip:
		return Detach(b.body)
	}
	return false
}
