package handlers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawSession speaks Streamable HTTP by hand, to see what goes over the
// wire: which answers come as application/json (the fast path) and which
// as an SSE stream (the SDK).
type rawSession struct {
	t      *testing.T
	url    string
	key    string
	id     string
	accept string
}

// openRaw initializes a session of protocol 2025-11-25 at url with key.
func openRaw(t *testing.T, url, key string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: url, key: key, accept: "application/json, text/event-stream"}
	resp := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", resp.status, resp.body)
	}
	s.id = resp.header.Get("Mcp-Session-Id")
	if s.id == "" {
		t.Fatal("initialize answered no Mcp-Session-Id")
	}
	if r := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return s
}

type rawResponse struct {
	status      int
	header      http.Header
	contentType string
	body        []byte
	// message is the JSON-RPC response: the body, or the SSE event that
	// answers the request.
	message map[string]any
}

func (s *rawSession) post(body string) rawResponse {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", s.accept)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := rawResponse{status: resp.StatusCode, header: resp.Header, contentType: resp.Header.Get("Content-Type")}
	out.body, _ = io.ReadAll(resp.Body)
	switch {
	case strings.HasPrefix(out.contentType, "application/json"):
		if err := json.Unmarshal(out.body, &out.message); err != nil {
			s.t.Fatalf("JSON answer: %v: %s", err, out.body)
		}
	case strings.HasPrefix(out.contentType, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(out.body))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil && m["id"] != nil {
				out.message = m
			}
		}
	}
	return out
}

// call sends tools/call with name and args under id, with meta when set.
func (s *rawSession) call(id any, name string, args any, meta map[string]any) rawResponse {
	s.t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	return s.post(string(b))
}

