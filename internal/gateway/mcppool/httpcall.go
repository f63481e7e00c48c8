package mcppool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/h1"
)

// The lean tools/call path. Through the SDK a call to a streamable-HTTP
// server costs about 40 µs of CPU before the round trip (the jsonrpc2
// connection, its goroutines and channels, and a fresh 32 KiB decoder for
// every message read); the gateway's budget is 100 µs per call in all. So
// once the SDK has connected and initialized a streamable-HTTP session, the
// pool POSTs each tools/call itself, with the headers the SDK would send,
// through the same credentialed, netguarded client, and reads the answer
// itself. The SDK keeps everything else: connect, initialize, the
// session's life and its closing DELETE, and stdio and legacy SSE servers.

// leanVersions are the negotiated protocol versions whose streamable-HTTP
// tools/call the lean path speaks. Sessions of any other version (2026-07-28
// adds per-request _meta and headers) call through the SDK. A server
// without sessions is fine: the POSTs then carry no Mcp-Session-Id, as the
// SDK's do.
var leanVersions = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true}

// Limits on what a server's answer may make the pool hold.
const (
	// maxEvent bounds one server-sent event, as the SDK's transport does.
	maxEvent = mcp.DefaultMaxEventSize
	// maxJSONAnswer bounds an application/json answer, which the SDK does
	// not bound at all.
	maxJSONAnswer = 64 << 20
	// maxErrorBody bounds what is read of a refusal to look for a JSON-RPC
	// error in it.
	maxErrorBody = 64 << 10
)

// codeUnsupportedMethod is the SDK's code for a request its client has no
// handler for.
const codeUnsupportedMethod = -31001

const (
	// firstCallID is above any id the SDK used for the session's handshake,
	// so the two never share one.
	firstCallID = 1 << 20
	// drainGrace is how long the end of an answer stream may take to come
	// after the call's response before its connection is given up rather
	// than reused. Servers end the stream right after the response, but
	// the specification only says SHOULD, so the call does not wait for it.
	drainGrace = 100 * time.Millisecond
	// notifyTimeout bounds the best-effort notifications/cancelled, as in
	// the SDK.
	notifyTimeout = 5 * time.Second
)

// httpCaller sends tools/call on one streamable-HTTP session. It holds
// nothing that changes but an id counter, so concurrent calls share it
// without locking.
type httpCaller struct {
	client *http.Client // the session's: netguard, credential headers and query
	// transport is client's, to send through directly; nil to go
	// through client (see roundTripper).
	transport http.RoundTripper
	// redirected is set once the endpoint has answered with a redirect:
	// calls then go through client, which follows it.
	redirected atomic.Bool
	header     http.Header // sent on every POST; never written
	// request is the POST every call copies: its URL is parsed once, and
	// it and its header are shared, read-only (a transport that changes a
	// request clones it first, as netguard's does).
	request   *http.Request
	sessionID string // the session's Mcp-Session-Id; "" for a server without sessions
	nextID    atomic.Int64
	// spawn runs work that outlives a call (draining an answer, telling
	// the server a call was abandoned) where [Pool.Close] waits for it,
	// and reports false when the pool is closed.
	spawn func(func()) bool
	grace time.Duration // see drainGrace
}

