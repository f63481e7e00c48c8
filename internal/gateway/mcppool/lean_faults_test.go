package mcppool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/h1"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
)

// How upstreams misbehave on the lean path, each served by a hand-written
// handler in front of a real go-sdk server.

// intercept puts answer in front of a handler: answer sees every request
// with its JSON-RPC message (zero for a request without one) and reports
// whether it answered; what it leaves goes on to the handler.
func intercept(answer func(w http.ResponseWriter, r *http.Request, m rpc) bool) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m rpc
			_ = json.Unmarshal(body, &m)
			if !answer(w, r, m) {
				h.ServeHTTP(w, r)
			}
		})
	}
}

// callOf reports whether m calls tool.
func callOf(m rpc, tool string) bool {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return m.Method == "tools/call" && p.Name == tool
}

// writeEvent writes one server-sent event carrying data and flushes it.
func writeEvent(w http.ResponseWriter, data string) {
	_, _ = io.WriteString(w, "event: message\ndata: "+data+"\n\n")
	w.(http.Flusher).Flush()
}

// watched is an HTTP client for a pool that shows what the pool does
// with its connections, and which requests carry the values of a call's
// context.
type watched struct {
	client *http.Client
	closed atomic.Int32 // connections closed

	mu     sync.Mutex
	tagged []string // JSON-RPC methods sent with tagKey in their context
}

// tagKey marks a call's context.
type tagKey struct{}

func newWatched(t *testing.T) *watched {
	w := &watched{}
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, closed: &w.closed}, nil
	}}
	// As in production, h1 over net/http's transport.
	rt := h1.New(base)
	t.Cleanup(rt.CloseIdleConnections)
	w.client = &http.Client{Transport: roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Context().Value(tagKey{}) != nil && req.GetBody != nil {
			body, _ := req.GetBody()
			var m rpc
			_ = json.NewDecoder(body).Decode(&m)
			w.mu.Lock()
			w.tagged = append(w.tagged, m.Method)
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})}
	return w
}

func (w *watched) options() mcppool.Options {
	return mcppool.Options{HTTPClient: func() *http.Client { return w.client }}
}

func (w *watched) taggedMethods() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.tagged)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// watchedConn counts its closing.
type watchedConn struct {
	net.Conn
	closed *atomic.Int32
	once   sync.Once
}

func (c *watchedConn) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.Conn.Close()
}

// TestHTTPLeanHeldStream has the server keep a call's stream open after
// the response, as the specification allows (it only says SHOULD close):
// the call returns while the server still holds the stream, and the
// session carries on on the same connection.
func TestHTTPLeanHeldStream(t *testing.T) {
	release, ended := make(chan struct{}), make(chan struct{})
	_, cfg := serveHTTP(t, intercept(func(w http.ResponseWriter, r *http.Request, m rpc) bool {
		if !callOf(m, "held") {
			return false
		}
		defer close(ended)
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"held"}]}}`)
		select {
		case <-release:
		case <-r.Context().Done(): // the client gave the stream up
		}
		return true
	}))
	w := newWatched(t)
	p := newPool(t, w.options())
	// Longer than the test: the pool must not wait for the stream's end,
	// nor cut it short, before the call returns.
	mcppool.SetDrainGrace(p, time.Hour)
	key := keyOf("src_held", cfg, nil)
	res, err := p.Call(t.Context(), key, cfg, nil, "held", nil, nil)
	if err != nil || text(t, res) != "held" {
		t.Fatalf("%v %v", res, err)
	}
	if n := w.closed.Load(); n != 0 {
		t.Fatalf("%d connections closed before the call returned", n)
	}
	select {
	case <-ended:
		t.Fatal("the stream ended before the call returned")
	default:
	}
	close(release)
	<-ended
	if res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "next"}, nil); err != nil || text(t, res) != "Echo: next" {
		t.Fatalf("after the held stream: %v %v", res, err)
	}
	// The call's context ended when it returned, before the stream did:
	// the connection must outlive it, read to its end and kept for the
	// next call, not dropped (h1, like net/http, closes a connection whose
	// request's context ends while its body is being read, unless the body
	// has been detached).
	if n := w.closed.Load(); n != 0 {
		t.Fatalf("%d connections closed; the held stream's should have been kept", n)
	}
}

// TestHTTPLeanSessionNotFoundJSON has the server forget the session and
// say so as the TypeScript SDK does, 404 with a JSON-RPC error: the pool
// connects anew and the call succeeds, rather than taking the error for
// the server's answer and keeping a session nobody knows.
func TestHTTPLeanSessionNotFoundJSON(t *testing.T) {
	var (
		rec       recorder
		forgotten atomic.Value // the session id the server no longer knows
	)
	forgotten.Store("")
	_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
		return rec.wrap(intercept(func(w http.ResponseWriter, r *http.Request, _ rpc) bool {
			if sid := r.Header.Get("Mcp-Session-Id"); r.Method != http.MethodPost || sid == "" || sid != forgotten.Load() {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`)
			return true
		})(h))
	})
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_ts404", cfg, nil)
	if _, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	forgotten.Store(rec.method("tools/call")[0].header.Get("Mcp-Session-Id"))
	for i := range 2 {
		res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "2"}, nil)
		if err != nil || text(t, res) != "Echo: 2" {
			t.Fatalf("call %d after the server forgot the session: %v %v", i, res, err)
		}
	}
	if n, m := len(rec.method("initialize")), len(rec.method("tools/call")); n != 2 || m != 4 {
		t.Errorf("%d initialize and %d tools/call, want 2 and 4", n, m)
	}
}

