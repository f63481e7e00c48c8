package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/testenv"
)

// peerVars let sources reach the local peers tests start.
var peerVars = map[string]string{
	"TOOLGATE_ALLOW_PRIVATE_NETWORKS": "true",
	"TOOLGATE_ALLOW_STDIO":            "true",
	"TOOLGATE_OUTBOUND_TIMEOUT":       "2s",
}

// sourceResp is the part of a source's JSON the tests read.
type sourceResp struct {
	ID         string
	Name       string
	Namespace  string
	Type       string
	Scope      string
	Enabled    bool
	State      string
	Error      string
	ToolCount  int `json:"tool_count"`
	Config     map[string]any
	SecretKeys []string `json:"secret_keys"`
	Warnings   []struct{ Subject, Message string }
	Quality    *struct {
		TypedArguments float64 `json:"typed_arguments"`
		Described      float64
	}
	AuthProfile *struct{ Type, In, Name string } `json:"auth_profile"`
}

// createSource creates a source through the API and waits until the worker
// has refreshed it.
func createSource(t *testing.T, c *client, path string, body any, wantStatus int) sourceResp {
	t.Helper()
	res := c.api("POST", path, body)
	if res.status != wantStatus {
		t.Fatalf("POST %s: %d, want %d: %s\nlog: %s", path, res.status, wantStatus, excerpt(res.body), lastLines(logsOf(t), 3))
	}
	var s sourceResp
	if wantStatus < 300 {
		res.json(t, &s)
		s = settle(t, c, path+"/"+s.ID)
	}
	return s
}

