// Package h1 is an HTTP/1.1 client transport that runs each exchange on
// the caller's goroutine.
//
// net/http's Transport gives every connection a read loop and a write loop
// and hands each request and response between them and the caller over
// channels. For a gateway whose calls are one small POST and one small
// answer on a kept-alive loopback or LAN connection, those hand-offs cost
// more CPU than the request itself: about 30 µs a call on the benchmark
// machine, against 100 µs for the whole call. This transport writes the
// request and reads the answer where the caller runs, with the standard
// library's own request writer and response parser, and keeps idle
// connections for the next call.
//
// It takes what it can do exactly as net/http would (http and https
// origins reached without a proxy, requests whose body length is known,
// gzip asked for and undone as net/http does) and hands
// everything else to the net/http transport it was built from, which also
// lends it its dialer (so netguard's checks apply to every connection) and
// TLS settings.
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Defaults for a transport whose base leaves them unset.
const (
	defaultMaxIdlePerHost = 64
	defaultIdleTimeout    = 90 * time.Second
	dialTimeout           = 30 * time.Second
	// maxBody is the largest request body the transport writes itself. A
	// server may answer a large upload early (413) and stop reading it;
	// net/http reads that answer while it writes, where a writer on the
	// caller's goroutine would block until the server gave up.
	maxBody = 64 << 10
)

// Transport is an [http.RoundTripper] for HTTP/1.1 over kept-alive
// connections. The zero value is not usable; see [New].
type Transport struct {
	base        *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int
	idleTimeout time.Duration

	mu    sync.Mutex
	idle  map[originKey][]*conn // most recently used last
	sweep *time.Timer           // closes connections idle too long; nil when none waits
}

// New returns a transport that dials, and falls back, through base.
func New(base *http.Transport) *Transport {
	t := &Transport{base: base, maxIdle: base.MaxIdleConnsPerHost, idleTimeout: base.IdleConnTimeout, idle: map[originKey][]*conn{}}
	if t.maxIdle <= 0 {
		t.maxIdle = defaultMaxIdlePerHost
	}
	if t.idleTimeout <= 0 {
		t.idleTimeout = defaultIdleTimeout
	}
	t.dial = base.DialContext
	if t.dial == nil {
		t.dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
	}
	return t
}

// RoundTrip sends req and returns its response, whose body the caller
// must read to its end and close for the connection to be used again.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.takes(req) {
		return t.base.RoundTrip(req)
	}
	key := originKey{req.URL.Scheme, req.URL.Host}
	c, reused, err := t.get(req.Context(), key, req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := c.exchange(req)
	if err != nil && reused && c.stale && rewindable(req) && req.Context().Err() == nil {
		// The server closed a kept-alive connection as the request went
		// out, and none of it arrived or it is safe to repeat; net/http
		// sends such a request again too.
		again, err := rewound(req)
		if err != nil {
			return nil, err
		}
		if c, err = t.dialConn(again.Context(), key, again); err != nil {
			closeBody(again)
			return nil, err
		}
		if resp, err = c.exchange(again); err == nil {
			resp.Request = req
		}
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of this transport and
// of its base.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[originKey][]*conn{}
	if t.sweep != nil {
		t.sweep.Stop()
		t.sweep = nil
	}
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
	t.base.CloseIdleConnections()
}

// CloseIdleConnectionsTo closes the idle connections to u's origin (its
// scheme and host, as a request to u names them) and leaves every other
// origin's. A caller that has seen the origin drop its connections (a
// server restarted) uses it before trying again: a kept-alive connection
// whose close has not arrived yet would look open and fail the request.
// The base transport's idle connections stay: net/http closes them only
// all at once, with [Transport.CloseIdleConnections].
func (t *Transport) CloseIdleConnectionsTo(u *url.URL) {
	key := originKey{u.Scheme, u.Host}
	t.mu.Lock()
	cs := t.idle[key]
	delete(t.idle, key)
	t.mu.Unlock()
	for _, c := range cs {
		c.nc.Close()
	}
}

// takes reports whether the transport sends req itself.
func (t *Transport) takes(req *http.Request) bool {
	b := t.base
	if b.DialTLSContext != nil || b.DialTLS != nil || b.Dial != nil && b.DialContext == nil || b.ResponseHeaderTimeout > 0 || b.DisableKeepAlives {
		return false
	}
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return false
	}
	if req.Method == http.MethodConnect || req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" {
		return false
	}
	// A body of unknown length would go chunked; see maxBody for large ones.
	if req.Body != nil && req.Body != http.NoBody && (req.ContentLength <= 0 || req.ContentLength > maxBody) {
		return false
	}
	if t.base.Proxy != nil {
		if u, err := t.base.Proxy(req); err != nil || u != nil {
			return false
		}
	}
	// net/http refuses a malformed header with an error; Request.Write
	// would send it mended, so net/http gets it.
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// get returns an idle connection to key, or a new one.
func (t *Transport) get(ctx context.Context, key originKey, req *http.Request) (c *conn, reused bool, err error) {
	now := time.Now()
	for {
		t.mu.Lock()
		cs := t.idle[key]
		if len(cs) == 0 {
			t.mu.Unlock()
			break
		}
		c = cs[len(cs)-1]
		cs[len(cs)-1] = nil
		t.idle[key] = cs[:len(cs)-1]
		t.mu.Unlock()
		if now.Sub(c.lastUsed) > t.idleTimeout || !c.idle() {
			c.nc.Close()
			continue
		}
		return c, true, nil
	}
	c, err = t.dialConn(ctx, key, req)
	return c, false, err
}

