package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// conn is one connection to an origin, used by one exchange at a time.
type conn struct {
	t        *Transport
	key      string
	nc       net.Conn // TCP, or TLS over it
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
	// stale is set when the server had closed the connection before the
	// last request reached it: the request may be sent again elsewhere.
	stale bool
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
	stop := context.AfterFunc(ctx, c.interrupt)
	fail := func(err error) (*http.Response, error) {
		if !stop() {
			err = cause(ctx)
		}
		c.nc.Close()
		return nil, err
	}
	if err := req.Write(c.bw); err != nil {
		c.stale = brokenPipe(err)
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		c.stale = brokenPipe(err)
		return fail(err)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return fail(err)
	}
	if tc, ok := c.nc.(*tls.Conn); ok {
		state := tc.ConnectionState()
		resp.TLS = &state
	}
	reuse := !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		c.finish(stop, reuse)
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, ctx: ctx, stop: stop, reusable: reuse}
	return resp, nil
}

// finish ends an exchange: stop detaches the request's context, and the
// connection goes back to the transport when reuse is set and the context
// did not end first (its interrupt may have set a deadline on c).
func (c *conn) finish(stop func() bool, reuse bool) {
	if stop() && reuse {
		c.t.put(c)
		return
	}
	c.nc.Close()
}

// readResponse reads the final response to req, past any informational
// ones.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	if _, err := c.br.Peek(1); err != nil {
		c.stale = errors.Is(err, io.EOF) || brokenPipe(err)
		return nil, err
	}
	for {
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
}

// interrupt ends the I/O in progress on c: its request's context ended.
func (c *conn) interrupt() { _ = c.nc.SetDeadline(time.Unix(1, 0)) }

// alive reports whether an idle connection is still open: nothing has
// come on it, not even the server's close. It reads the TCP connection
// with a deadline already passed, so it waits for nothing.
func (c *conn) alive() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	raw := c.nc
	if tc, ok := raw.(interface{ NetConn() net.Conn }); ok {
		raw = tc.NetConn() // beneath TLS: a byte read here is never used
	}
	var one [1]byte
	_ = raw.SetReadDeadline(time.Now())
	n, err := raw.Read(one[:])
	_ = raw.SetReadDeadline(time.Time{})
	var ne net.Error
	return n == 0 && errors.As(err, &ne) && ne.Timeout()
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

	mu   sync.Mutex
	done bool
	err  error // what Read returns once done
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
		if b.ctx.Err() != nil {
			err = cause(b.ctx)
		}
		b.end(false, err)
	}
	return n, err
}

// Close ends the body; one not read to its end closes the connection,
// which also ends a Read blocked on it.
func (b *body) Close() error {
	b.end(false, errors.New("h1: read on a closed response body"))
	return nil
}

// end finishes the exchange once; later reads return err.
func (b *body) end(clean bool, err error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done, b.err = true, err
	b.mu.Unlock()
	b.c.finish(b.stop, clean && b.reusable)
}