// TestHTTPLeanRefusals refuses tools/call with each kind of status. The
// status decides before the body, as in the SDK: a transient one is tried
// once more on a new session even when it carries a JSON-RPC error, and
// any other with a JSON-RPC error is the server's answer. Both paths
// behave alike.
func TestHTTPLeanRefusals(t *testing.T) {
	// The request's id goes in for ID; the SDK takes an error under a null
	// id for no answer at all.
	const rpcError = `{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"overloaded, come back later"}}`
	for _, c := range []struct {
		status      int
		contentType string
		body        string
		retried     bool
	}{
		{http.StatusTooManyRequests, "application/json", rpcError, true},
		{http.StatusBadGateway, "text/plain", "upstream is unwell", true},
		{http.StatusServiceUnavailable, "application/json", rpcError, true},
		{http.StatusGatewayTimeout, "application/json", rpcError, true},
		{http.StatusBadRequest, "application/json", rpcError, false},
		{http.StatusForbidden, "text/plain", "no", true},
	} {
		for _, path := range []string{"lean", "sdk"} {
			t.Run(http.StatusText(c.status)+"/"+path, func(t *testing.T) {
				var rec recorder
				_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
					return rec.wrap(intercept(func(w http.ResponseWriter, _ *http.Request, m rpc) bool {
						if m.Method != "tools/call" {
							return false
						}
						w.Header().Set("Content-Type", c.contentType)
						w.WriteHeader(c.status)
						_, _ = io.WriteString(w, strings.Replace(c.body, "ID", string(m.ID), 1))
						return true
					})(h))
				})
				p := newPool(t, mcppool.Options{})
				if path == "sdk" {
					mcppool.SetSDKCalls(p)
				}
				_, err := p.Call(t.Context(), keyOf("src_refused", cfg, nil), cfg, nil, "echo", map[string]any{"message": "x"}, nil)
				if err == nil || strings.Contains(err.Error(), "reconnected once") != c.retried {
					t.Fatalf("err = %v, retried %v", err, c.retried)
				}
				want := map[bool]int{true: 2, false: 1}[c.retried]
				if n, m := len(rec.method("initialize")), len(rec.method("tools/call")); n != want || m != want {
					t.Errorf("%d initialize and %d tools/call, want %d", n, m, want)
				}
				if path == "lean" && !c.retried && !strings.Contains(err.Error(), "overloaded, come back later") {
					t.Errorf("err = %v", err)
				}
				if path == "lean" && c.retried && !strings.Contains(err.Error(), http.StatusText(c.status)) {
					t.Errorf("err = %v", err)
				}
			})
		}
	}
}