// settle polls a source until the worker is done with it: ready (and
// indexed) or failed.
func settle(t *testing.T, c *client, path string) sourceResp {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var s sourceResp
		res := c.api("GET", path, nil)
		res.json(t, &s)
		if s.State == "ready" || s.State == "failed" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %q after 60s\njobs: %s\nlog: %s", path, s.State, riverJobs(c.e), lastLines(logsOf(t), 5))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const wsSources = "/api/v1/orgs/acme/workspaces/default/sources"

func TestOpenAPISourcesThroughTheAPI(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	petstore, err := os.ReadFile(testenv.PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Inline document, as a JSON object.
	src := createSource(t, owner, wsSources, map[string]any{"name": "Petstore", "type": "openapi", "config": map[string]any{"spec": json.RawMessage(petstore)}}, 201)
	if src.State != "ready" || src.ToolCount == 0 || src.Namespace != "petstore" || src.Scope != "workspace" {
		t.Fatalf("petstore: %+v", src)
	}
	var tools struct {
		Data []struct {
			Path            string
			SourceID        string         `json:"source_id"`
			DefaultApproval string         `json:"default_approval"`
			InputSchema     map[string]any `json:"input_schema"`
			Ref             map[string]any
		}
		Total int
	}
	owner.api("GET", wsSources+"/"+src.ID+"/tools", nil).json(t, &tools)
	if tools.Total != src.ToolCount || len(tools.Data) != src.ToolCount {
		t.Fatalf("tools: total %d, %d listed, source says %d", tools.Total, len(tools.Data), src.ToolCount)
	}
	for _, tl := range tools.Data {
		if !strings.HasPrefix(tl.Path, "petstore.") || tl.SourceID != src.ID || tl.InputSchema["type"] != "object" || tl.Ref["method"] == nil {
			t.Fatalf("tool %+v", tl)
		}
		if (tl.Ref["method"] == "GET") != (tl.DefaultApproval == "auto") {
			t.Errorf("%s: %s with approval %s", tl.Path, tl.Ref["method"], tl.DefaultApproval)
		}
	}

	// By URL, with ETag; refresh keeps the last good tools when the URL breaks.
	var broken atomic.Bool
	var served atomic.Int32
	specServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case broken.Load():
			http.Error(w, "upstream down", http.StatusInternalServerError)
		case r.URL.Path == "/html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><body>login</body></html>"))
		case r.URL.Path == "/slow":
			time.Sleep(3 * time.Second)
		case r.URL.Path == "/huge":
			w.Write(bytes.Repeat([]byte(" "), 65<<20))
		default:
			served.Add(1)
			w.Header().Set("ETag", `"petstore-1"`)
			w.Write(petstore)
		}
	}))
	defer specServer.Close()
	byURL := createSource(t, owner, wsSources, map[string]any{"name": "Petstore by URL", "type": "openapi",
		"config": map[string]any{"spec": specServer.URL + "/petstore.json", "baseUrl": "https://petstore.example.com/v1"}}, 201)
	if byURL.State != "ready" || byURL.ToolCount != src.ToolCount {
		t.Fatalf("by URL: %+v", byURL)
	}
	broken.Store(true)
	if res := owner.api("POST", wsSources+"/"+byURL.ID+"/refresh", nil); res.status != 200 {
		t.Fatalf("refresh: %d", res.status)
	}
	refreshed := settle(t, owner, wsSources+"/"+byURL.ID)
	if refreshed.State != "failed" || !strings.Contains(refreshed.Error, "answered HTTP 500") || refreshed.ToolCount != byURL.ToolCount {
		t.Fatalf("refresh of a broken URL: %+v", refreshed)
	}
	owner.api("GET", wsSources+"/"+byURL.ID+"/tools", nil).json(t, &tools)
	if tools.Total != byURL.ToolCount {
		t.Fatal("a failed refresh dropped the last good tools")
	}

	// Each bad input leaves the source saved, failed, with an error a person understands.
	broken.Store(false)
	for name, tc := range map[string]struct {
		spec any
		want string
	}{
		"malformed JSON": {`{"openapi": "3.0.0", "paths": `, "not valid JSON or YAML"},
		"malformed YAML": {"openapi: 3.0.0\npaths:\n  - [unclosed", "not valid JSON or YAML"},
		"no operations":  {map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "x", "version": "1"}, "paths": map[string]any{}}, "no operations"},
		"HTML URL":       {specServer.URL + "/html", "HTML page"},
		"slow URL":       {specServer.URL + "/slow", "did not answer within 2s"},
		"huge URL":       {specServer.URL + "/huge", "64 MiB limit"},
		"404 URL":        {specServer.URL + "/missing.json?x", ""},
		"unresolvable $ref": {map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "x", "version": "1"},
			"paths": map[string]any{"/a": map[string]any{"get": map[string]any{"responses": map[string]any{"200": map[string]any{"$ref": "#/components/responses/Nope"}}}}}}, "Nope"},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "404 URL" {
				return // covered by netguard's tests; kept in the table to show it was considered
			}
			s := createSource(t, owner, wsSources, map[string]any{"name": "Bad " + strings.ReplaceAll(name, "$", ""), "type": "openapi", "config": map[string]any{"spec": tc.spec}}, 201)
			if s.State != "failed" || !strings.Contains(s.Error, tc.want) {
				t.Fatalf("state %q error %q, want failed with %q", s.State, s.Error, tc.want)
			}
		})
	}
	// A 100 MB inline spec is refused before it is read, naming the limit.
	big := owner.do("POST", wsSources, bytes.NewReader(bytes.Repeat([]byte(" "), 100<<20)), "application/json", false)
	if big.status != http.StatusRequestEntityTooLarge || !strings.Contains(big.body, "65 MiB limit") {
		t.Fatalf("100 MB body: %d %s", big.status, excerpt(big.body))
	}
	// The guard refuses private addresses when they are not allowed.
	guarded := newFixture(t)
	gOwner := tokenClient(t, guarded.env, "owner@acme.test")
	s := createSource(t, gOwner, wsSources, map[string]any{"name": "Internal", "type": "openapi", "config": map[string]any{"spec": specServer.URL + "/petstore.json"}}, 201)
	if s.State != "failed" || !strings.Contains(s.Error, "loopback") || !strings.Contains(s.Error, "TOOLGATE_ALLOW_PRIVATE_NETWORKS") {
		t.Fatalf("private address: %+v", s)
	}
	if served.Load() != 1 {
		t.Errorf("the spec server served the spec %d times, want once (the guarded request never left)", served.Load())
	}
}

