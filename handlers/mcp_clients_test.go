package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/mcpserver"
	"github.com/toolgate/toolgate/internal/testenv"
)

// The real MCP clients agents use, against /mcp over real HTTP: the MCP
// conformance suite, the TypeScript SDK's client and the inspector CLI, all
// on the Node the peers pin (node@22, which the conformance suite needs).

// runNode runs the pinned Node with args in dir, feeding it stdin, and
// returns its stdout; a non-zero exit is an error that carries stderr.
// Extra environment entries (KEY=VALUE) are added to the test's own.
func runNode(t *testing.T, dir, stdin string, env []string, args ...string) (string, error) {
	t.Helper()
	node := testenv.PeerBin(t, "node")
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	// Children that call "node" by name (the inspector CLI does) get the same Node.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\nstdout: %s\nstderr: %s", filepath.Base(node), filepath.Base(args[0]), err, excerpt(stdout.String()), excerpt(stderr.String()))
	}
	return stdout.String(), nil
}

// forwarded is one request the key proxy passed on, and the endpoint's answer.
type forwarded struct {
	host, origin string
	status       int
}

// keyProxy is a loopback reverse proxy in front of toolgate that adds the
// API key to every request, since the conformance suite sends no headers of
// its own. Host, Origin and every other header pass unchanged, so what the
// endpoint checks is what the suite sent. It listens (on 127.0.0.1 only)
// from newKeyProxy on, so its address can be toolgate's base URL; serve
// starts forwarding.
type keyProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []forwarded
}

func newKeyProxy(t *testing.T) *keyProxy {
	t.Helper()
	p := &keyProxy{Server: httptest.NewUnstartedServer(nil)}
	t.Cleanup(p.Close)
	return p
}

// base is the proxy's URL, known before it serves.
func (p *keyProxy) base() string { return "http://" + p.Listener.Addr().String() }

// serve forwards requests to target with key.
func (p *keyProxy) serve(t *testing.T, target, key string) {
	to := mustURL(t, target)
	p.Config.Handler = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// Out is a copy of In: its Host stays the client's, not target's.
			r.Out.URL.Scheme, r.Out.URL.Host = to.Scheme, to.Host
			r.Out.Header.Set("Authorization", "Bearer "+key)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil { // a client that hung up needs no answer
				http.Error(w, "key proxy: "+err.Error(), http.StatusBadGateway)
			}
		},
		ModifyResponse: func(res *http.Response) error {
			p.mu.Lock()
			p.seen = append(p.seen, forwarded{host: res.Request.Host, origin: res.Request.Header.Get("Origin"), status: res.StatusCode})
			p.mu.Unlock()
			return nil
		},
	}
	p.Start()
}

func (p *keyProxy) requests() []forwarded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]forwarded(nil), p.seen...)
}

// conformanceCheck is one entry of the suite's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Description  string          `json:"description"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// conformanceScenarios are the suite's server scenarios that apply to
// toolgate's endpoint, by the /mcp URL they run against. The rest call
// fixtures of the suite's reference server (test_simple_text,
// json_schema_2020_12_tool, completions, resources, prompts, sampling,
// elicitation), which a gateway of other people's tools does not have.
var conformanceScenarios = []struct{ scenario, query string }{
	{"server-initialize", ""},
	{"ping", ""},
	{"tools-list", ""},
	{"logging-set-level", ""},
	{"dns-rebinding-protection", ""},
	{"server-sse-multiple-streams", ""},
	// Direct mode lists the workspace's own tools, one of them undescribed upstream.
	{"server-initialize", "?mode=direct"},
	{"tools-list", "?mode=direct"},
}

