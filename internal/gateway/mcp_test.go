package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

const mcpToken = "mcp-canary-token-5c1e0b"

func TestMCPRemote(t *testing.T) {
	e := newEnv(t)
	m := newMCPHTTP(t)
	src := e.source(e.a, &e.a.ws, "Remote", sources.TypeMCP, map[string]any{"transport": "streamable-http", "url": m.URL, "callTimeoutSeconds": 1})
	e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace, credentials.Auth{Type: credentials.TypeBearer}, credentials.Secret{Value: mcpToken})
	c := e.a.caller()

	res := e.call(c, "remote.echo", `{"message": "hi"}`)
	if res.IsError || text(res) != "Echo: hi" {
		t.Errorf("echo: %s", text(res))
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"echo":"hi"}` {
		t.Errorf("structured content %s", b)
	}

	// The server echoes the credential: text and embedded resources are
	// scrubbed, the image passes through untouched.
	res = e.call(c, "remote.whoami", `{}`)
	if len(res.Content) != 3 {
		t.Fatalf("whoami content %d parts", len(res.Content))
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "you sent "+sources.Mask {
		t.Errorf("text %q", got)
	}
	if got := res.Content[1].(*mcp.EmbeddedResource).Resource.Text; got != "header: "+sources.Mask {
		t.Errorf("resource %q", got)
	}
	if img := res.Content[2].(*mcp.ImageContent); !bytes.Equal(img.Data, []byte{0x89, 'P', 'N', 'G'}) || img.MIMEType != "image/png" {
		t.Errorf("image %+v", img)
	}

	// A long answer is cut at the limit and says so.
	res = e.call(c, "remote.big", `{"bytes": 3145728}`)
	if got := text(res); len(got) > gateway.DefaultMaxResultBytes+200 || !strings.Contains(got, "[truncated: the upstream's text came to 3145728 bytes; showed the first 1048576]") {
		t.Errorf("big: %d bytes, ends %q", len(got), got[max(0, len(got)-100):])
	}

	// Progress is relayed.
	var mu sync.Mutex
	var steps []string
	res, err := e.gw.Call(t.Context(), c, "remote.steps", nil, func(p, total float64, msg string) {
		mu.Lock()
		steps = append(steps, strconv.FormatFloat(p, 'f', -1, 64)+"/"+strconv.FormatFloat(total, 'f', -1, 64)+" "+msg)
		mu.Unlock()
	})
	if err != nil || text(res) != "done" {
		t.Fatalf("steps: %v %s", err, text(res))
	}
	mu.Lock()
	if len(steps) < 2 || steps[0] != "1/3 step 1" || steps[1] != "2/3 step 2" {
		t.Errorf("progress %q", steps)
	}
	mu.Unlock()

	// Arguments that do not fit never reach the server.
	before := m.calls.Load()
	_, err = e.gw.Call(t.Context(), c, "remote.echo", json.RawMessage(`{"message": 5}`), nil)
	var inv *gateway.InvalidArgumentsError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0] != "/message: must be string, not number" {
		t.Errorf("invalid: %v", err)
	}
	if m.calls.Load() != before {
		t.Error("an invalid call reached the server")
	}

	// A tool that hangs runs into the source's call timeout, named.
	start := time.Now()
	res = e.call(c, "remote.hang", `{}`)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	if !res.IsError || !strings.Contains(text(res), "did not answer tools/call \"hang\" within 1s (the source's call timeout") {
		t.Errorf("hang: %s", text(res))
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeTimeout || !strings.Contains(row.Error, "within 1s") {
		t.Errorf("audit row %+v", row)
	}
	// The session survives it.
	if res := e.call(c, "remote.echo", `{"message": "again"}`); text(res) != "Echo: again" {
		t.Errorf("after the timeout: %s", text(res))
	}
	for _, r := range e.rec.all() {
		if strings.Contains(r.Error, mcpToken) || strings.Contains(string(r.Arguments), mcpToken) {
			t.Errorf("audit row shows the token: %+v", r)
		}
	}
}

func TestMCPStdioEverything(t *testing.T) {
	e := newEnv(t)
	before := children()
	src := e.source(e.a, &e.a.ws, "Everything", sources.TypeMCP, map[string]any{"transport": "stdio",
		"command": testenv.PeerBin(t, "mcp-server-everything"), "args": []string{"stdio"}})
	// A credential of a stdio server becomes its environment.
	e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace,
		credentials.Auth{Type: credentials.TypeHeaders, Headers: []string{"EVERYTHING_TOKEN"}},
		credentials.Secret{Headers: map[string]string{"EVERYTHING_TOKEN": "stdio-canary-8d2f61"}})
	c := e.a.caller()

	if res := e.call(c, "everything.echo", `{"message": "hello"}`); res.IsError || text(res) != "Echo: hello" {
		t.Errorf("echo: %s", text(res))
	}
	var mu sync.Mutex
	var n int
	res, err := e.gw.Call(t.Context(), c, e.toolPath(src, "trigger-long-running-operation"), json.RawMessage(`{"duration": 0.4, "steps": 4}`),
		func(float64, float64, string) { mu.Lock(); n++; mu.Unlock() })
	if err != nil || res.IsError || !strings.Contains(text(res), "completed") {
		t.Fatalf("long running: %v %s", err, text(res))
	}
	mu.Lock()
	if n < 3 {
		t.Errorf("%d progress notifications for 4 steps", n)
	}
	mu.Unlock()
	res = e.call(c, e.toolPath(src, "get-tiny-image"), `{}`)
	var image *mcp.ImageContent
	for _, part := range res.Content {
		if img, ok := part.(*mcp.ImageContent); ok {
			image = img
		}
	}
	if image == nil || image.MIMEType != "image/png" || len(image.Data) == 0 {
		t.Errorf("tiny image: %+v", res.Content)
	}
	if env := e.toolPathMaybe(src, "get-env"); env != "" {
		res := e.call(c, env, `{}`)
		if strings.Contains(text(res), "stdio-canary-8d2f61") || !strings.Contains(text(res), "EVERYTHING_TOKEN") {
			t.Errorf("the environment shows the credential: %.300s", text(res))
		}
	}

	e.closeGateway()
	if !eventually(10*time.Second, func() bool { return len(children()) <= len(before) }) {
		t.Errorf("processes left after Close: %q (before: %q)", children(), before)
	}
}

// An upstream that dies mid-call gets one reconnect, then an error that
// says what happened.
func TestMCPCrashMidCall(t *testing.T) {
	e := newEnv(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	e.source(e.a, &e.a.ws, "Crashy", sources.TypeMCP, map[string]any{"transport": "stdio", "command": self,
		"env": map[string]string{serverEnv: "1", "STARTS_LOG": starts}})
	c := e.a.caller()
	discovered := countLines(t, starts)

	res := e.call(c, "crashy.crash", `{}`)
	if !res.IsError {
		t.Fatalf("crash: %s", text(res))
	}
	for _, want := range []string{"exit status 3", "fatal: the crash tool brings the server down", "reconnected once"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("crash result %q lacks %q", text(res), want)
		}
	}
	if got := countLines(t, starts) - discovered; got != 2 {
		t.Errorf("the server started %d times for the call, want 2 (one reconnect)", got)
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeError || !strings.Contains(row.Error, "exit status 3") {
		t.Errorf("audit row %+v", row)
	}
	if res := e.call(c, "crashy.echo", `{"message": "still here"}`); text(res) != "Echo: still here" {
		t.Errorf("after the crash: %s", text(res))
	}
}

func countLines(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// toolPathMaybe is toolPath for a tool that may not exist: "" then.
func (e *env) toolPathMaybe(src db.Source, suffix string) string {
	e.t.Helper()
	tools, err := e.store.AllTools(context.Background(), src.OrgID, src.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, tool := range tools {
		if strings.HasSuffix(tool.Path, suffix) {
			return tool.Path
		}
	}
	return ""
}

// children lists the live child processes of the test binary.
func children() []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	me := os.Getpid()
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			out = append(out, ent.Name()+" "+string(stat[:i+1]))
		}
	}
	return out
}

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
