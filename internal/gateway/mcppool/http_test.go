package mcppool_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/sources"
)

type echoIn struct {
	Message string `json:"message"`
}

type sleepIn struct {
	Millis int `json:"millis"`
}

// richContent is what the "rich" tool returns.
var richContent = []mcp.Content{
	&mcp.TextContent{Text: "hi"},
	&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G', 0, 1}, MIMEType: "image/png"},
	&mcp.AudioContent{Data: []byte("RIFF\x00\x01WAVE"), MIMEType: "audio/wav"},
	&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc/1", MIMEType: "text/plain", Text: "body"}},
	&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://blob/1", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 255}}},
	&mcp.ResourceLink{URI: "test://doc/2", Name: "doc-2", Title: "Doc 2", Description: "a <linked> doc & more", MIMEType: "text/markdown",
		Size: new(int64(42)), Meta: mcp.Meta{"k": "v"}, Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5},
		Icons: []mcp.Icon{{Source: "https://example.com/i.png", MIMEType: "image/png", Sizes: []string{"48x48"}}}},
	&mcp.TextContent{Text: "ünïcödé \u2028 \"quoted\" <b>", Meta: mcp.Meta{"n": 1.5, "nested": map[string]any{"a": []any{true, nil}}}},
}

type progressIn struct {
	Steps int `json:"steps"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

// goServer is an in-test go-sdk server with echo, sleep and rich tools.
func goServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Millis) * time.Millisecond):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "rich"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: richContent, Meta: mcp.Meta{"trace": "t-1"}, StructuredContent: map[string]any{"n": 1.0, "list": []any{"a"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("the tool failed on purpose")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("0123456789", in.Bytes/10)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			for i := 1; i <= in.Steps; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	// asker asks the client things in the middle of the call and says
	// what it answered.
	mcp.AddTool(s, &mcp.Tool{Name: "asker"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		var said []string
		if err := req.Session.Ping(ctx, nil); err != nil {
			said = append(said, "ping: "+err.Error())
		} else {
			said = append(said, "ping: ok")
		}
		if roots, err := req.Session.ListRoots(ctx, nil); err != nil {
			said = append(said, "roots: "+err.Error())
		} else {
			said = append(said, fmt.Sprintf("roots: %d", len(roots.Roots)))
		}
		if _, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1}); err != nil {
			said = append(said, "sampling: "+err.Error())
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(said, "; ")}}}, nil, nil
	})
	return s
}

// serveHTTP serves the go-sdk server on a streamable HTTP endpoint; wrap,
// when set, wraps the handler.
func serveHTTP(t testing.TB, wrap func(http.Handler) http.Handler) (*httptest.Server, *sources.MCPConfig) {
	t.Helper()
	return serveHTTPWith(t, nil, wrap)
}

// serveHTTPWith is serveHTTP with the handler's options.
func serveHTTPWith(t testing.TB, opts *mcp.StreamableHTTPOptions, wrap func(http.Handler) http.Handler) (*httptest.Server, *sources.MCPConfig) {
	t.Helper()
	srv := goServer()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, &sources.MCPConfig{Transport: sources.TransportStreamableHTTP, URL: ts.URL + "/mcp"}
}

func TestHTTPCallTimeoutNamed(t *testing.T) {
	_, cfg := serveHTTP(t, nil)
	p := newPool(t, mcppool.Options{CallTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := p.Call(t.Context(), keyOf("src_slow", cfg, nil), cfg, nil, "sleep", map[string]any{"millis": 3000}, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "within 300ms") || !strings.Contains(err.Error(), "src_slow") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timed out after %s", d)
	}
	// The session survives a slow tool.
	res, err := p.Call(t.Context(), keyOf("src_slow", cfg, nil), cfg, nil, "echo", map[string]any{"message": "x"}, nil)
	if err != nil || text(t, res) != "Echo: x" {
		t.Fatalf("after timeout: %v %v", res, err)
	}
}

func TestHTTPContentPassesThrough(t *testing.T) {
	_, cfg := serveHTTP(t, nil)
	p := newPool(t, mcppool.Options{})
	res, err := p.Call(t.Context(), keyOf("src_rich", cfg, nil), cfg, nil, "rich", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(richContent, res.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
}

func TestHTTPHeaderFromAuthOnly(t *testing.T) {
	const secret = "s3cr3t-value"
	_, cfg := serveHTTP(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Api-Key") != secret {
				http.Error(w, "bad key", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	p := newPool(t, mcppool.Options{})
	auth := &sources.Auth{}
	auth.SetHeader("X-Api-Key", secret)
	res, err := p.Call(t.Context(), keyOf("src_auth", cfg, auth), cfg, auth, "echo", map[string]any{"message": "in"}, nil)
	if err != nil || text(t, res) != "Echo: in" {
		t.Fatalf("with the key: %v %v", res, err)
	}
	wrong := &sources.Auth{}
	wrong.SetHeader("X-Api-Key", "wrong-"+secret)
	_, err = p.Call(t.Context(), keyOf("src_auth", cfg, wrong), cfg, wrong, "echo", map[string]any{"message": "in"}, nil)
	if err == nil {
		t.Fatal("a wrong key worked")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the secret: %v", err)
	}
	_, err = p.Call(t.Context(), keyOf("src_auth", cfg, nil), cfg, nil, "echo", map[string]any{"message": "in"}, nil)
	if err == nil {
		t.Fatal("no key worked")
	}
	t.Logf("without the key: %v", err)
}

func TestHTTPServerRestartReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	start := func(ln net.Listener) *http.Server {
		srv := goServer()
		hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
		go func() { _ = hs.Serve(ln) }()
		return hs
	}
	hs := start(ln)
	cfg := &sources.MCPConfig{Transport: sources.TransportStreamableHTTP, URL: "http://" + addr + "/mcp"}
	p := newPool(t, mcppool.Options{})
	key := keyOf("src_restart", cfg, nil)
	if _, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	_ = hs.Close()
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs2 := start(ln2)
	t.Cleanup(func() { _ = hs2.Close() })
	res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "2"}, nil)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if text(t, res) != "Echo: 2" {
		t.Errorf("got %q", text(t, res))
	}
	// With the server gone for good, the error says what happened.
	_ = hs2.Close()
	_, err = p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "src_restart") {
		t.Fatalf("with the server down: %v", err)
	}
	t.Logf("with the server down: %v", err)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a refused connection reads as a timeout: %v", err)
	}
}