// newHTTPCaller returns the lean caller of cs, connected through client to
// endpoint, or nil when the negotiated version needs the SDK's path.
func newHTTPCaller(p *Pool, client *http.Client, endpoint string, cs *mcp.ClientSession) *httpCaller {
	init := cs.InitializeResult()
	if init == nil || !leanVersions[init.ProtocolVersion] {
		return nil
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", init.ProtocolVersion)
	if id := cs.ID(); id != "" {
		h.Set("Mcp-Session-Id", id)
	}
	request, err := http.NewRequest(http.MethodPost, endpoint, nil)
	if err != nil {
		return nil // the SDK's path says what is wrong with the endpoint
	}
	request.Header = h
	// The Host header comes from the URL all the same; an explicit Host
	// makes http.Client copy the URL on every request.
	request.Host = ""
	c := &httpCaller{client: client, transport: roundTripper(client, request), header: h, request: request, sessionID: cs.ID(), spawn: p.spawn, grace: p.drainGrace}
	c.nextID.Store(firstCallID)
	return c
}

// deliveredError is a failure after the server accepted the call with a
// 2xx status: the tool may have run, so the pool does not send the call
// again. With retire set the session is replaced all the same.
type deliveredError struct {
	err    error
	retire bool
}

func (e *deliveredError) Error() string { return e.err.Error() }
func (e *deliveredError) Unwrap() error { return e.err }

// call runs tools/call tool(args). With progress set, the request carries
// token and the server's progress on it reaches progress. Errors are those
// the SDK path gives: a *jsonrpc.Error the server answered, wrapped; a
// lost session wrapping [mcp.ErrSessionMissing]; a failure after the
// server accepted the call, a [*deliveredError]; anything else is a
// transport failure.
func (c *httpCaller) call(ctx context.Context, tool string, args map[string]any, token string, progress func(float64, float64, string)) (*mcp.CallToolResult, error) {
	id := c.nextID.Add(1)
	body, err := encodeCall(id, tool, args, token)
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	res, err := c.exchange(ctx, id, body, token, progress)
	if err != nil && ctx.Err() != nil {
		// Off the caller's path, as the SDK does; ctx has ended but its
		// values still belong to the call.
		reason, nctx := ctx.Err().Error(), context.WithoutCancel(ctx)
		c.spawn(func() { c.notifyCancelled(nctx, id, reason) })
	}
	return res, err
}

// exchange POSTs the call and reads its answer.
func (c *httpCaller) exchange(ctx context.Context, id int64, body []byte, token string, progress func(float64, float64, string)) (*mcp.CallToolResult, error) {
	resp, err := c.post(ctx, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.refusal(resp)
	}
	res, rd, err := c.answer(ctx, resp, id, token, progress)
	if err != nil {
		return nil, err
	}
	c.finish(rd, resp.Body)
	return res, nil
}

// answer reads the accepted call's answer from resp, up to the response to
// id, and returns the reader holding the rest of it. Every failure is a
// [*deliveredError], and closes resp's body.
func (c *httpCaller) answer(ctx context.Context, resp *http.Response, id int64, token string, progress func(float64, float64, string)) (*mcp.CallToolResult, *reader, error) {
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && c.sessionID != "" && sid != c.sessionID {
		// As the SDK, which refuses such an answer. The ids stay out of
		// the message: they let anyone act in the session.
		resp.Body.Close()
		return nil, nil, &deliveredError{err: errors.New("the server answered tools/call for another session: its Mcp-Session-Id differs from the session's"), retire: true}
	}
	rd := getReader(resp.Body)
	var (
		res *mcp.CallToolResult
		err error
	)
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		res, err = rd.single(id)
	case "text/event-stream":
		res, err = c.stream(ctx, rd, id, token, progress)
	default:
		err = fmt.Errorf("the server answered tools/call with content type %q, neither JSON nor an event stream", resp.Header.Get("Content-Type"))
	}
	if err != nil {
		resp.Body.Close() // the connection is not reused
		putReader(rd)
		return nil, nil, &deliveredError{err: err}
	}
	return res, rd, nil
}

// finish closes an answer whose response has been read. A body read to
// its end closes at once and its connection carries the next call. The
// rest of a stream that has not ended yet is drained off the call's path,
// so a server that holds it open costs a goroutine, not the caller's
// time; its body is first detached from the call's context, which ends
// when the call returns and would close the connection. A body h1 did not
// carry cannot be detached (net/http's transport sends a POST larger than
// h1 takes), and is closed with its connection.
func (c *httpCaller) finish(rd *reader, rc io.ReadCloser) {
	if !rd.ended() && h1.Detach(rc) && c.spawn(func() {
		rd.drain(rc, c.grace)
		putReader(rd)
	}) {
		return
	}
	rc.Close()
	putReader(rd)
}

// post sends body to the session's endpoint with the session's headers.
func (c *httpCaller) post(ctx context.Context, body []byte) (*http.Response, error) {
	if c.transport == nil || c.redirected.Load() {
		return c.client.Do(c.newPost(ctx, body))
	}
	req := c.newPost(ctx, body)
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}
	}
	if !redirect(resp.StatusCode) {
		return resp, nil
	}
	// The server did not take the call: it sends its calls elsewhere. The
	// client follows redirects by its own rules (and its limit); this call
	// and every later one go through it, so the endpoint refuses this one
	// twice and later ones once each, as with the client alone.
	discard(resp.Body)
	c.redirected.Store(true)
	return c.client.Do(c.newPost(ctx, body))
}