// TestMCPConformance runs the MCP conformance suite's server scenarios
// against /mcp, through a loopback proxy that adds a workspace key.
func TestMCPConformance(t *testing.T) {
	// The proxy stands where agents reach toolgate, so its URL is the base
	// URL: the address whose Host and Origin the endpoint allows.
	proxy := newKeyProxy(t)
	vars := map[string]string{"TOOLGATE_BASE_URL": proxy.base()}
	for k, v := range peerVars {
		vars[k] = v
	}
	f := newFixture(t, vars)
	f.allowAll("acme")
	sdl := "type Query { \"Say hello.\" hello(name: String!): String\n ping: String }"
	if s := createSource(t, f.owner, wsSources, map[string]any{"name": "Greeter", "type": "graphql", "config": map[string]any{"schema": sdl}}, 201); s.State != "ready" {
		t.Fatalf("greeter: %+v", s)
	}
	key := createKey(t, f.member, acmeKeys, map[string]any{"name": "conformance"})
	proxy.serve(t, f.srv.URL, key.Key)
	suite := testenv.PeerBin(t, "conformance")
	for _, sc := range conformanceScenarios {
		t.Run(sc.scenario+sc.query, func(t *testing.T) {
			results := t.TempDir()
			out, runErr := runNode(t, results, "", nil, suite, "server", "--url", proxy.URL+"/mcp"+sc.query, "--scenario", sc.scenario, "--output-dir", results)
			files, _ := filepath.Glob(filepath.Join(results, "server-"+sc.scenario+"-*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("no checks.json from the suite (%v): %v\n%s", files, runErr, excerpt(out))
			}
			raw, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var checks []conformanceCheck
			if err := json.Unmarshal(raw, &checks); err != nil || len(checks) == 0 {
				t.Fatalf("checks.json: %v: %s", err, excerpt(string(raw)))
			}
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE":
					t.Errorf("%s: %s (%s)\ndetails: %s", c.ID, c.ErrorMessage, c.Description, excerpt(string(c.Details)))
				default:
					t.Logf("%s %s: %s %s", c.Status, c.ID, c.ErrorMessage, excerpt(string(c.Details)))
				}
			}
			if passed == 0 && !t.Failed() {
				t.Errorf("no check passed:\n%s", excerpt(string(raw)))
			}
			if runErr != nil && !t.Failed() {
				t.Errorf("the suite failed without a failing check: %v", runErr)
			}
		})
	}

	// The suite's rebinding request reached the endpoint with its own Host
	// and Origin, and the endpoint (not the proxy) refused it.
	var rebinding, local bool
	for _, r := range proxy.requests() {
		if r.host == "evil.example.com" && r.origin == "http://evil.example.com" {
			rebinding = r.status == http.StatusForbidden
		}
		if r.host == mustURL(t, proxy.URL).Host && r.origin == proxy.URL {
			local = r.status == http.StatusOK
		}
	}
	if !rebinding || !local {
		t.Errorf("the endpoint did not see the suite's Host and Origin (rebinding refused: %v, localhost accepted: %v): %+v", rebinding, local, proxy.requests())
	}
}

