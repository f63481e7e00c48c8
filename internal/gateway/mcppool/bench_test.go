package mcppool_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/sources"
)

// BenchmarkCallEcho is one echo call through a warm pool. The
// streamable-http cases compare the lean tools/call path ("lean") with the
// SDK's client session ("sdk") against a go-sdk server answering with an
// event stream (its default) and with JSON.
func BenchmarkCallEcho(b *testing.B) {
	b.Run("stdio-everything", func(b *testing.B) { benchEcho(b, everything(b), false) })
	for _, mode := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"streamable-http-go", nil},
		{"streamable-http-go-json", &mcp.StreamableHTTPOptions{JSONResponse: true}},
	} {
		for _, path := range []string{"lean", "sdk"} {
			b.Run(mode.name+"/"+path, func(b *testing.B) {
				_, cfg := serveHTTPWith(b, mode.opts, nil)
				benchEcho(b, cfg, path == "sdk")
			})
		}
	}
}

// BenchmarkCallRich is one call returning every kind of content.
func BenchmarkCallRich(b *testing.B) {
	for _, path := range []string{"lean", "sdk"} {
		b.Run("streamable-http-go/"+path, func(b *testing.B) {
			_, cfg := serveHTTP(b, nil)
			benchCall(b, cfg, path == "sdk", "rich", nil)
		})
	}
}

// BenchmarkCallCanned isolates the client's side of a call: the session
// is a real go-sdk one, but its tools/call POSTs get a fixed answer (the
// echo result under the request's id) from a handler that does almost
// nothing, so what is left is the pool, net/http and the path under test.
func BenchmarkCallCanned(b *testing.B) {
	for _, sse := range []bool{true, false} {
		for _, path := range []string{"lean", "sdk"} {
			name := map[bool]string{true: "event-stream", false: "json"}[sse] + "/" + path
			b.Run(name, func(b *testing.B) {
				_, cfg := serveHTTP(b, func(h http.Handler) http.Handler { return canned(h, sse) })
				benchEcho(b, cfg, path == "sdk")
			})
		}
	}
}

// canned answers tools/call itself and hands anything else to h.
func canned(h http.Handler, sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		var call struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &call)
		answer := `{"jsonrpc":"2.0","id":` + string(call.ID) + `,"result":{"content":[{"type":"text","text":"Echo: bench"}]}}`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	})
}

func benchEcho(b *testing.B, cfg *sources.MCPConfig, sdk bool) {
	benchCall(b, cfg, sdk, "echo", map[string]any{"message": "bench"})
}

func benchCall(b *testing.B, cfg *sources.MCPConfig, sdk bool, tool string, args map[string]any) {
	p := newPool(b, mcppool.Options{})
	if sdk {
		mcppool.SetSDKCalls(p)
	}
	key := keyOf("src_bench", cfg, nil)
	if _, err := p.Call(b.Context(), key, cfg, nil, tool, args, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Call(b.Context(), key, cfg, nil, tool, args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