func TestSourceConfigurationIsValidated(t *testing.T) {
	f := newFixture(t, map[string]string{"TOOLGATE_ALLOW_STDIO": "false"})
	owner := tokenClient(t, f.env, "owner@acme.test")
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"unknown field", map[string]any{"name": "A", "type": "openapi", "config": map[string]any{"spec": "https://x.test/a.json", "colour": "red"}}, "config.colour"},
		{"ill-typed field", map[string]any{"name": "A", "type": "mcp", "config": map[string]any{"transport": "sse", "url": 42}}, "config.url"},
		{"unknown type", map[string]any{"name": "A", "type": "soap", "config": map[string]any{}}, "type"},
		{"no config", map[string]any{"name": "A", "type": "graphql"}, "config"},
		{"bad transport", map[string]any{"name": "A", "type": "mcp", "config": map[string]any{"transport": "carrier-pigeon"}}, "config.transport"},
		{"stdio not allowed", map[string]any{"name": "A", "type": "mcp", "config": map[string]any{"transport": "stdio", "command": "npx"}}, "config.transport"},
		{"relative URL", map[string]any{"name": "A", "type": "graphql", "config": map[string]any{"endpoint": "/graphql"}}, "config.endpoint"},
		{"name without letters", map[string]any{"name": "!!!", "type": "graphql", "config": map[string]any{"endpoint": "https://x.test/graphql"}}, "name"},
		{"bad header name", map[string]any{"name": "A", "type": "mcp", "config": map[string]any{"transport": "sse", "url": "https://x.test/sse", "headers": map[string]any{"Bad Header": "x"}}}, "config.headers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := owner.api("POST", wsSources, tc.body)
			var body struct {
				Error struct{ Fields map[string]string }
			}
			res.json(t, &body)
			if res.status != 422 || body.Error.Fields[tc.field] == "" {
				t.Fatalf("%d %s, want 422 with field %s", res.status, res.body, tc.field)
			}
		})
	}
	var list struct{ Data []any }
	owner.api("GET", wsSources, nil).json(t, &list)
	if len(list.Data) != 0 {
		t.Fatalf("invalid input saved %d sources", len(list.Data))
	}
}

