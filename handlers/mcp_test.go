package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/mcpserver"
)

// notesSpec describes notesAPI; %s is its URL.
const notesSpec = `{"openapi": "3.0.3", "info": {"title": "Notes", "version": "1"},
	"servers": [{"url": "%s"}],
	"paths": {
		"/notes/{id}": {"get": {"operationId": "getNote", "tags": ["notes"], "summary": "Read one note by id",
			"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
			"responses": {"200": {"description": "the note"}}}},
		"/notes": {"post": {"operationId": "createNote", "tags": ["notes"], "summary": "Write a new note",
			"requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
				"properties": {"text": {"type": "string"}}, "required": ["text"]}}}},
			"responses": {"201": {"description": "created"}}}}}}`

// notesAPI is a real HTTP API the gateway calls: it answers note reads and
// writes and counts the requests it saw.
type notesAPI struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newNotesAPI(t *testing.T) *notesAPI {
	api := &notesAPI{}
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		api.mu.Lock()
		api.seen = append(api.seen, r.Method+" "+r.URL.Path+" "+string(body))
		api.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/notes/"):
			fmt.Fprintf(w, `{"id": %q, "text": "note %s"}`, strings.TrimPrefix(r.URL.Path, "/notes/"), strings.TrimPrefix(r.URL.Path, "/notes/"))
		case r.Method == http.MethodPost && r.URL.Path == "/notes":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id": "7", "received": %s}`, body)
		default:
			http.Error(w, `{"error": "no such route"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(api.Close)
	return api
}

func (a *notesAPI) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// mcpFixture is Acme with a notes source in its default workspace, the
// Globex organization with its own notes source, and a key for each.
type mcpFixture struct {
	*fixture
	api                 *notesAPI
	acmeKey, globexKey  createdKey
	acmeDirect, viewerK createdKey
}

const acmeKeys = "/api/v1/orgs/acme/workspaces/default/api-keys"

func newMCPFixture(t *testing.T) *mcpFixture {
	t.Helper()
	return newMCPFixtureWith(t, nil)
}

// newMCPFixtureWith is newMCPFixture with more configuration. Both
// organizations allow every call (tools that write default to needing
// approval); the approval tests add a stricter workspace rule.
func newMCPFixtureWith(t *testing.T, vars map[string]string) *mcpFixture {
	t.Helper()
	all := maps.Clone(peerVars)
	maps.Copy(all, vars)
	f := &mcpFixture{fixture: newFixture(t, all), api: newNotesAPI(t)}
	f.allowAll("acme")
	f.allowAll("globex")
	spec := json.RawMessage(fmt.Sprintf(notesSpec, f.api.URL))
	if s := createSource(t, f.owner, wsSources, map[string]any{"name": "Notes", "type": "openapi", "config": map[string]any{"spec": spec}}, 201); s.State != "ready" || s.ToolCount != 2 {
		t.Fatalf("notes source: %+v", s)
	}
	globex := f.signIn("outsider@globex.test")
	createSource(t, globex, "/api/v1/orgs/globex/workspaces/default/sources",
		map[string]any{"name": "Secret notes", "type": "openapi", "config": map[string]any{"spec": spec}}, 201)
	f.acmeKey = createKey(t, f.member, acmeKeys, map[string]any{"name": "agent"})
	f.acmeDirect = createKey(t, f.member, acmeKeys, map[string]any{"name": "direct agent", "mode": "direct"})
	f.globexKey = createKey(t, globex, "/api/v1/orgs/globex/workspaces/default/api-keys", map[string]any{"name": "globex agent"})
	return f
}

// bearer is an HTTP client that sends an API key.
func bearer(key string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: keyTransport{key: key, next: http.DefaultTransport}}
}

type keyTransport struct {
	key  string
	next http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

// connect opens an MCP client session to url with key, speaking version.
func connect(t *testing.T, url, key, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-test", Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: bearer(key)},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%s): %v", url, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

// TestMCPSearchMode drives search mode with the Go SDK's client over every
// protocol version: search, describe (and suggestions), call.
func TestMCPSearchMode(t *testing.T) {
	f := newMCPFixture(t)
	for _, version := range mcpserver.ProtocolVersions {
		t.Run(version, func(t *testing.T) {
			cs := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, version, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			if !strings.Contains(cs.InitializeResult().Instructions, "search_tools") {
				t.Fatalf("instructions: %q", cs.InitializeResult().Instructions)
			}
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				if len(tool.Description) > 200 {
					t.Errorf("%s: description of %d characters; guidance belongs in the instructions", tool.Name, len(tool.Description))
				}
			}
			if strings.Join(names, ",") != "call_tool,describe_tool,get_approval,search_tools" {
				t.Fatalf("tools: %v", names)
			}

			_, text := callText(t, cs, "search_tools", map[string]any{"query": "read a note", "limit": 5})
			if !strings.Contains(text, `"path":"notes.notes.get_note"`) && !strings.Contains(text, "notes.notes.get_note") {
				t.Fatalf("search: %s", text)
			}
			res, text := callText(t, cs, "search_tools", map[string]any{"query": "note", "limit": 51})
			if !res.IsError {
				t.Fatalf("limit 51 accepted: %s", text)
			}

			_, text = callText(t, cs, "describe_tool", map[string]any{"path": "notes.notes.get_note"})
			if !strings.Contains(text, `"input_schema"`) || !strings.Contains(text, `"id"`) || !strings.Contains(text, `"default_approval"`) {
				t.Fatalf("describe: %s", text)
			}
			res, text = callText(t, cs, "describe_tool", map[string]any{"path": "notes.notes.get_nte"})
			if !res.IsError || !strings.Contains(text, "notes.notes.get_note") {
				t.Fatalf("unknown path: %v %s", res.IsError, text)
			}

			res, text = callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 42}})
			if res.IsError || !strings.Contains(text, "note 42") {
				t.Fatalf("call: %v %s", res.IsError, text)
			}
			res, text = callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.create_note", "arguments": map[string]any{"body": map[string]any{"text": 5}}})
			if !res.IsError || !strings.Contains(text, "/body/text") {
				t.Fatalf("bad arguments: %v %s", res.IsError, text)
			}
		})
	}
	for _, r := range f.api.requests() {
		if strings.Contains(r, `"text":5`) {
			t.Fatalf("arguments that failed the schema reached the upstream: %s", r)
		}
	}
}

var functionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// TestMCPDirectMode lists every tool under a function name and calls one;
// adding a source sends notifications/tools/list_changed.
func TestMCPDirectMode(t *testing.T) {
	f := newMCPFixture(t)
	changed := make(chan struct{}, 8)
	cs := connect(t, f.srv.URL+"/mcp", f.acmeDirect.Key, "2025-11-25", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		if !functionName.MatchString(tool.Name) {
			t.Errorf("name %q is not a function name", tool.Name)
		}
		names[tool.Name] = true
	}
	if !names["notes__notes__get_note"] || !names["notes__notes__create_note"] || !names["get_approval"] || len(names) != 3 {
		t.Fatalf("tools: %v", names)
	}
	res, text := callText(t, cs, "notes__notes__create_note", map[string]any{"body": map[string]any{"text": "hello"}})
	if res.IsError || !strings.Contains(text, "hello") {
		t.Fatalf("call: %v %s", res.IsError, text)
	}

	// The same key with ?mode=search sees the meta-tools instead.
	search := connect(t, f.srv.URL+"/mcp?mode=search", f.acmeDirect.Key, "2025-11-25", nil)
	if l, err := search.ListTools(context.Background(), nil); err != nil || len(l.Tools) != 4 {
		t.Fatalf("mode=search: %v %v", l, err)
	}

	spec := json.RawMessage(strings.Replace(fmt.Sprintf(notesSpec, f.api.URL), `"title": "Notes"`, `"title": "Archive"`, 1))
	createSource(t, f.owner, wsSources, map[string]any{"name": "Archive", "type": "openapi", "config": map[string]any{"spec": spec}}, 201)
	select {
	case <-changed:
	case <-time.After(15 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a source was added")
	}
	list, err = cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 5 {
		t.Fatalf("after the change: %d tools, %v", len(list.Tools), err)
	}
}

// TestToolNames: dots become "__"; long or unusual paths get a stable hash.
func TestToolNames(t *testing.T) {
	long := "github." + strings.Repeat("very_long_segment.", 6) + "get"
	for path, want := range map[string]string{
		"github.repos.get":                  "github__repos__get",
		"library.mutation.lendBook":         "library__mutation__lendBook",
		long:                                mcpserver.ToolName(long),
		"weird.name with spaces":            mcpserver.ToolName("weird.name with spaces"),
		"memory.create-entities_v2.already": "memory__create-entities_v2__already",
	} {
		got := mcpserver.ToolName(path)
		if got != want || !functionName.MatchString(got) {
			t.Errorf("ToolName(%q) = %q, want %q", path, got, want)
		}
	}
	if a, b := mcpserver.ToolName(long), mcpserver.ToolName(long+"x"); a == b || len(a) > 64 {
		t.Errorf("long names: %q %q", a, b)
	}
	if a, b := mcpserver.ToolName("a.b c"), mcpserver.ToolName("a.b_c"); a == b {
		t.Errorf("lossy spelling collides: %q", a)
	}
}

// TestMCPAuthentication: no key or a bad key is 401 with a challenge; a
// revoked key stops at once, even inside its session.
func TestMCPAuthentication(t *testing.T) {
	f := newMCPFixture(t)
	for key, wantError := range map[string]bool{"": false, "tgk_not-a-real-key-0000000000000000": true, f.acmeKey.Key + "x": true} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		challenge := res.Header.Get("WWW-Authenticate")
		if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer ") || strings.Contains(challenge, "invalid_token") != wantError {
			t.Errorf("key %q: %d %q", key, res.StatusCode, challenge)
		}
	}

	cs := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", nil)
	if _, text := callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 1}}); !strings.Contains(text, "note 1") {
		t.Fatalf("call before revoking: %s", text)
	}
	if res := f.member.api("DELETE", fmt.Sprintf("%s/%d", acmeKeys, f.acmeKey.ID), nil); res.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 2}}}); err == nil {
		t.Fatal("a revoked key still calls tools")
	}
	for _, r := range f.api.requests() {
		if strings.Contains(r, "/notes/2") {
			t.Fatal("the revoked key's call reached the upstream")
		}
	}
}

// TestMCPTenantIsolation: a key of one organization naming another's tool
// finds nothing, and nothing reaches the upstream; sessions belong to their key.
func TestMCPTenantIsolation(t *testing.T) {
	f := newMCPFixture(t)
	globex := connect(t, f.srv.URL+"/mcp", f.globexKey.Key, "2025-11-25", nil)
	_, text := callText(t, globex, "search_tools", map[string]any{"query": "note"})
	if !strings.Contains(text, "secret-notes.") || strings.Contains(text, `"notes.notes`) {
		t.Fatalf("globex search sees: %s", text)
	}
	before := len(f.api.requests())
	res, text := callText(t, globex, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 3}})
	if !res.IsError || !strings.Contains(text, "no tool") {
		t.Fatalf("cross-tenant call: %v %s", res.IsError, text)
	}
	if res, text := callText(t, globex, "describe_tool", map[string]any{"path": "notes.notes.get_note"}); !res.IsError || strings.Contains(text, `"notes.notes.get_note"`) && !strings.Contains(text, "no tool") {
		t.Fatalf("cross-tenant describe: %s", text)
	}
	if after := len(f.api.requests()); after != before {
		t.Fatalf("the upstream saw %d requests from another tenant's key", after-before)
	}

	// Acme's session id with Globex's key is not found.
	acme := connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", nil)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", acme.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	res2, err := bearer(f.globexKey.Key).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != http.StatusNotFound {
		t.Fatalf("another key's session: %d", res2.StatusCode)
	}
}

