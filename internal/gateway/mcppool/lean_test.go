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
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// leanIDs is where the lean path's request ids start; the SDK's are small.
const leanIDs = 1 << 20

// rpc is a JSON-RPC message as a test server sees it.
type rpc struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post is a POST a test server received.
type post struct {
	header http.Header
	query  url.Values
	msg    rpc
}

// recorder keeps the JSON-RPC POSTs that reach the handler it wraps.
type recorder struct {
	mu    sync.Mutex
	posts []post
}

func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m rpc
			_ = json.Unmarshal(body, &m)
			rc.mu.Lock()
			rc.posts = append(rc.posts, post{header: r.Header.Clone(), query: r.URL.Query(), msg: m})
			rc.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// method returns the POSTs of method, in order.
func (rc *recorder) method(method string) []post {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []post
	for _, p := range rc.posts {
		if p.msg.Method == method {
			out = append(out, p)
		}
	}
	return out
}

func newSDKPool(t testing.TB, opts mcppool.Options) *mcppool.Pool {
	t.Helper()
	p := newPool(t, opts)
	mcppool.SetSDKCalls(p)
	return p
}

// idOf reads a numeric JSON-RPC id.
func idOf(t testing.TB, raw json.RawMessage) int64 {
	t.Helper()
	var id int64
	if err := json.Unmarshal(raw, &id); err != nil {
		t.Fatalf("id %s: %v", raw, err)
	}
	return id
}

// TestHTTPLeanAnswerModes runs the lean path against each way a go-sdk
// server answers and checks it gives what the SDK's path gives.
func TestHTTPLeanAnswerModes(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"event-stream", nil},
		{"json", &mcp.StreamableHTTPOptions{JSONResponse: true}},
		{"stateless", &mcp.StreamableHTTPOptions{Stateless: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			var rec recorder
			_, cfg := serveHTTPWith(t, mode.opts, rec.wrap)
			lean, sdk := newPool(t, mcppool.Options{}), newSDKPool(t, mcppool.Options{})
			key := keyOf("src_modes", cfg, nil)
			call := func(p *mcppool.Pool, tool string, args map[string]any) (*mcp.CallToolResult, error) {
				return p.Call(t.Context(), key, cfg, nil, tool, args, nil)
			}

			res, err := call(lean, "echo", map[string]any{"message": "hi <&>"})
			if err != nil || text(t, res) != "Echo: hi <&>" {
				t.Fatalf("echo: %v %v", res, err)
			}
			calls := rec.method("tools/call")
			if id := idOf(t, calls[len(calls)-1].msg.ID); id <= leanIDs {
				t.Errorf("the call had id %d: it did not take the lean path", id)
			}
			if sid := calls[len(calls)-1].header.Get("Mcp-Session-Id"); (sid == "") != (mode.name == "stateless") {
				t.Errorf("Mcp-Session-Id = %q", sid)
			}

			// Every kind of content, the result's _meta and structured
			// content come out as the SDK's path gives them.
			want, err := call(sdk, "rich", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := call(lean, "rich", nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, sameResult); diff != "" {
				t.Errorf("rich (-sdk +lean):\n%s", diff)
			}
			if diff := cmp.Diff(richContent, got.Content); diff != "" {
				t.Errorf("rich content (-sent +got):\n%s", diff)
			}
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(got)
			if !bytes.Equal(wb, gb) {
				t.Errorf("rich marshals differently:\nsdk  %s\nlean %s", wb, gb)
			}

			// An answer far larger than the reader's buffer.
			res, err = call(lean, "big", map[string]any{"bytes": 300_000})
			if err != nil || len(text(t, res)) != 300_000 {
				t.Fatalf("big: %d bytes, %v", len(text(t, res)), err)
			}

			// A tool's error is a result.
			res, err = call(lean, "fail", nil)
			if err != nil || !res.IsError || !strings.Contains(text(t, res), "the tool failed on purpose") {
				t.Fatalf("fail: %v %v", res, err)
			}

			// A JSON-RPC error reads as on the SDK's path and is not retried.
			before := len(rec.method("tools/call"))
			_, leanErr := call(lean, "nope", nil)
			_, sdkErr := call(sdk, "nope", nil)
			if leanErr == nil || sdkErr == nil || leanErr.Error() != sdkErr.Error() {
				t.Errorf("unknown tool:\nlean %v\nsdk  %v", leanErr, sdkErr)
			}
			if !strings.Contains(fmt.Sprint(leanErr), `the server answered tools/call with an error: calling "tools/call": unknown tool "nope"`) {
				t.Errorf("unknown tool: %v", leanErr)
			}
			if n := len(rec.method("tools/call")) - before; n != 2 {
				t.Errorf("%d tools/call for two unknown-tool calls", n)
			}
			if n := len(rec.method("initialize")); n != 2 {
				t.Errorf("%d initialize for two pools", n)
			}
		})
	}
}