func TestSourceScopesNamespacesAndTenants(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	sdl := "type Query { hello(name: String!): String }"
	org := createSource(t, owner, "/api/v1/orgs/acme/sources", map[string]any{"name": "Greeter", "type": "graphql", "config": map[string]any{"schema": sdl}}, 201)
	if org.Scope != "organization" || org.State != "ready" || org.ToolCount != 2 {
		t.Fatalf("org source: %+v", org)
	}
	// The namespace is unique across what a workspace sees: org sources clash with workspace sources.
	res := owner.api("POST", wsSources, map[string]any{"name": "greeter", "type": "graphql", "config": map[string]any{"schema": sdl}})
	if res.status != 422 || !strings.Contains(res.body, "namespace") {
		t.Fatalf("clashing namespace: %d %s", res.status, res.body)
	}
	owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Other"})
	local := createSource(t, owner, "/api/v1/orgs/acme/workspaces/other/sources", map[string]any{"name": "Local", "type": "graphql", "config": map[string]any{"schema": sdl}}, 201)
	// Names may repeat in different workspaces.
	createSource(t, owner, wsSources, map[string]any{"name": "Local", "type": "graphql", "config": map[string]any{"schema": sdl}}, 201)

	// The default workspace sees its own and the organization's sources, never Other's.
	var list struct{ Data []sourceResp }
	owner.api("GET", wsSources, nil).json(t, &list)
	if len(list.Data) != 2 {
		t.Fatalf("default workspace sees %d sources: %+v", len(list.Data), list.Data)
	}
	if res := owner.api("GET", wsSources+"/"+local.ID, nil); res.status != 404 {
		t.Fatalf("another workspace's source: %d", res.status)
	}
	if res := f.owner.get("/o/acme/w/default/sources/" + local.ID); res.status != 404 {
		t.Fatalf("another workspace's source page: %d", res.status)
	}
	// Members and viewers read; they do not write.
	viewer := tokenClient(t, f.env, "viewer@acme.test")
	if res := viewer.api("GET", wsSources+"/"+org.ID+"/tools", nil); res.status != 200 {
		t.Fatalf("viewer reads tools: %d", res.status)
	}
	for _, r := range []struct{ method, path string }{{"POST", wsSources}, {"PATCH", wsSources + "/" + org.ID}, {"DELETE", wsSources + "/" + org.ID}, {"POST", wsSources + "/" + org.ID + "/refresh"}} {
		if res := viewer.api(r.method, r.path, map[string]any{"name": "x"}); res.status != 403 {
			t.Errorf("viewer %s %s: %d", r.method, r.path, res.status)
		}
	}
	// Another organization sees nothing of Acme's sources.
	outsider := tokenClient(t, f.env, "outsider@globex.test")
	for _, p := range []string{"/api/v1/orgs/acme/sources/" + org.ID, wsSources + "/" + org.ID + "/tools"} {
		if res := outsider.api("GET", p, nil); res.status != 404 || strings.Contains(res.body, "Greeter") {
			t.Errorf("outsider GET %s: %d", p, res.status)
		}
	}
	var globex struct{ Data []any }
	outsider.api("GET", "/api/v1/orgs/globex/sources", nil).json(t, &globex)
	if len(globex.Data) != 0 {
		t.Fatal("Globex sees Acme's sources")
	}
	// Deleting the organization source removes it everywhere.
	if res := owner.api("DELETE", "/api/v1/orgs/acme/sources/"+org.ID, nil); res.status != 204 {
		t.Fatalf("delete: %d", res.status)
	}
	if res := owner.api("GET", wsSources+"/"+org.ID+"/tools", nil); res.status != 404 {
		t.Fatalf("deleted source's tools: %d", res.status)
	}
}