// TestMCPHostAndOrigin: DNS-rebinding protection by the Host and Origin allowlists.
func TestMCPHostAndOrigin(t *testing.T) {
	f := newMCPFixture(t)
	send := func(host, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := bearer(f.acmeKey.Key).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := send("", ""); got != http.StatusOK {
		t.Fatalf("plain request: %d", got)
	}
	if got := send("evil.example", ""); got != http.StatusForbidden {
		t.Fatalf("foreign Host: %d", got)
	}
	if got := send("", "http://evil.example"); got != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d", got)
	}
	if got := send("", "http://127.0.0.1:8080"); got != http.StatusOK {
		t.Fatalf("the base URL's origin: %d", got)
	}
}

// TestMCPSessionsAcrossReplicas: a session opened on one replica is served
// by another sharing the database, as behind a load balancer.
func TestMCPSessionsAcrossReplicas(t *testing.T) {
	f := newMCPFixture(t)
	second := mcpserver.New(mcpserver.Options{
		Gateway: f.gateway, Auth: &auth.Authenticator{Store: f.store}, Store: f.store,
		BaseURL: mustURL(t, "http://127.0.0.1:8080"), Version: "test",
	})
	t.Cleanup(second.Close)
	replica := httptest.NewServer(second)
	t.Cleanup(replica.Close)

	// A load balancer that alternates between the replicas.
	var mu sync.Mutex
	n := 0
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		target := f.srv.URL
		if n%2 == 0 {
			target = replica.URL
		}
		mu.Unlock()
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+"/mcp", r.Body)
		req.Header = r.Header.Clone()
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		buf := make([]byte, 4096)
		for {
			k, err := res.Body.Read(buf)
			if k > 0 {
				_, _ = w.Write(buf[:k])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(lb.Close)

	cs := connect(t, lb.URL, f.acmeKey.Key, "2025-06-18", nil)
	for i := range 6 {
		res, text := callText(t, cs, "call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 100 + i}})
		if res.IsError || !strings.Contains(text, fmt.Sprintf("note %d", 100+i)) {
			t.Fatalf("call %d through the balancer: %v %s", i, res.IsError, text)
		}
	}
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMCPThousandConcurrentCalls: 1,000 calls in flight at once through
// /mcp (40 sessions of 25 each) all succeed, every one is audited, and
// when the sessions end no goroutine is left behind.
func TestMCPThousandConcurrentCalls(t *testing.T) {
	f := newMCPFixture(t)
	before, _ := workingGoroutines()
	const sessions, perSession = 40, 25
	var wg sync.WaitGroup
	errs := make(chan error, sessions*perSession)
	clients := make([]*mcp.ClientSession, sessions)
	for i := range clients {
		clients[i] = connect(t, f.srv.URL+"/mcp", f.acmeKey.Key, "2025-11-25", nil)
	}
	start := make(chan struct{})
	for i, cs := range clients {
		for j := range perSession {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				id := i*perSession + j
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool",
					Arguments: map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": id}}})
				if err != nil {
					errs <- err
					return
				}
				if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, fmt.Sprintf("note %d", id)) {
					errs <- fmt.Errorf("call %d: %s", id, text)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for _, cs := range clients {
		_ = cs.Close()
	}
	waitFor(t, "every call audited", func() bool {
		var n int
		_ = f.store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM tool_calls WHERE outcome = 'ok'`).Scan(&n)
		return n == sessions*perSession
	})
	// Idle keep-alive connections (the gateway keeps up to 64 per upstream)
	// hold goroutines by design; everything else must be gone.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, stacks := workingGoroutines()
		if n <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines besides idle connections, %d before the calls:\n%s", n, before, stacks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workingGoroutines counts the goroutines a call can start - in the MCP
// endpoint, the gateway, the SDK and HTTP handling - other than idle
// keep-alive connections, and returns them summarized. (The worker's
// maintenance goroutines come and go on their own schedule.)
func workingGoroutines() (int, string) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var b strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		callRelated := strings.Contains(g, "modelcontextprotocol/go-sdk") || strings.Contains(g, "toolgate/internal/gateway") ||
			strings.Contains(g, "toolgate/internal/mcpserver") || strings.Contains(g, "net/http.")
		if !callRelated || strings.Contains(g, "net/http.(*persistConn)") || strings.Contains(g, "net/http.(*conn).serve") {
			continue
		}
		n++
		// The goroutine's state and its innermost frames of toolgate or
		// its libraries name it well enough.
		lines := strings.Split(g, "\n")
		b.WriteString(lines[0])
		for i := 1; i < len(lines) && i < 8; i += 2 {
			b.WriteString(" | " + strings.TrimSpace(lines[i]))
		}
		b.WriteString("\n")
	}
	return n, b.String()
}