// TestHTTPLeanCloseEndsCalls closes the pool while a call waits on a
// server that never answers: the call ends at once, and is not tried again.
func TestHTTPLeanCloseEndsCalls(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	var rec recorder
	_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
		return rec.wrap(intercept(func(_ http.ResponseWriter, r *http.Request, m rpc) bool {
			if !callOf(m, "held") {
				return false
			}
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return true
		})(h))
	})
	p := newPool(t, mcppool.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), keyOf("src_closed", cfg, nil), cfg, nil, "held", nil, nil)
		done <- err
	}()
	<-arrived
	closed := make(chan error, 1)
	go func() { closed <- p.Close(t.Context()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "tools/call was cut short: the MCP connection pool is closed") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(20 * time.Second): // a guard against hanging, not a measure
		t.Fatal("the call outlived the pool")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := len(rec.method("tools/call")); n != 1 {
		t.Errorf("%d tools/call, want 1", n)
	}
}

// TestHTTPLeanSiblingSurvivesFailure has one call fail at the transport
// level, which replaces the session, while another call on it is still
// running: that call is left to finish, not cut short and sent again.
func TestHTTPLeanSiblingSurvivesFailure(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var rec recorder
	_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
		return rec.wrap(intercept(func(w http.ResponseWriter, r *http.Request, m rpc) bool {
			switch {
			case callOf(m, "held"):
				arrived <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
					return true
				}
				w.Header().Set("Content-Type", "text/event-stream")
				writeEvent(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"held"}]}}`)
				return true
			case callOf(m, "unwell"):
				http.Error(w, "upstream is unwell", http.StatusBadGateway)
				return true
			}
			return false
		})(h))
	})
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_sibling", cfg, nil)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := p.Call(t.Context(), key, cfg, nil, "held", nil, nil)
		done <- outcome{res, err}
	}()
	<-arrived
	if _, err := p.Call(t.Context(), key, cfg, nil, "unwell", nil, nil); err == nil || !strings.Contains(err.Error(), "reconnected once") {
		t.Fatalf("unwell: %v", err)
	}
	close(release)
	o := <-done
	if o.err != nil || text(t, o.res) != "held" {
		t.Fatalf("the sibling: %v %v", o.res, o.err)
	}
	if n := len(rec.method("tools/call")) - 2; n != 1 {
		t.Errorf("the sibling was sent %d times", n)
	}
}

// TestHTTPLeanAcceptedThenFailed answers tools/call with 200 and something
// the pool cannot use. The server took the call and may have run the
// tool, so it is not sent again; the session carries on, except after an
// answer for another session, which replaces it.
func TestHTTPLeanAcceptedThenFailed(t *testing.T) {
	answers := map[string]func(w http.ResponseWriter, id string){
		"not json": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{not json`)
		},
		"wrong id": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
		},
		"bad base64": func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"image","mimeType":"image/png","data":"not base64!"}]}}`)
		},
		"no response": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeEvent(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bye"}}`)
		},
		"oversize event": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: ")
			chunk := strings.Repeat("x", 1<<20)
			for range 17 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		},
		"plain text": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "ok")
		},
		"another session": func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "someone-else")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[]}}`)
		},
	}
	var rec recorder
	_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
		return rec.wrap(intercept(func(w http.ResponseWriter, _ *http.Request, m rpc) bool {
			var p struct {
				Args struct {
					Case string `json:"case"`
				} `json:"arguments"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if !callOf(m, "broken") {
				return false
			}
			answers[p.Args.Case](w, string(m.ID))
			return true
		})(h))
	})
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_accepted", cfg, nil)
	if _, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "warm"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, err string }{
		{"not json", "decode the server's message"},
		{"wrong id", "is not its response"},
		{"bad base64", "illegal base64"},
		{"no response", "ended the tools/call stream without a response"},
		{"oversize event", "exceeds 16 MiB"},
		{"plain text", `content type "text/plain"`},
		{"another session", "answered tools/call for another session"},
	} {
		initBefore, callsBefore := len(rec.method("initialize")), len(rec.method("tools/call"))
		_, err := p.Call(t.Context(), key, cfg, nil, "broken", map[string]any{"case": c.name}, nil)
		if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "reconnect") {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if err != nil && strings.Contains(err.Error(), "someone-else") {
			t.Errorf("%s: the error shows a session id: %v", c.name, err)
		}
		if n := len(rec.method("tools/call")) - callsBefore; n != 1 {
			t.Errorf("%s: sent %d times", c.name, n)
		}
		res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": c.name}, nil)
		if err != nil || text(t, res) != "Echo: "+c.name {
			t.Errorf("%s: the next call: %v %v", c.name, res, err)
		}
		wantInit := map[bool]int{true: 1, false: 0}[c.name == "another session"]
		if n := len(rec.method("initialize")) - initBefore; n != wantInit {
			t.Errorf("%s: %d initialize, want %d", c.name, n, wantInit)
		}
	}
}