// TestHTTPLeanConcurrent shares one session among many calls at once,
// half of them with progress.
func TestHTTPLeanConcurrent(t *testing.T) {
	var rec recorder
	_, cfg := serveHTTP(t, rec.wrap)
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_concurrent", cfg, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			if i%2 == 1 {
				var steps atomic.Int32
				res, err := p.Call(t.Context(), key, cfg, nil, "progress", map[string]any{"steps": 3}, func(float64, float64, string) { steps.Add(1) })
				if err != nil || text(t, res) != "done" || steps.Load() != 3 {
					errs <- fmt.Errorf("call %d: %v %v, %d steps", i, res, err, steps.Load())
				}
				return
			}
			msg := fmt.Sprintf("hello %d", i)
			res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": msg}, nil)
			if err != nil || text(t, res) != "Echo: "+msg {
				errs <- fmt.Errorf("call %d: %v %v", i, res, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ids := map[string]bool{}
	for _, c := range rec.method("tools/call") {
		ids[string(c.msg.ID)] = true
	}
	if len(ids) != 64 || len(rec.method("initialize")) != 1 || mcppool.LeanSessions(p) != 1 {
		t.Errorf("%d distinct ids, %d initialize, %d lean sessions", len(ids), len(rec.method("initialize")), mcppool.LeanSessions(p))
	}
}

// TestHTTPLeanHeadersAsSDK checks the lean path's POST carries what the
// SDK's does, credentials included.
func TestHTTPLeanHeadersAsSDK(t *testing.T) {
	var rec recorder
	_, cfg := serveHTTP(t, rec.wrap)
	cfg.Headers = map[string]string{"X-Config": "c"}
	auth := &sources.Auth{}
	auth.SetHeader("X-Api-Key", "s3cr3t")
	auth.SetQuery("api_key", "q-s3cr3t")
	key := keyOf("src_headers", cfg, auth)
	for _, p := range []*mcppool.Pool{newSDKPool(t, mcppool.Options{}), newPool(t, mcppool.Options{})} {
		if _, err := p.Call(t.Context(), key, cfg, auth, "echo", map[string]any{"message": "x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	calls := rec.method("tools/call")
	if len(calls) != 2 {
		t.Fatalf("%d tools/call", len(calls))
	}
	sdk, lean := calls[0], calls[1]
	if idOf(t, lean.msg.ID) <= leanIDs || idOf(t, sdk.msg.ID) > leanIDs {
		t.Fatalf("ids: sdk %s, lean %s", sdk.msg.ID, lean.msg.ID)
	}
	for _, h := range []http.Header{sdk.header, lean.header} {
		if h.Get("Mcp-Session-Id") == "" || h.Get("X-Api-Key") != "s3cr3t" || h.Get("X-Config") != "c" || h.Get("Mcp-Protocol-Version") != "2025-11-25" {
			t.Errorf("headers %v", h)
		}
		h.Del("Mcp-Session-Id") // one per session
		h.Del("Content-Length") // the ids differ
	}
	if diff := cmp.Diff(sdk.header, lean.header); diff != "" {
		t.Errorf("headers (-sdk +lean):\n%s", diff)
	}
	if diff := cmp.Diff(sdk.query, lean.query); diff != "" || lean.query.Get("api_key") != "q-s3cr3t" {
		t.Errorf("query %v (-sdk +lean):\n%s", lean.query, diff)
	}
	if diff := cmp.Diff(sdk.msg.Params, lean.msg.Params, cmp.Transformer("json", func(raw json.RawMessage) any {
		var v any
		_ = json.Unmarshal(raw, &v)
		return v
	})); diff != "" {
		t.Errorf("params (-sdk +lean):\n%s", diff)
	}
}

func TestHTTPLeanProgressRelayed(t *testing.T) {
	var rec recorder
	_, cfg := serveHTTP(t, rec.wrap)
	p := newPool(t, mcppool.Options{})
	type step struct {
		progress, total float64
		message         string
	}
	var steps []step
	res, err := p.Call(t.Context(), keyOf("src_progress", cfg, nil), cfg, nil, "progress", map[string]any{"steps": 5},
		func(progress, total float64, message string) { steps = append(steps, step{progress, total, message}) })
	if err != nil || text(t, res) != "done" {
		t.Fatalf("%v %v", res, err)
	}
	// The lean path reads progress and the result from one stream in
	// order, so every step arrives before the call returns.
	var want []step
	for i := 1; i <= 5; i++ {
		want = append(want, step{float64(i), 5, fmt.Sprintf("step %d", i)})
	}
	if diff := cmp.Diff(want, steps, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	var params struct {
		Meta map[string]any `json:"_meta"`
	}
	calls := rec.method("tools/call")
	_ = json.Unmarshal(calls[0].msg.Params, &params)
	if token, _ := params.Meta["progressToken"].(string); !strings.HasPrefix(token, "tg-") {
		t.Errorf("_meta = %v", params.Meta)
	}
	// Without a callback the call asks for no progress.
	if _, err := p.Call(t.Context(), keyOf("src_progress", cfg, nil), cfg, nil, "progress", map[string]any{"steps": 2}, nil); err != nil {
		t.Fatal(err)
	}
	if calls = rec.method("tools/call"); strings.Contains(string(calls[1].msg.Params), "_meta") {
		t.Errorf("params without a callback: %s", calls[1].msg.Params)
	}
}

// TestHTTPPanicInCallReleasesTheSession has the progress callback panic
// in the middle of a call, as a bug in the call's path would: the panic
// reaches the caller, the session it left in an unknown state is retired
// rather than kept with a call counted in flight forever, and the next
// call runs on a new one.
func TestHTTPPanicInCallReleasesTheSession(t *testing.T) {
	_, cfg := serveHTTP(t, nil)
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_panic", cfg, nil)
	func() {
		defer func() {
			if r := recover(); r != "progress handler bug" {
				t.Fatalf("recovered %v, want the callback's panic", r)
			}
		}()
		_, _ = p.Call(t.Context(), key, cfg, nil, "progress", map[string]any{"steps": 3},
			func(float64, float64, string) { panic("progress handler bug") })
	}()
	if n, open := mcppool.InFlight(p), mcppool.LeanSessions(p); n != 0 || open != 0 {
		t.Fatalf("after the panic: %d calls in flight on %d open sessions, want none", n, open)
	}
	res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "after"}, nil)
	if err != nil || text(t, res) != "Echo: after" {
		t.Fatalf("the next call: %v %v", res, err)
	}
	if n := mcppool.InFlight(p); n != 0 {
		t.Fatalf("%d calls in flight after the next call", n)
	}
}

// TestHTTPLeanServerAsks has the server ping the client, list its roots
// and ask it for sampling in the middle of a call: each gets the SDK
// client's answer and the call still completes.
func TestHTTPLeanServerAsks(t *testing.T) {
	_, cfg := serveHTTP(t, nil)
	key := keyOf("src_asks", cfg, nil)
	want, err := newSDKPool(t, mcppool.Options{}).Call(t.Context(), key, cfg, nil, "asker", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := newPool(t, mcppool.Options{}).Call(t.Context(), key, cfg, nil, "asker", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if text(t, got) != text(t, want) || !strings.HasPrefix(text(t, got), "ping: ok; roots: 0; sampling: ") {
		t.Errorf("lean %q, sdk %q", text(t, got), text(t, want))
	}
	t.Logf("the server heard: %s", text(t, got))
}

// TestHTTPLeanSessionExpiry has the server forget its sessions: the next
// call gets 404, connects anew once and succeeds.
func TestHTTPLeanSessionExpiry(t *testing.T) {
	var current atomic.Pointer[http.Handler]
	fresh := func() {
		srv := goServer()
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		current.Store(&h)
	}
	fresh()
	var rec recorder
	_, cfg := serveHTTP(t, func(http.Handler) http.Handler {
		return rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	})
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_expiry", cfg, nil)
	if _, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	fresh()
	res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "2"}, nil)
	if err != nil || text(t, res) != "Echo: 2" {
		t.Fatalf("after the server forgot the session: %v %v", res, err)
	}
	if n, m := len(rec.method("initialize")), len(rec.method("tools/call")); n != 2 || m != 3 {
		t.Errorf("%d initialize and %d tools/call, want 2 and 3", n, m)
	}
	if st := p.Stats(); st.Sessions != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestHTTPLeanCancelled cancels a running call: it says so, the server is
// told (notifications/cancelled for the call's id), and the session
// carries on.
func TestHTTPLeanCancelled(t *testing.T) {
	var rec recorder
	_, cfg := serveHTTP(t, rec.wrap)
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_cancel", cfg, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(ctx, key, cfg, nil, "sleep", map[string]any{"millis": 10_000}, nil)
		done <- err
	}()
	if !eventually(5*time.Second, func() bool { return len(rec.method("tools/call")) == 1 }) {
		t.Fatal("the call never reached the server")
	}
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "the call was cancelled") || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	callID := idOf(t, rec.method("tools/call")[0].msg.ID)
	if !eventually(5*time.Second, func() bool { return len(rec.method("notifications/cancelled")) == 1 }) {
		t.Fatal("no notifications/cancelled")
	}
	var params struct {
		RequestID int64  `json:"requestId"`
		Reason    string `json:"reason"`
	}
	_ = json.Unmarshal(rec.method("notifications/cancelled")[0].msg.Params, &params)
	if params.RequestID != callID || params.Reason != "context canceled" {
		t.Errorf("notifications/cancelled %+v for call %d", params, callID)
	}
	res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "after"}, nil)
	if err != nil || text(t, res) != "Echo: after" {
		t.Fatalf("after cancelling: %v %v", res, err)
	}
	if n := len(rec.method("initialize")); n != 1 {
		t.Errorf("%d initialize, want 1", n)
	}
}