// newPost is a POST of body to the session's endpoint, which can be sent
// again (a redirect does).
func (c *httpCaller) newPost(ctx context.Context, body []byte) *http.Request {
	req := c.request.WithContext(ctx)
	if c.client.Jar != nil {
		req.Header = c.header.Clone() // a client with a cookie jar writes to it
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return req
}

// roundTripper is the transport to send a call's POST through without
// http.Client, which copies the request's headers for redirects on every
// call; nil when the client adds anything to an exchange beyond following
// redirects (a cookie jar, a timeout, credentials from the URL).
func roundTripper(client *http.Client, request *http.Request) http.RoundTripper {
	if client.Jar != nil || client.Timeout > 0 || request.URL.User != nil {
		return nil
	}
	if client.Transport == nil {
		return http.DefaultTransport
	}
	return client.Transport
}

// redirect reports whether status is one http.Client follows.
func redirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// refusal says why the server refused the call, and closes resp's body.
// The status is looked at before the body, as the SDK does: a transient
// status (429, 502, 503, 504) is a transport failure whatever the body
// says, and a 404 for a session means the server no longer knows it (the
// TypeScript SDK's comes with a JSON-RPC error "Session not found"); the
// pool then connects anew and tries once more. Otherwise a JSON-RPC error
// in the body is the server's answer, and any other status is named.
func (c *httpCaller) refusal(resp *http.Response) error {
	defer discard(resp.Body)
	switch {
	case transientStatus(resp.StatusCode):
		return fmt.Errorf("the server answered tools/call with HTTP %s", resp.Status)
	case resp.StatusCode == http.StatusNotFound && c.sessionID != "":
		return fmt.Errorf("the server answered HTTP %s for the session: %w", resp.Status, mcp.ErrSessionMissing)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var m struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal(body, &m) == nil && m.Error != nil {
		return fmt.Errorf("calling %q: %w (HTTP %s)", "tools/call", m.Error, resp.Status)
	}
	return fmt.Errorf("the server answered tools/call with HTTP %s", resp.Status)
}

// transientStatus reports whether status says the server (or a proxy in
// front of it) could not take the request for now; the SDK's list.
func transientStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// stream reads the call's event stream up to the response to id, relaying
// progress on token and answering the server's requests on the way.
func (c *httpCaller) stream(ctx context.Context, rd *reader, id int64, token string, progress func(float64, float64, string)) (*mcp.CallToolResult, error) {
	for {
		data, err := rd.event()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the server ended the tools/call stream without a response")
		}
		if err != nil {
			return nil, err
		}
		var m message
		if err := m.decode(data); err != nil {
			return nil, err
		}
		switch {
		case m.Method == "":
			if m.isResponseTo(id) {
				return m.toolResult(data)
			}
		case len(m.ID) > 0:
			c.reply(ctx, &m)
		case m.Method == "notifications/progress" && progress != nil:
			relayProgress(m.Params, token, progress)
		}
	}
}

// reply answers a request the server sent on the call's stream as the
// SDK's client with no capabilities and no handlers does: ping and
// roots/list have answers, sampling and elicitation are refused with the
// SDK's codes, and anything else is a method not found. It is best-effort,
// like the SDK's: a server that does not get it may still answer the call.
func (c *httpCaller) reply(ctx context.Context, m *message) {
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: m.ID}
	switch m.Method {
	case "ping":
		out.Result = struct{}{}
	case "roots/list":
		out.Result = struct {
			Roots []struct{} `json:"roots"`
		}{Roots: []struct{}{}}
	case "sampling/createMessage":
		out.Error = &jsonrpc.Error{Code: codeUnsupportedMethod, Message: "client does not support CreateMessage"}
	case "elicitation/create":
		out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support elicitation"}
	default:
		out.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", m.Method)}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return
	}
	if resp, err := c.post(ctx, body); err == nil {
		discard(resp.Body)
	}
}

// notifyCancelled tells the server that nobody waits for call id any more.
func (c *httpCaller) notifyCancelled(ctx context.Context, id int64, reason string) {
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", "notifications/cancelled", &mcp.CancelledParams{RequestID: id, Reason: reason}})
	if err != nil {
		return
	}
	if resp, err := c.post(ctx, body); err == nil {
		discard(resp.Body)
	}
}

// relayProgress hands a notifications/progress on token to progress.
func relayProgress(params json.RawMessage, token string, progress func(float64, float64, string)) {
	var p struct {
		Token    any     `json:"progressToken"`
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	}
	if json.Unmarshal(params, &p) == nil && p.Token == token {
		progress(p.Progress, p.Total, p.Message)
	}
}

// encoder writes request bodies; pooled, as every call needs one.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false) // the text goes to a server, not a web page
	return e
}}

// encode appends v's JSON to the buffer.
func (e *encoder) encode(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1) // Encode ends with a newline
	return nil
}

// encodeCall returns the body of tools/call id.
func encodeCall(id int64, tool string, args map[string]any, token string) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	b := &e.buf
	b.Reset()
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), id, 10))
	b.WriteString(`,"method":"tools/call","params":{"name":`)
	if err := e.encode(tool); err != nil {
		return nil, err
	}
	b.WriteString(`,"arguments":`)
	if args == nil {
		b.WriteString("{}") // as the SDK: never null
	} else if err := e.encode(args); err != nil {
		return nil, err
	}
	if token != "" {
		// Tokens are the pool's own "tg-<n>": nothing to escape.
		b.WriteString(`,"_meta":{"progressToken":"`)
		b.WriteString(token)
		b.WriteString(`"}`)
	}
	b.WriteString("}}")
	// The body outlives the pooled buffer: the transport may read it after
	// Do returns, and again to retry on a stale connection.
	return bytes.Clone(b.Bytes()), nil
}

// mediaType is a Content-Type without its parameters.
func mediaType(v string) string {
	v, _, _ = strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(v))
}

// discard reads a little of a body nobody needs, so its connection can be
// reused, and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	body.Close()
}