// clientStep is one step of mcp-client.mjs's plan.
type clientStep struct {
	Method    string `json:"method"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
}

func listStep() clientStep { return clientStep{Method: "tools/list"} }

func callStep(name string, args any) clientStep {
	return clientStep{Method: "tools/call", Name: name, Arguments: args}
}

// clientRun is what mcp-client.mjs prints.
type clientRun struct {
	ProtocolVersion string  `json:"protocolVersion"`
	SessionID       *string `json:"sessionId"`
	ServerInfo      struct {
		Name, Version string
	} `json:"serverInfo"`
	Instructions   string
	Results        []stepResult
	Error          string
	Code           int    // of Error: the HTTP status or JSON-RPC code
	TerminateError string `json:"terminateError"`
}

// stepResult is a tools/list or tools/call result as the SDK returned it,
// or the error of a step.
type stepResult struct {
	Tools []struct {
		Name, Description string
		InputSchema       map[string]any `json:"inputSchema"`
	}
	Content []struct {
		Type, Text, MimeType string
	}
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Error             string
}

// text is the text content of a tools/call result.
func (r stepResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func (r stepResult) names() []string {
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// sdkClient runs the TypeScript SDK's client (mcp-client.mjs) against url
// with key and the steps; the run has one result per step, or an Error when
// it could not connect.
func sdkClient(t *testing.T, url, key string, steps ...clientStep) clientRun {
	t.Helper()
	plan, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.PeersDir(t)
	out, runErr := runNode(t, dir, string(plan), []string{"TOOLGATE_KEY=" + key}, filepath.Join(dir, "mcp-client.mjs"), url)
	var run clientRun
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("mcp-client.mjs printed no result (%v): %v", err, runErr)
	}
	if runErr != nil && run.Error == "" {
		t.Fatalf("mcp-client.mjs: %v", runErr)
	}
	if run.Error == "" && len(run.Results) != len(steps) {
		t.Fatalf("mcp-client.mjs: %d results for %d steps", len(run.Results), len(steps))
	}
	return run
}

// inspector runs the inspector CLI against url over Streamable HTTP with
// key, with args such as "--method", "tools/list", and decodes its JSON
// answer into v.
func inspector(t *testing.T, url, key string, v any, args ...string) {
	t.Helper()
	// The CLI reads its own package.json as "../package.json" from the
	// working directory: run it from its build directory, where that holds.
	bin := testenv.PeerBin(t, "mcp-inspector-cli")
	dir := filepath.Join(testenv.PeersDir(t), "node_modules", "@modelcontextprotocol", "inspector-cli", "build")
	argv := append([]string{bin, "--cli", "--transport", "http", "--header", "Authorization: Bearer " + key, "--", url}, args...)
	out, err := runNode(t, dir, "", nil, argv...)
	if err != nil {
		t.Fatalf("inspector %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("inspector %s printed %q: %v", strings.Join(args, " "), excerpt(out), err)
	}
}

// TestMCPClients lists and calls tools through /mcp with the TypeScript
// SDK's client and the inspector CLI, each with a workspace key.
func TestMCPClients(t *testing.T) {
	f := newMCPFixture(t)
	endpoint := f.srv.URL + "/mcp"

	t.Run("sdk/search", func(t *testing.T) {
		run := sdkClient(t, endpoint, f.acmeKey.Key,
			listStep(),
			callStep("search_tools", map[string]any{"query": "read a note", "limit": 5}),
			callStep("describe_tool", map[string]any{"path": "notes.notes.get_note"}),
			callStep("call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 42}}),
			callStep("call_tool", map[string]any{"path": "notes.notes.create_note", "arguments": map[string]any{"body": map[string]any{"text": 5}}}),
		)
		if run.ProtocolVersion != "2025-11-25" || run.ServerInfo.Name != "toolgate" || run.SessionID == nil ||
			!strings.Contains(run.Instructions, "search_tools") || run.TerminateError != "" {
			t.Fatalf("session: %+v", run)
		}
		if got := strings.Join(run.Results[0].names(), ","); got != "call_tool,describe_tool,get_approval,search_tools" && got != "search_tools,describe_tool,call_tool,get_approval" {
			t.Errorf("tools: %s", got)
		}
		if r := run.Results[1]; r.IsError || !strings.Contains(r.text()+string(r.StructuredContent), "notes.notes.get_note") {
			t.Errorf("search_tools: %+v", r)
		}
		if r := run.Results[2]; r.IsError || !strings.Contains(r.text(), `"input_schema"`) {
			t.Errorf("describe_tool: %+v", r)
		}
		if r := run.Results[3]; r.IsError || !strings.Contains(r.text(), "note 42") {
			t.Errorf("call_tool: %+v", r)
		}
		if r := run.Results[4]; !r.IsError || !strings.Contains(r.text(), "/body/text") {
			t.Errorf("arguments against the schema: %+v", r)
		}
	})

	t.Run("sdk/direct", func(t *testing.T) {
		run := sdkClient(t, endpoint+"?mode=direct", f.acmeKey.Key,
			listStep(),
			callStep("notes__notes__create_note", map[string]any{"body": map[string]any{"text": "from the sdk"}}),
		)
		if got := strings.Join(run.Results[0].names(), ","); got != "get_approval,notes__notes__create_note,notes__notes__get_note" && got != "notes__notes__get_note,notes__notes__create_note,get_approval" {
			t.Errorf("tools: %s", got)
		}
		for _, tool := range run.Results[0].Tools {
			if tool.Description == "" || tool.InputSchema["type"] != "object" {
				t.Errorf("tool %+v", tool)
			}
		}
		if r := run.Results[1]; r.IsError || !strings.Contains(r.text(), "from the sdk") {
			t.Errorf("call: %+v", r)
		}
	})

	t.Run("sdk/bad key", func(t *testing.T) {
		bad := "tgk_not-a-real-key-0000000000000000"
		run := sdkClient(t, endpoint, bad, listStep())
		if run.Code != http.StatusUnauthorized || !strings.Contains(run.Error, "unknown, revoked or expired") {
			t.Errorf("bad key: %+v", run)
		}
	})

	t.Run("sdk/other tenant", func(t *testing.T) {
		before := len(f.api.requests())
		run := sdkClient(t, endpoint, f.globexKey.Key,
			callStep("search_tools", map[string]any{"query": "note"}),
			callStep("call_tool", map[string]any{"path": "notes.notes.get_note", "arguments": map[string]any{"id": 3}}),
		)
		if r := run.Results[0]; strings.Contains(r.text()+string(r.StructuredContent), `"notes.notes`) {
			t.Errorf("globex finds acme's tools: %+v", r)
		}
		if r := run.Results[1]; !r.IsError || !strings.Contains(r.text(), "no tool") {
			t.Errorf("globex calls acme's tool: %+v", r)
		}
		if after := len(f.api.requests()); after != before {
			t.Errorf("acme's upstream saw %d requests from globex's key", after-before)
		}
	})

	t.Run("inspector/list", func(t *testing.T) {
		var list stepResult
		inspector(t, endpoint, f.acmeKey.Key, &list, "--method", "tools/list")
		if got := strings.Join(list.names(), ","); got != "call_tool,describe_tool,get_approval,search_tools" && got != "search_tools,describe_tool,call_tool,get_approval" {
			t.Errorf("tools: %s", got)
		}
		inspector(t, endpoint+"?mode=direct", f.acmeKey.Key, &list, "--method", "tools/list")
		if len(list.Tools) != 3 {
			t.Errorf("direct tools: %v", list.names())
		}
	})

	t.Run("inspector/call", func(t *testing.T) {
		var res stepResult
		inspector(t, endpoint, f.acmeKey.Key, &res, "--method", "tools/call", "--tool-name", "call_tool",
			"--tool-arg", "path=notes.notes.get_note", `arguments={"id": 7}`)
		if res.IsError || !strings.Contains(res.text(), "note 7") {
			t.Errorf("call_tool: %+v", res)
		}
		res = stepResult{}
		inspector(t, endpoint+"?mode=direct", f.acmeKey.Key, &res, "--method", "tools/call", "--tool-name", "notes__notes__get_note", "--tool-arg", "id=8")
		if res.IsError || !strings.Contains(res.text(), "note 8") {
			t.Errorf("direct call: %+v", res)
		}
	})

	for _, r := range f.api.requests() {
		if strings.Contains(r, `"text":5`) {
			t.Errorf("arguments that failed the schema reached the upstream: %s", r)
		}
	}
}