// TestHTTPLeanCloseWaitsForCancelNotice cancels a call and closes the
// pool while the server is still taking the notifications/cancelled:
// Close waits for it, closing does not cut it off, and it goes out with
// the values of the call's context.
func TestHTTPLeanCloseWaitsForCancelNotice(t *testing.T) {
	arrived, notified, release := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	var cutOff atomic.Bool
	noticed := make(chan struct{})
	_, cfg := serveHTTP(t, intercept(func(w http.ResponseWriter, r *http.Request, m rpc) bool {
		switch {
		case callOf(m, "held"):
			arrived <- struct{}{}
			<-r.Context().Done()
			return true
		case m.Method == "notifications/cancelled":
			defer close(noticed)
			close(notified)
			select {
			case <-release:
				w.WriteHeader(http.StatusAccepted)
			case <-r.Context().Done():
				cutOff.Store(true)
			}
			return true
		}
		return false
	}))
	w := newWatched(t)
	p := newPool(t, w.options())
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), tagKey{}, true))
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(ctx, keyOf("src_notice", cfg, nil), cfg, nil, "held", nil, nil)
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "the call was cancelled") {
		t.Fatalf("err = %v", err)
	}
	<-notified
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while notifications/cancelled was in flight", err)
	default:
	}
	close(release)
	<-noticed
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if cutOff.Load() {
		t.Error("closing the pool cut off notifications/cancelled")
	}
	if diff := cmp.Diff([]string{"tools/call", "notifications/cancelled"}, w.taggedMethods()); diff != "" {
		t.Errorf("requests with the call's context (-want +got):\n%s", diff)
	}
}

// TestHTTPLeanRedirect has the server send a call's POST elsewhere with a
// 307, as a server moving its endpoint may. The call runs once, where the
// server sent it, whichever way the lean path sends its POSTs: through
// http.Client (a client with a timeout), or, as the gateway's client has
// none, through the transport alone, which hands the redirected call and
// every later one to the client.
func TestHTTPLeanRedirect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func() *http.Client
		// wantRedirected counts the POSTs the old endpoint refused.
		wantRedirected int32
	}{
		{"through http.Client", nil, 3},
		{"through the transport, as the gateway's client", func() *http.Client { return gatewayClient(t) }, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			var redirected atomic.Int32
			_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
				inner := rec.wrap(h)
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/mcp" && r.Method == http.MethodPost && r.URL.Query().Get("moved") == "" {
						body, _ := io.ReadAll(r.Body)
						var m rpc
						_ = json.Unmarshal(body, &m)
						if callOf(m, "echo") {
							redirected.Add(1)
							http.Redirect(w, r, "/mcp?moved=1", http.StatusTemporaryRedirect)
							return
						}
						r.Body = io.NopCloser(bytes.NewReader(body))
					}
					inner.ServeHTTP(w, r)
				})
			})
			var opts mcppool.Options
			if tc.client != nil {
				client := tc.client()
				opts.HTTPClient = func() *http.Client { return client }
			}
			p := newPool(t, opts)
			key := keyOf("src_moved", cfg, nil)
			for i := range 3 {
				msg := fmt.Sprintf("moved %d", i)
				res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": msg}, nil)
				if err != nil || text(t, res) != "Echo: "+msg {
					t.Fatalf("call %d: %v %v", i, res, err)
				}
			}
			calls := rec.method("tools/call")
			if redirected.Load() != tc.wantRedirected || len(calls) != 3 {
				t.Fatalf("%d redirected, %d calls reached the server; want %d and 3", redirected.Load(), len(calls), tc.wantRedirected)
			}
			for _, c := range calls {
				if c.query.Get("moved") != "1" {
					t.Fatalf("a call ran at %v, not where the server sent it", c.query)
				}
			}
		})
	}
}