// dialConn connects to req's origin, through TLS for https.
func (t *Transport) dialConn(ctx context.Context, key originKey, req *http.Request) (*conn, error) {
	addr := hostPort(req)
	raw, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	nc := raw
	if req.URL.Scheme == "https" {
		if nc, err = t.handshake(ctx, nc, req.URL.Hostname()); err != nil {
			return nil, err
		}
	}
	c := &conn{t: t, key: key, nc: nc, br: bufio.NewReaderSize(nc, 8<<10)}
	if sc, ok := raw.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn() // nil when it has none: idle then trusts the connection
		c.peekFn = c.peek
	}
	c.out = &countingWriter{w: nc}
	c.bw = bufio.NewWriterSize(c.out, 8<<10)
	return c, nil
}

// handshake runs the TLS handshake on nc with the base's settings,
// offering only HTTP/1.1.
func (t *Transport) handshake(ctx context.Context, nc net.Conn, host string) (net.Conn, error) {
	cfg := &tls.Config{}
	if t.base.TLSClientConfig != nil {
		cfg = t.base.TLSClientConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	if d := t.base.TLSHandshakeTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// acceptGzip is the Accept-Encoding net/http's transport adds.
var acceptGzip = []string{"gzip"}

// askGzip reports whether req is to ask for a gzip-compressed answer:
// when net/http's transport would (the caller named no encoding and no
// range, and compression is on).
func (t *Transport) askGzip(req *http.Request) bool {
	return !t.base.DisableCompression && req.Method != http.MethodHead && req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == ""
}

// withGzip is req asking for gzip; req itself is not changed.
func withGzip(req *http.Request) *http.Request {
	h := make(http.Header, len(req.Header)+1)
	for k, v := range req.Header {
		h[k] = v
	}
	h["Accept-Encoding"] = acceptGzip
	wire := *req
	wire.Header = h
	return &wire
}

// put keeps c for the next request to its origin, or closes it.
func (t *Transport) put(c *conn) {
	c.lastUsed = time.Now()
	t.mu.Lock()
	if len(t.idle[c.key]) < t.maxIdle {
		t.idle[c.key] = append(t.idle[c.key], c)
		if t.sweep == nil {
			t.sweep = time.AfterFunc(t.idleTimeout, t.closeExpired)
		}
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.nc.Close()
}

// closeExpired closes the connections idle longer than the idle timeout,
// as net/http does, so an origin no longer called holds no sockets; it
// runs again when the oldest remaining connection expires.
func (t *Transport) closeExpired() {
	now := time.Now()
	deadline := now.Add(-t.idleTimeout)
	var (
		expired []*conn
		oldest  time.Time
	)
	t.mu.Lock()
	for key, cs := range t.idle {
		// Most recently used last: the expired ones are a prefix.
		n := 0
		for n < len(cs) && !cs[n].lastUsed.After(deadline) {
			n++
		}
		expired = append(expired, cs[:n]...)
		if n == len(cs) {
			delete(t.idle, key)
			continue
		}
		t.idle[key] = append(cs[:0:0], cs[n:]...)
		if oldest.IsZero() || cs[n].lastUsed.Before(oldest) {
			oldest = cs[n].lastUsed
		}
	}
	t.sweep = nil
	if !oldest.IsZero() {
		t.sweep = time.AfterFunc(oldest.Add(t.idleTimeout).Sub(now), t.closeExpired)
	}
	t.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

// originKey keys the idle connections: a request URL's scheme and host as
// written. Two spellings of one origin ("Example.com", "example.com:80")
// keep connections apart, which costs a connection, never a wrong one.
type originKey struct{ scheme, host string }

func hostPort(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewound is req with a fresh copy of its body.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// errCanceled stands for the request's context ending mid-exchange when
// the context gives no cause.
var errCanceled = errors.New("h1: request canceled")

// Ensure the interfaces net/http looks for.
var (
	_ http.RoundTripper                   = (*Transport)(nil)
	_ interface{ CloseIdleConnections() } = (*Transport)(nil)
	_ io.Closer                           = (*body)(nil)
)
