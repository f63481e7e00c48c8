package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type messageIn struct {
	Message string `json:"message" jsonschema:"what to echo"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// stdioServer runs the test binary as an MCP stdio server (serverEnv
// set): echo, and crash, which dies mid-call with a message on stderr.
// Each start appends a line to $STARTS_LOG.
func stdioServer() {
	if log := os.Getenv("STARTS_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, "start")
			f.Close()
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "crashy", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in messageIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "fatal: the crash tool brings the server down")
		os.Exit(3)
		return nil, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// mcpHTTP is an in-test go-sdk server on a streamable HTTP endpoint.
type mcpHTTP struct {
	*httptest.Server
	URL string
	// calls counts tools/call requests that reached a tool.
	calls atomic.Int64
}

type hangIn struct{}

type bigIn struct {
	Bytes int `json:"bytes"`
}

// newMCPHTTP serves echo (with structured output), hang (answers when the
// call is cancelled), big (a text of the given size), whoami (the
// Authorization header it received, echoed as careless servers do) and
// steps (three progress notifications, then a result).
func newMCPHTTP(t testing.TB) *mcpHTTP {
	t.Helper()
	m := &mcpHTTP{}
	s := mcp.NewServer(&mcp.Implementation{Name: "in-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the message back."}, func(_ context.Context, _ *mcp.CallToolRequest, in messageIn) (*mcp.CallToolResult, echoOut, error) {
		m.calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, echoOut{Echo: in.Message}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ hangIn) (*mcp.CallToolResult, any, error) {
		m.calls.Add(1)
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answers a long text."}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		m.calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("y", in.Bytes)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Echoes the Authorization header."}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		m.calls.Add(1)
		got := ""
		if req.Extra != nil {
			got = req.Extra.Header.Get("Authorization")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "you sent " + got},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://whoami", MIMEType: "text/plain", Text: "header: " + got}},
			&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
		}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "steps", Description: "Reports progress three times."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		m.calls.Add(1)
		token := req.Params.GetProgressToken()
		for i := 1; i <= 3; i++ {
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
			}
			time.Sleep(20 * time.Millisecond)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	m.Server = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	m.URL = m.Server.URL + "/mcp"
	t.Cleanup(m.Close)
	return m
}
