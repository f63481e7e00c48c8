package mcp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/mcp"
	"github.com/toolgate/toolgate/internal/testenv"
)

// freePort returns a 127.0.0.1 port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverything runs server-everything in mode (streamableHttp or sse) on
// a free port and returns its base URL; the whole process group is killed
// when the test ends.
func startEverything(t *testing.T, mode string) string {
	t.Helper()
	port := freePort(t)
	marker := newMarker(t)
	cmd := exec.Command(testenv.PeerBin(t, "mcp-server-everything"), mode)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + strconv.Itoa(port), markerVar + "=" + marker}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server-everything %s: %v", mode, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		deadline := time.Now().Add(3 * time.Second)
		for len(leftovers(marker)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		assertNoLeftovers(t, marker)
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case <-exited:
			t.Fatalf("server-everything %s exited: %s", mode, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen on %s within 20s", mode, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestRemoteEverything(t *testing.T) {
	t.Parallel()
	tests := []struct {
		transport, mode, path string
	}{
		{sources.TransportStreamableHTTP, "streamableHttp", "/mcp"},
		{sources.TransportSSE, "sse", "/sse"},
	}
	for _, tc := range tests {
		t.Run(tc.transport, func(t *testing.T) {
			t.Parallel()
			url := startEverything(t, tc.mode) + tc.path
			cfg := &sources.MCPConfig{Transport: tc.transport, URL: url}
			d, err, _ := discover(t, context.Background(), cfg, mcp.Options{HTTPClient: &http.Client{}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(everythingTools, toolNames(d)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if d.BaseURL != url || !strings.HasPrefix(d.Server, "mcp-servers/everything ") {
				t.Errorf("BaseURL %q, Server %q", d.BaseURL, d.Server)
			}
			echo := toolByName(t, d, "echo")
			if echo.DefaultApproval != sources.ApprovalAuto || !strings.Contains(string(echo.InputSchema), `"required":["message"]`) {
				t.Errorf("echo = %+v", echo)
			}
			again, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if again.SpecHash != d.SpecHash {
				t.Errorf("SpecHash %s then %s", d.SpecHash, again.SpecHash)
			}
		})
	}
}

// TestRemoteHeaders puts a recording reverse proxy in front of
// server-everything and checks every request to it carried cfg.Headers.
func TestRemoteHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		transport, mode, path string
		wantMethods           []string
	}{
		{sources.TransportStreamableHTTP, "streamableHttp", "/mcp", []string{"POST"}},
		{sources.TransportSSE, "sse", "/sse", []string{"GET", "POST"}},
	}
	for _, tc := range tests {
		t.Run(tc.transport, func(t *testing.T) {
			t.Parallel()
			upstream, err := url.Parse(startEverything(t, tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu   sync.Mutex
				seen []string
			)
			proxy := httputil.NewSingleHostReverseProxy(upstream)
			proxy.FlushInterval = -1
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s %s key=%q tenant=%q", r.Method, r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("X-Tenant")))
				mu.Unlock()
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)

			cfg := &sources.MCPConfig{
				Transport: tc.transport,
				URL:       srv.URL + tc.path,
				Headers:   map[string]string{"X-Api-Key": "secret-123", "X-Tenant": "acme"},
			}
			d, err, _ := discover(t, context.Background(), cfg, mcp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Tools) != len(everythingTools) {
				t.Errorf("%d tools through the proxy", len(d.Tools))
			}
			mu.Lock()
			defer mu.Unlock()
			methods := map[string]bool{}
			for _, s := range seen {
				methods[strings.Fields(s)[0]] = true
				if !strings.HasSuffix(s, `key="secret-123" tenant="acme"`) {
					t.Errorf("request without the configured headers: %s", s)
				}
			}
			for _, m := range tc.wantMethods {
				if !methods[m] {
					t.Errorf("no %s request reached the proxy: %v", m, seen)
				}
			}
			t.Logf("requests: %v", seen)
		})
	}
}

func TestRemoteFailures(t *testing.T) {
	t.Parallel()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>")
	}))
	t.Cleanup(html.Close)
	json := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	t.Cleanup(json.Close)
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(status.Close)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server notice the
		// client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
			t.Errorf("the client never gave up its %s request", r.Method)
		}
	}))
	t.Cleanup(hang.Close)
	closed := "127.0.0.1:" + strconv.Itoa(freePort(t))
	streamable := startEverything(t, "streamableHttp")
	sse := startEverything(t, "sse")

	tests := []struct {
		name      string
		transport string
		url       string
		opts      mcp.Options
		want      string
	}{
		{"html page, streamable", sources.TransportStreamableHTTP, html.URL + "/mcp", mcp.Options{}, "the URL answered with an HTML page, not an MCP endpoint (" + html.URL + "/mcp)"},
		{"html page, sse", sources.TransportSSE, html.URL + "/sse", mcp.Options{}, "the URL answered with an HTML page, not an MCP endpoint (" + html.URL + "/sse)"},
		{"connection refused, streamable", sources.TransportStreamableHTTP, "http://" + closed + "/mcp", mcp.Options{}, "nothing accepts connections at " + closed + " (connection refused)"},
		{"connection refused, sse", sources.TransportSSE, "http://" + closed + "/sse", mcp.Options{}, "nothing accepts connections at " + closed + " (connection refused)"},
		{"json that is not MCP", sources.TransportStreamableHTTP, json.URL + "/mcp", mcp.Options{}, "the URL answered with something that is not an MCP message"},
		{"sse server, streamable transport", sources.TransportStreamableHTTP, sse + "/sse", mcp.Options{}, "the URL answered 404 Not Found (an HTML page), so " + sse + "/sse is not a streamable HTTP MCP endpoint"},
		{"streamable server, sse transport", sources.TransportSSE, streamable + "/mcp", mcp.Options{}, "the URL answered 400 Bad Request to the SSE stream request, so " + streamable + "/mcp is not an SSE endpoint (SSE servers usually serve /sse; for a streamable HTTP server choose the streamable-http transport)"},
		{"401", sources.TransportStreamableHTTP, status.URL + "/mcp", mcp.Options{}, "the server refused the request with 401 Unauthorized: check the headers that carry credentials"},
		{"401, sse", sources.TransportSSE, status.URL + "/sse", mcp.Options{}, "the server refused the request with 401 Unauthorized: check the headers that carry credentials"},
		{"wrong path", sources.TransportStreamableHTTP, streamable + "/nope?token=hidden", mcp.Options{}, "the URL answered 404 Not Found (an HTML page), so " + streamable + "/nope is not a streamable HTTP MCP endpoint (those usually serve /mcp; for an SSE server choose the sse transport)"},
		{"private address refused by the outbound guard", sources.TransportStreamableHTTP, streamable + "/mcp", mcp.Options{HTTPClient: netguard.NewClient(netguard.Options{})}, streamable + "/mcp: 127.0.0.1 resolves to 127.0.0.1"},
		{"private address refused by the outbound guard, sse", sources.TransportSSE, sse + "/sse", mcp.Options{HTTPClient: netguard.NewClient(netguard.Options{})}, sse + "/sse: 127.0.0.1 resolves to 127.0.0.1"},
		{"no answer", sources.TransportStreamableHTTP, hang.URL + "/mcp", mcp.Options{InitTimeout: time.Second}, "the server did not answer initialize within 1s"},
		{"no answer, sse", sources.TransportSSE, hang.URL + "/sse", mcp.Options{InitTimeout: time.Second}, "the server did not answer initialize within 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := &sources.MCPConfig{Transport: tc.transport, URL: tc.url}
			d, err, elapsed := discover(t, context.Background(), cfg, tc.opts)
			if err == nil {
				t.Fatalf("no error; found %v", toolNames(d))
			}
			t.Logf("error: %v", err)
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error:\n got %q\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hidden") {
				t.Errorf("the error shows the URL's query: %q", err)
			}
			if elapsed > 5*time.Second {
				t.Errorf("took %s", elapsed)
			}
		})
	}
}

// TestRemoteHeadersStayOnOrigin: an SSE endpoint event that points at
// another host does not get the source's headers.
func TestRemoteHeadersStayOnOrigin(t *testing.T) {
	t.Parallel()
	posted := make(chan http.Header, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posted <- r.Header.Clone()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(other.Close)
	streamed := make(chan http.Header, 4)
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamed <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(sse.Close)
	cfg := &sources.MCPConfig{Transport: sources.TransportSSE, URL: sse.URL + "/sse", Headers: map[string]string{"X-Api-Key": "secret-123"}}
	_, err, _ := discover(t, context.Background(), cfg, mcp.Options{InitTimeout: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("discovery against a fake SSE server succeeded")
	}
	if h := <-streamed; h.Get("X-Api-Key") != "secret-123" {
		t.Errorf("the SSE GET to the configured origin lacked the header")
	}
	select {
	case h := <-posted:
		if v := h.Get("X-Api-Key"); v != "" {
			t.Errorf("the header went to another origin: X-Api-Key=%q", v)
		}
	default:
		t.Error("no POST reached the endpoint's host")
	}
}