// TestMCPFastPath checks that plain tools/call requests are answered as
// application/json with exactly the result the SDK path gives (the same
// request with a progress token goes through the SDK and streams), in both
// modes, for a result, a not-found and arguments that fail the schema;
// and that what the fast path must not take still reaches the SDK.
func TestMCPFastPath(t *testing.T) {
	f := newMCPFixture(t)
	search := openRaw(t, f.srv.URL+"/mcp", f.acmeKey.Key)
	direct := openRaw(t, f.srv.URL+"/mcp?mode=direct", f.acmeDirect.Key)

	cases := []struct {
		name    string
		s       *rawSession
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"search call", search, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 42}}, false, "note 42"},
		{"search not found", search, "call_tool", map[string]any{"path": "notes.notes.get_nte", "arguments": map[string]any{}}, true, "not_found"},
		{"search invalid", search, "call_tool", map[string]any{"path": "notes.notes.create_note", "arguments": map[string]any{"body": map[string]any{"text": 5}}}, true, "/body/text"},
		{"search no path", search, "call_tool", map[string]any{"arguments": map[string]any{}}, true, "path is required"},
		{"search padded path", search, "call_tool", map[string]any{"path": " notes.notes.get_note\t", "arguments": map[string]any{"id": 9}}, false, "note 9"},
		{"search path only", search, "call_tool", map[string]any{"path": "notes.notes.get_note"}, true, "/id"},
		{"direct call", direct, "notes__notes__get_note", map[string]any{"id": 7}, false, "note 7"},
		{"direct invalid", direct, "notes__notes__get_note", map[string]any{"id": "x"}, true, "/id"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fast := tc.s.call(100+i, tc.tool, tc.args, map[string]any{"client/trace": "kept"})
			if fast.status != http.StatusOK || !strings.HasPrefix(fast.contentType, "application/json") {
				t.Fatalf("fast path: %d %s %s", fast.status, fast.contentType, fast.body)
			}
			if fast.message["id"] != float64(100+i) || fast.message["jsonrpc"] != "2.0" {
				t.Fatalf("envelope: %s", fast.body)
			}
			sdk := tc.s.call(fmt.Sprintf("p-%d", i), tc.tool, tc.args, map[string]any{"progressToken": "tok"})
			if sdk.status != http.StatusOK || !strings.HasPrefix(sdk.contentType, "text/event-stream") || sdk.message == nil {
				t.Fatalf("SDK path: %d %s %s", sdk.status, sdk.contentType, sdk.body)
			}
			if sdk.message["id"] != fmt.Sprintf("p-%d", i) {
				t.Fatalf("SDK envelope: %s", sdk.body)
			}
			if !reflect.DeepEqual(fast.message["result"], sdk.message["result"]) {
				t.Fatalf("results differ:\nfast %v\nSDK  %v", fast.message["result"], sdk.message["result"])
			}
			result, _ := json.Marshal(fast.message["result"])
			isError, _ := fast.message["result"].(map[string]any)["isError"].(bool)
			if isError != tc.isError || !strings.Contains(string(result), tc.want) {
				t.Fatalf("result: %s", result)
			}
		})
	}

	// Each case's fast call took its connection over from net/http, and
	// its SDK call gave it back. Calls in a row are answered by fastconn's
	// loop, and the same.
	if st := f.loops.Stats(); st.TakenOver < int64(len(cases)) || st.GivenBack < int64(len(cases)) {
		t.Errorf("fastconn %+v: the fast calls did not take their connections over", st)
	}
	before := f.loops.Stats().Served
	for i := range 3 {
		r := search.call(200+i, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": i}}, nil)
		if r.status != http.StatusOK || r.message["id"] != float64(200+i) || !strings.Contains(string(r.body), fmt.Sprintf("note %d", i)) {
			t.Fatalf("call %d in a row: %d %s", i, r.status, r.body)
		}
	}
	if served := f.loops.Stats().Served - before; served != 2 {
		t.Errorf("the loop answered %d of 3 calls in a row, want the 2 after the first", served)
	}

	t.Run("escaped strings", func(t *testing.T) {
		// JSON escapes in the method and the tool's name spell the same
		// strings: the fast path reads them as the SDK would.
		r := search.post(`{"jsonrpc":"2.0","id":12,"method":"tools\/call","params":{"name":"call\u005ftool","arguments":{"path":"notes.notes.get_note","arguments":{"id":5}}}}`)
		if r.contentType != "application/json" || !strings.Contains(string(r.body), "note 5") {
			t.Fatalf("%d %s %s", r.status, r.contentType, r.body)
		}
	})

	t.Run("handed to the SDK", func(t *testing.T) {
		// Other tools and methods, an SSE-only client, and a batch.
		if r := search.call(1, "search_tools", map[string]any{"query": "note"}, nil); !strings.HasPrefix(r.contentType, "text/event-stream") || !strings.Contains(string(r.body), "get_note") {
			t.Fatalf("search_tools: %s %s", r.contentType, r.body)
		}
		if r := search.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.HasPrefix(r.contentType, "text/event-stream") || !strings.Contains(string(r.body), "call_tool") {
			t.Fatalf("tools/list: %s %s", r.contentType, r.body)
		}
		if r := direct.call(3, "get_approval", map[string]any{"approval_id": "apr_nope"}, nil); !strings.HasPrefix(r.contentType, "text/event-stream") || !strings.Contains(string(r.body), "not_found") {
			t.Fatalf("get_approval: %s %s", r.contentType, r.body)
		}
		if r := direct.call(4, "no_such_tool", map[string]any{}, nil); !strings.HasPrefix(r.contentType, "text/event-stream") || !strings.Contains(string(r.body), "unknown tool") {
			t.Fatalf("unknown direct tool: %s %s", r.contentType, r.body)
		}
		sse := *search
		sse.accept = "text/event-stream"
		if r := sse.call(5, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 1}}, nil); !strings.HasPrefix(r.contentType, "text/event-stream") || !strings.Contains(string(r.body), "note 1") {
			t.Fatalf("SSE-only client: %s %s", r.contentType, r.body)
		}
		if r := search.post(`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`); !strings.HasPrefix(r.contentType, "text/event-stream") || !strings.Contains(string(r.body), `"id":6`) {
			t.Fatalf("batch: %d %s", r.status, r.body)
		}
		if r := search.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2}}},"extra":1}`); !strings.HasPrefix(r.contentType, "text/event-stream") {
			t.Fatalf("unknown field: %s %s", r.contentType, r.body)
		}
		// A repeated key, and a key written with escapes, are the SDK's to
		// read: it decides which value counts.
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":70,"method":"tools/call","params":{"name":"call_tool","name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2}}}}`,
			`{"jsonrpc":"2.0","id":71,"\u006dethod":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2}}}}`,
			`{"jsonrpc":"2.0","id":72,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2}}},"params":{}}`,
			// Deeper than the SDK's decoder goes: it refuses the request.
			`{"jsonrpc":"2.0","id":73,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2,"deep":` +
				strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}}}`,
			// Space JSON does not allow before the message: the SDK refuses it.
			"\v" + `{"jsonrpc":"2.0","id":74,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2}}}}`,
			"\u00a0" + `{"jsonrpc":"2.0","id":75,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":2}}}}`,
		} {
			if r := search.post(body); r.status == http.StatusOK && strings.HasPrefix(r.contentType, "application/json") {
				t.Fatalf("answered by the fast path: %s\n%s", body, r.body)
			}
		}
		// Keys spelled in another case mean nothing to the SDK, so they
		// must not steer the fast path: no method is a response (202,
		// nothing runs), and a "Name" beside "name" is not the tool.
		before := len(f.api.requests())
		if r := search.post(`{"jsonrpc":"2.0","id":8,"Method":"tools/call","params":{"name":"call_tool","arguments":{"path":"notes.notes.get_note","arguments":{"id":3}}}}`); r.status != http.StatusAccepted {
			t.Fatalf(`"Method": %d %s %s`, r.status, r.contentType, r.body)
		}
		if r := search.post(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_tools","Name":"call_tool","arguments":{"query":"note","path":"notes.notes.get_note","arguments":{"id":4}}}}`); !strings.HasPrefix(r.contentType, "text/event-stream") || strings.Contains(string(r.body), "note 4") {
			t.Fatalf(`"Name": %s %s`, r.contentType, r.body)
		}
		if got := len(f.api.requests()); got != before {
			t.Fatalf("case-mismatched requests reached the upstream: %v", f.api.requests()[before:])
		}
	})

	t.Run("limits ahead of the router", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"call_tool","arguments":{"path":"` + strings.Repeat("a", 1<<20) + `"}}}`
		if r := search.post(big); r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a body over 1 MiB: %d %.200s", r.status, r.body)
		}
		req, _ := http.NewRequest(http.MethodPut, f.srv.URL+"/mcp", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+f.acmeKey.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, POST, DELETE" {
			t.Fatalf("PUT /mcp: %d %v", resp.StatusCode, resp.Header)
		}
	})

	t.Run("unknown session", func(t *testing.T) {
		gone := *search
		gone.id = "0123456789abcdef0123456789abcdef"
		if r := gone.call(10, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 5}}, nil); r.status != http.StatusNotFound {
			t.Fatalf("unknown session: %d %s", r.status, r.body)
		}
	})

	t.Run("another key's session", func(t *testing.T) {
		other := *search
		other.key = f.globexKey.Key
		if r := other.call(8, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 3}}, nil); r.status != http.StatusNotFound {
			t.Fatalf("Globex's key on Acme's session: %d %s", r.status, r.body)
		}
	})
}

// TestMCPFastPathCancel cancels a fast-path call in flight with
// notifications/cancelled: the upstream request is stopped, and a second
// request reusing the id while it runs is refused.
func TestMCPFastPathCancel(t *testing.T) {
	f := newMCPFixture(t)
	var started, stopped atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		select {
		case <-r.Context().Done():
			stopped.Add(1)
		case <-time.After(20 * time.Second):
			fmt.Fprint(w, `{"late": true}`)
		}
	}))
	t.Cleanup(slow.Close)
	spec := fmt.Sprintf(`{"openapi": "3.0.3", "info": {"title": "Slow", "version": "1"}, "servers": [{"url": %q}],
		"paths": {"/wait": {"get": {"operationId": "wait", "responses": {"200": {"description": "late"}}}}}}`, slow.URL)
	createSource(t, f.owner, wsSources, map[string]any{"name": "Slow", "type": "openapi", "config": map[string]any{"spec": json.RawMessage(spec)}}, 201)

	s := openRaw(t, f.srv.URL+"/mcp", f.acmeKey.Key)
	done := make(chan rawResponse, 1)
	go func() {
		done <- s.call(41, "call_tool", map[string]any{"path": "slow.wait", "arguments": map[string]any{}}, nil)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for started.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow upstream never saw the call")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := s.call(41, "call_tool", map[string]any{"path": "slow.wait", "arguments": map[string]any{}}, nil); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "duplicate in-flight request ID") {
		t.Fatalf("duplicate id: %d %s", r.status, r.body)
	}
	if r := s.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}}`); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	select {
	case r := <-done:
		if !strings.Contains(string(r.body), "cancelled") {
			t.Fatalf("cancelled call answered: %s", r.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
	if started.Load() != 1 {
		t.Fatalf("the upstream saw %d calls, want 1 (the duplicate must not run)", started.Load())
	}
	deadline = time.Now().Add(5 * time.Second)
	for stopped.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the upstream request was not stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