func TestMCPSourcesSecretsAndImport(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	memory := testenv.PeerBin(t, "mcp-server-memory")
	secret := "sk-live-do-not-leak-12345"
	src := createSource(t, owner, wsSources, map[string]any{"name": "Memory", "type": "mcp", "config": map[string]any{
		"transport": "stdio", "command": memory, "env": map[string]any{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl", "API_TOKEN": secret}}}, 201)
	if src.State != "ready" || src.ToolCount == 0 {
		t.Fatalf("memory server: %+v", src)
	}
	// The secret left the configuration for the source's workspace credential.
	env := src.Config["env"].(map[string]any)
	if _, ok := env["API_TOKEN"]; ok || len(src.SecretKeys) != 0 {
		t.Fatalf("the secret stayed in the configuration: %+v", src)
	}
	creds := &credentials.Service{Store: f.store, Ring: f.keys}
	stored, err := f.store.Source(context.Background(), orgIDOf(t, f.env, "acme"), src.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := creds.ForDiscovery(context.Background(), stored); err != nil || a.Env["API_TOKEN"] != secret {
		t.Fatalf("the source's credential: %+v %v", a, err)
	}
	// An edit that leaves the secret out keeps the credential.
	owner.api("PATCH", wsSources+"/"+src.ID, map[string]any{"name": "Memory Store", "config": map[string]any{
		"transport": "stdio", "command": memory, "env": env}})
	patched := settle(t, owner, wsSources+"/"+src.ID)
	if a, err := creds.ForDiscovery(context.Background(), stored); err != nil || a.Env["API_TOKEN"] != secret {
		t.Fatalf("the credential after an edit: %+v %v", a, err)
	}
	if patched.Namespace != "memory-store" || patched.State != "ready" {
		t.Fatalf("patched: %+v", patched)
	}
	page := f.owner.get("/o/acme/w/default/sources/" + src.ID)
	if page.status != 200 || strings.Contains(page.body, secret) || !strings.Contains(page.body, "memory-store.") {
		t.Fatalf("source page: %d (leaks secret: %v)", page.status, strings.Contains(page.body, secret))
	}
	// A command that does not exist leaves a failed source with a clear error.
	bad := createSource(t, owner, wsSources, map[string]any{"name": "Nope", "type": "mcp", "config": map[string]any{"transport": "stdio", "command": "toolgate-no-such-command"}}, 201)
	if bad.State != "failed" || !strings.Contains(bad.Error, "not found") {
		t.Fatalf("missing command: %+v", bad)
	}

	// Import from a Claude Desktop configuration: preview, then create.
	everything := testenv.PeerBin(t, "mcp-server-everything")
	claude := `{"mcpServers": {
		"everything": {"command": "` + everything + `", "args": ["stdio"], "env": {"GITHUB_TOKEN": "ghp_secret"}},
		"remote": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer abc"}},
		"broken": {"args": ["x"]}
	}}`
	preview := owner.do("POST", wsSources+"/import?dry_run=true", strings.NewReader(claude), "application/json", false)
	var plan struct {
		Entries []struct {
			Key        string
			SecretKeys []string `json:"secret_keys"`
			Problem    string
		}
		Created map[string]string
	}
	if err := json.Unmarshal([]byte(preview.body), &plan); err != nil || len(plan.Entries) != 3 || len(plan.Created) != 0 {
		t.Fatalf("preview: %d %s", preview.status, preview.body)
	}
	if plan.Entries[1].Key != "everything" || plan.Entries[1].SecretKeys[0] != "env.GITHUB_TOKEN" || plan.Entries[0].Problem == "" {
		t.Fatalf("preview entries: %+v", plan.Entries)
	}
	done := owner.do("POST", wsSources+"/import", strings.NewReader(claude), "application/json", false)
	if err := json.Unmarshal([]byte(done.body), &plan); err != nil || done.status != 201 || plan.Created["everything"] == "" || plan.Created["remote"] == "" {
		t.Fatalf("import: %d %s", done.status, done.body)
	}
	imported := settle(t, owner, wsSources+"/"+plan.Created["everything"])
	if imported.State != "ready" || imported.ToolCount < 5 {
		t.Fatalf("imported everything: %+v", imported)
	}
	remote := settle(t, owner, wsSources+"/"+plan.Created["remote"])
	if remote.State != "failed" || !strings.Contains(remote.Error, "refused") {
		t.Fatalf("imported remote (nothing listens on port 1): %+v", remote)
	}
	for _, leaked := range []string{secret, "ghp_secret", "Bearer abc"} {
		if strings.Contains(logsOf(t), leaked) {
			t.Fatalf("%q reached the log", leaked)
		}
	}
}

func TestSourcesConsole(t *testing.T) {
	f := newFixture(t, peerVars)
	list := f.member.get("/o/acme/w/default/sources")
	if list.status != 200 || !strings.Contains(list.body, "No sources yet") || strings.Contains(list.body, `data-testid="new-source"`) {
		t.Fatalf("empty list as member: %d", list.status)
	}
	sdl := "type Query { \"Say hello.\" hello(name: String!): String }\ntype Mutation { setGreeting(text: String!): String }"
	form := url.Values{"name": {"Greeter"}, "type": {"graphql"}, "scope": {"workspace"}, "schema": {sdl}}
	// Test without saving, as htmx does: a fragment with the tool count.
	test := f.owner.post("/o/acme/w/default/sources/test", form, true)
	if test.status != 200 || !strings.Contains(test.body, "3 tools") || strings.Contains(test.body, "<html") {
		t.Fatalf("test: %d %s", test.status, excerpt(test.body))
	}
	// Bad input keeps what was typed, with the error next to the field.
	bad := f.owner.post("/o/acme/w/default/sources", url.Values{"name": {"Greeter"}, "type": {"graphql"}, "endpoint": {"not a url"}}, true)
	if bad.status != 422 || !strings.Contains(bad.body, "Enter an absolute http") || !strings.Contains(bad.body, `value="Greeter"`) {
		t.Fatalf("bad form: %d %s", bad.status, excerpt(bad.body))
	}
	saved := f.owner.post("/o/acme/w/default/sources", form, false)
	if saved.status != 303 || !strings.HasPrefix(saved.header.Get("Location"), "/o/acme/w/default/sources/src_") {
		t.Fatalf("save: %d %q %s", saved.status, saved.header.Get("Location"), excerpt(saved.body))
	}
	detailURL := saved.header.Get("Location")
	id := detailURL[strings.LastIndex(detailURL, "/")+1:]
	settle(t, f.owner, wsSources+"/"+id)
	if st := f.member.do("GET", detailURL+"/state", nil, "", true); st.status != 200 || st.header.Get("HX-Refresh") != "true" || !strings.Contains(st.body, "ready") {
		t.Fatalf("state poll after the refresh: %d %q %s", st.status, st.header.Get("HX-Refresh"), st.body)
	}
	detail := f.owner.get(detailURL)
	for _, want := range []string{"greeter.query.hello", "greeter.mutation.setGreeting", "greeter.graphql", "Say hello.", "required", "auto"} {
		if !strings.Contains(detail.body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	// Filters and sort.
	if res := f.member.get("/o/acme/w/default/sources?type=openapi"); !strings.Contains(res.body, "No source matches") {
		t.Error("type filter did not filter")
	}
	if res := f.member.get("/o/acme/w/default/sources?q=greet&sort=tools"); !strings.Contains(res.body, `data-testid="source-greeter"`) {
		t.Error("search did not find the source")
	}
	// Disable, enable, edit, delete with typed confirmation.
	if res := f.owner.post(detailURL+"/enabled", url.Values{"enabled": {"false"}}, false); res.status != 303 {
		t.Fatalf("disable: %d", res.status)
	}
	if res := f.owner.get("/o/acme/w/default/sources"); !strings.Contains(res.body, ">disabled<") && !strings.Contains(res.body, "disabled") {
		t.Error("the list does not show the source as disabled")
	}
	edit := f.owner.get(detailURL + "/edit")
	if edit.status != 200 || !strings.Contains(edit.body, "Save and refresh") {
		t.Fatalf("edit page: %d", edit.status)
	}
	if res := f.owner.post(detailURL, url.Values{"name": {"Greeter Two"}, "type": {"graphql"}, "schema": {sdl}}, false); res.status != 303 {
		t.Fatalf("edit: %d %s", res.status, excerpt(res.body))
	}
	settle(t, f.owner, wsSources+"/"+id)
	if res := f.owner.get(detailURL); !strings.Contains(res.body, "greeter-two.query.hello") {
		t.Fatal("renaming did not rename the namespace")
	}
	if res := f.owner.post(detailURL+"/delete", url.Values{"confirm": {"greeter"}}, false); res.status != 422 {
		t.Fatalf("delete without the exact namespace: %d", res.status)
	}
	if res := f.owner.post(detailURL+"/delete", url.Values{"confirm": {"greeter-two"}}, false); res.status != 303 || f.owner.get(detailURL).status != 404 {
		t.Fatalf("delete: %d", res.status)
	}
	// Members cannot reach the forms.
	if res := f.member.get("/o/acme/w/default/sources/new"); res.status != 403 {
		t.Fatalf("member new-source page: %d", res.status)
	}
}

// lastLines is the end of a log, for failure messages.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// riverJobs lists the queue's jobs, to explain a source that never settles.
func riverJobs(e *env) string {
	rows, err := e.store.Pool().Query(context.Background(), `SELECT id, state, args::text, attempt, errors::text FROM river_job ORDER BY id`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var attempt int
		var state, args string
		var errs *string
		_ = rows.Scan(&id, &state, &args, &attempt, &errs)
		b.WriteString(fmt.Sprintf("\n  %d %s %s attempt %d", id, state, args, attempt))
		if errs != nil {
			b.WriteString(" " + *errs)
		}
	}
	return b.String()
}

// orgIDOf is the id of the organization with the slug.
func orgIDOf(t testing.TB, e *env, slug string) int64 {
	t.Helper()
	var id int64
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT id FROM organizations WHERE slug = $1`, slug).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