// TestHTTPLeanScriptedStream answers a call with a hand-written event
// stream holding what a server may send before its response: comments,
// notifications to ignore, events of another name, data split over lines,
// requests the client must refuse, a response to another id; and it keeps
// the stream open after the response.
func TestHTTPLeanScriptedStream(t *testing.T) {
	replies := make(chan rpc, 2)
	_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m rpc
			_ = json.Unmarshal(body, &m)
			switch {
			case m.Method == "" && len(m.ID) > 0 && r.Method == http.MethodPost:
				replies <- m
				w.WriteHeader(http.StatusAccepted)
			case m.Method == "tools/call" && bytes.Contains(m.Params, []byte(`"scripted"`)):
				scripted(t, w, r, m, replies)
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	p := newPool(t, mcppool.Options{})
	var steps []string
	res, err := p.Call(t.Context(), keyOf("src_scripted", cfg, nil), cfg, nil, "scripted", nil, func(progress, total float64, message string) {
		steps = append(steps, fmt.Sprintf("%v/%v %s", progress, total, message))
	})
	if err != nil || text(t, res) != "scripted" {
		t.Fatalf("%v %v", res, err)
	}
	if diff := cmp.Diff([]string{"1/2 half"}, steps); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// scripted writes the stream of TestHTTPLeanScriptedStream, checking the
// client's replies to the requests in it.
func scripted(t *testing.T, w http.ResponseWriter, r *http.Request, call rpc, replies <-chan rpc) {
	var params struct {
		Meta struct {
			Token string `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(call.Params, &params)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	write := func(s string) {
		_, _ = io.WriteString(w, s)
		w.(http.Flusher).Flush()
	}
	write(": a comment\n\n")
	write("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hi\"}}\n\n")
	write("event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"" + params.Meta.Token + "\",\"progress\":9}}\n\n")
	write("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\r\ndata: \"params\":{\"progressToken\":\"" + params.Meta.Token + "\",\"progress\":1,\"total\":2,\"message\":\"half\"}}\r\n\r\n")
	write("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"someone-else\",\"progress\":5}}\n\n")
	write("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],\"maxTokens\":1}}\n\n")
	write("data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x/unknown\"}\n\n")
	got := map[string]rpc{}
	for range 2 {
		select {
		case m := <-replies:
			got[string(m.ID)] = m
		case <-time.After(5 * time.Second):
			t.Error("the client did not reply to the server's requests")
		}
	}
	if m := got[`"srv-1"`]; m.Error == nil || m.Error.Code != -31001 {
		t.Errorf("reply to sampling: %+v", m)
	}
	if m := got["7"]; m.Error == nil || m.Error.Code != -32601 || m.Error.Message != `method not found: "x/unknown"` {
		t.Errorf("reply to x/unknown: %+v", m)
	}
	write("data: {\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"not yours\"}]}}\n\n")
	write("data: {\"jsonrpc\":\"2.0\",\"id\":" + string(call.ID) + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"scripted\"}]}}\n\n")
	// Hold the stream open: the client must not wait for its end.
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
		t.Error("the client kept reading a stream after its response")
	}
}

// untimed compares server-everything's resources without the time of day
// they were made at ("created at 3:04:05 PM"), in their text or their
// blob: the two paths' calls, one after the other, may read the clock in
// different seconds.
var untimed = cmp.Transformer("untimed", func(r mcp.ResourceContents) mcp.ResourceContents {
	r.Text = createdAt.ReplaceAllString(r.Text, "created at (a time)")
	if len(r.Blob) > 0 {
		r.Blob = []byte(createdAt.ReplaceAllString(string(r.Blob), "created at (a time)"))
	}
	return r
})

var createdAt = regexp.MustCompile(`created at [^\n]*`)

// TestHTTPLeanTypeScriptPeer runs the lean path against the reference
// TypeScript server (server-everything over streamable HTTP), next to the
// SDK's path.
func TestHTTPLeanTypeScriptPeer(t *testing.T) {
	cfg := &sources.MCPConfig{Transport: sources.TransportStreamableHTTP, URL: startEverythingHTTP(t) + "/mcp"}
	key := keyOf("src_ts", cfg, nil)
	lean, sdk := newPool(t, mcppool.Options{}), newSDKPool(t, mcppool.Options{})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "from the lean path"}},
		{"get-tiny-image", nil},
		{"get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 3}},
		{"get-resource-links", map[string]any{"count": 3}},
		{"get-structured-content", map[string]any{"location": "New York"}},
		{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}},
		{"no-such-tool", nil},
	} {
		want, wantErr := sdk.Call(t.Context(), key, cfg, nil, c.tool, c.args, nil)
		got, gotErr := lean.Call(t.Context(), key, cfg, nil, c.tool, c.args, nil)
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Errorf("%s: errors differ:\nsdk  %v\nlean %v", c.tool, wantErr, gotErr)
		}
		if diff := cmp.Diff(want, got, sameResult, untimed); diff != "" {
			t.Errorf("%s (-sdk +lean):\n%s", c.tool, diff)
		}
		if c.tool != "no-such-tool" && (got == nil || len(got.Content) == 0) {
			t.Errorf("%s: %v %v", c.tool, got, gotErr)
		}
	}
	if n := mcppool.LeanSessions(lean); n != 1 {
		t.Errorf("%d lean sessions, want 1", n)
	}
	var steps []float64
	res, err := lean.Call(t.Context(), key, cfg, nil, "trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 4},
		func(progress, _ float64, _ string) { steps = append(steps, progress) })
	if err != nil || !strings.Contains(text(t, res), "completed") {
		t.Fatalf("%v %v", res, err)
	}
	if diff := cmp.Diff([]float64{1, 2, 3, 4}, steps); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// startEverythingHTTP runs server-everything over streamable HTTP on a
// free port and returns its base URL; its process group is killed when
// the test ends.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(testenv.PeerBin(t, "mcp-server-everything"), "streamableHttp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + addr[strings.LastIndexByte(addr, ':')+1:]}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	if !eventually(20*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("server-everything did not listen on %s", addr)
	}
	return "http://" + addr
}