// gatewayClient is an HTTP client shaped as the gateway's: no timeout, and
// the h1 transport over netguard's.
func gatewayClient(t *testing.T) *http.Client {
	c := netguard.NewClient(netguard.Options{AllowPrivate: true, Timeout: -1})
	rt := h1.New(c.Transport.(*http.Transport))
	t.Cleanup(rt.CloseIdleConnections)
	c.Transport = rt
	return c
}

// droppingListener hands out connections it can drop without telling the
// client: a dropped connection ends, unanswered, at the next bytes the
// client sends on it. Until then the client's side looks open, as a
// restarted server's connections do before their close arrives (on a
// busy machine that can be a while).
type droppingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*droppingConn
}

type droppingConn struct {
	net.Conn
	dropped atomic.Bool
}

func (l *droppingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &droppingConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// drop drops every connection accepted so far and says how many.
func (l *droppingListener) drop() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.dropped.Store(true)
	}
	return len(l.conns)
}

func (c *droppingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.dropped.Load() {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

// TestHTTPReconnectAfterDroppedConnections has the server drop every
// kept-alive connection while the pool holds two idle ones that still look
// open. The call fails on one, and the pool reconnects once: its
// initialize must not go out on the other. The call then runs, once, for
// both client shapes: net/http's transport, which learns of a close from
// a reader goroutine, and the gateway's h1, which peeks before reuse.
func TestHTTPReconnectAfterDroppedConnections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func() *http.Client
	}{
		{"net/http", nil},
		{"h1, as the gateway's client", func() *http.Client { return gatewayClient(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			srv := goServer()
			ts := httptest.NewUnstartedServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
			ln := &droppingListener{Listener: ts.Listener}
			ts.Listener = ln
			ts.Start()
			t.Cleanup(ts.Close)
			cfg := &sources.MCPConfig{Transport: sources.TransportStreamableHTTP, URL: ts.URL + "/mcp"}
			var opts mcppool.Options
			if tc.client != nil {
				client := tc.client()
				opts.HTTPClient = func() *http.Client { return client }
			}
			p := newPool(t, opts)
			key := keyOf("src_dropped", cfg, nil)
			// Two calls at once leave two idle connections behind.
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() {
					_, errs[i] = p.Call(t.Context(), key, cfg, nil, "sleep", map[string]any{"millis": 300}, nil)
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if n := ln.drop(); n < 2 {
				t.Fatalf("%d connections before the drop, want 2 or more", n)
			}
			res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "after the drop"}, nil)
			if err != nil || text(t, res) != "Echo: after the drop" {
				t.Fatalf("after the drop: %v %v", res, err)
			}
			if n := len(rec.method("initialize")); n != 2 {
				t.Errorf("%d sessions initialized, want 2: the first and the reconnect", n)
			}
			var echoes int
			for _, c := range rec.method("tools/call") {
				if callOf(c.msg, "echo") {
					echoes++
				}
			}
			if echoes != 1 {
				t.Errorf("the server ran echo %d times, want once", echoes)
			}
		})
	}
}