// TestMCPEndToEnd: an agent (the TypeScript SDK's client) calls, through
// /mcp over real HTTP, one tool of each kind of upstream: server-everything
// over stdio, Prism serving the petstore description, and graphql-yoga; in
// search mode through call_tool, and in direct mode by name.
func TestMCPEndToEnd(t *testing.T) {
	f := newFixture(t, peerVars)
	f.allowAll("acme")
	petstore := testenv.PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json")
	spec, err := os.ReadFile(petstore)
	if err != nil {
		t.Fatal(err)
	}
	prism := testenv.StartPrism(t, petstore)
	yoga := testenv.StartYoga(t)
	discovered := map[string]bool{}
	for _, src := range []map[string]any{
		{"name": "Everything", "type": "mcp", "config": map[string]any{"transport": "stdio", "command": testenv.PeerBin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
		{"name": "Petstore", "type": "openapi", "config": map[string]any{"spec": json.RawMessage(spec), "baseUrl": prism}},
		{"name": "Library", "type": "graphql", "config": map[string]any{"endpoint": yoga}},
	} {
		s := createSource(t, f.owner, wsSources, src, 201)
		if s.State != "ready" || s.ToolCount == 0 {
			t.Fatalf("%s: %+v", src["name"], s)
		}
		var tools struct{ Data []struct{ Path string } }
		f.owner.api("GET", wsSources+"/"+s.ID+"/tools", nil).json(t, &tools)
		for _, tool := range tools.Data {
			discovered[tool.Path] = true
		}
	}
	key := createKey(t, f.member, acmeKeys, map[string]any{"name": "end to end"})

	// One tool of each upstream, by the path discovery gave it, with what its answer holds.
	calls := []struct {
		path string
		args map[string]any
		want string
	}{
		{"everything.echo", map[string]any{"message": "hello through toolgate"}, "Echo: hello through toolgate"},
		{"everything.get-sum", map[string]any{"a": 2, "b": 40}, "42"},
		{"petstore.store.get_order_by_id", map[string]any{"orderId": 5}, `"status":"placed"`},
		{"library.query.book", map[string]any{"id": "b1"}, "The Dispossessed"},
	}
	for _, c := range calls {
		if !discovered[c.path] {
			t.Fatalf("discovery gave no %s: %v", c.path, discovered)
		}
	}

	t.Run("search", func(t *testing.T) {
		var steps []clientStep
		for _, c := range calls {
			steps = append(steps, callStep("call_tool", map[string]any{"path": c.path, "arguments": c.args}))
		}
		run := sdkClient(t, f.srv.URL+"/mcp", key.Key, steps...)
		for i, c := range calls {
			if r := run.Results[i]; r.IsError || r.Error != "" || !strings.Contains(compact(r.text()), c.want) {
				t.Errorf("call_tool %s: %+v, want %q", c.path, r, c.want)
			}
		}
	})

	t.Run("direct", func(t *testing.T) {
		steps := []clientStep{listStep()}
		for _, c := range calls {
			steps = append(steps, callStep(mcpserver.ToolName(c.path), c.args))
		}
		run := sdkClient(t, f.srv.URL+"/mcp?mode=direct", key.Key, steps...)
		listed := map[string]bool{}
		for _, name := range run.Results[0].names() {
			listed[name] = true
		}
		for i, c := range calls {
			name := mcpserver.ToolName(c.path)
			if !listed[name] {
				t.Errorf("%s is not listed: %v", name, run.Results[0].names())
			}
			if r := run.Results[i+1]; r.IsError || r.Error != "" || !strings.Contains(compact(r.text()), c.want) {
				t.Errorf("%s: %+v, want %q", name, r, c.want)
			}
		}
	})
}

// compact removes the white space of a JSON answer, leaving other text alone.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) == nil {
		return b.String()
	}
	return s
}
