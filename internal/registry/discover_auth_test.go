package registry_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// canary is a secret unique to the test, with characters that URL, JSON
// and base64 encodings each spell differently.
func canary(t *testing.T, what string) string {
	t.Helper()
	return "tg-" + what + "-" + strings.ToLower(rand.Text()[:10]) + "/+=\"&"
}

// assertNoSecret fails when s holds a secret in any form an echo could
// take: as is, URL-encoded, path-encoded, base64 or JSON-escaped.
func assertNoSecret(t *testing.T, what, s string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		j, _ := json.Marshal(secret)
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
			base64.StdEncoding.EncodeToString([]byte(secret)), strings.Trim(string(j), `"`)} {
			if strings.Contains(s, form) {
				t.Errorf("%s shows the secret %q (as %q):\n%s", what, secret, form, s)
			}
		}
	}
}

func newDiscoverer() *registry.Discoverer {
	return registry.NewDiscoverer(true, 10*time.Second, "test")
}

// authWith builds a credential's auth from "header:Name", "query:name" and
// "env:NAME" keys.
func authWith(values map[string]string) *sources.Auth {
	a := &sources.Auth{}
	for k, v := range values {
		kind, name, _ := strings.Cut(k, ":")
		switch kind {
		case "header":
			a.SetHeader(name, v)
		case "query":
			a.SetQuery(name, v)
		case "env":
			a.SetEnv(name, v)
		}
	}
	return a
}

// TestDiscoverOpenAPIWithCredential fetches specs that need a bearer token
// or an API key in the query, from a server that echoes what it received
// in its refusals and puts the token in the spec it serves.
func TestDiscoverOpenAPIWithCredential(t *testing.T) {
	token, key, wrong := canary(t, "token"), canary(t, "key"), canary(t, "wrong")
	spec := func(seen string) []byte {
		b, _ := json.Marshal(map[string]any{
			"openapi": "3.0.3", "info": map[string]any{"title": "Widgets", "version": "1"},
			"servers": []any{map[string]any{"url": "https://widgets.example.test"}},
			"paths": map[string]any{"/widgets": map[string]any{"get": map[string]any{
				"operationId": "listWidgets", "summary": "List widgets",
				"description": "You called this with " + seen + ".",
				"parameters": []any{map[string]any{"name": "token", "in": "query",
					"schema": map[string]any{"type": "string", "default": seen, "enum": []any{seen, "other"}}}},
				"responses": map[string]any{"200": map[string]any{"description": "OK"}},
			}}},
		})
		return b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/bearer.json", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"message":"bad credentials: %q for %s"}`, r.Header.Get("Authorization"), r.URL)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(spec(r.Header.Get("Authorization")))
	})
	mux.HandleFunc("/keyed.json", func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.Query().Get("api_key"); got != key {
			http.Error(w, "unknown api_key "+got+" in "+r.URL.String(), http.StatusForbidden)
			return
		}
		w.Write(spec(r.URL.Query().Get("api_key")))
	})
	// A redirect loop that carries the key it received into the next URL:
	// the client's "stopped after 5 redirects" error names that URL.
	mux.HandleFunc("/loop.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop.json?seen="+url.QueryEscape(r.URL.Query().Get("api_key")), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct {
		name      string
		path      string
		auth      *sources.Auth
		wantError string // "" means discovery succeeds
	}{
		{"bearer missing", "/bearer.json", nil, "answered HTTP 401 Unauthorized: the spec needs a credential"},
		{"bearer wrong", "/bearer.json", authWith(map[string]string{"header:Authorization": "Bearer " + wrong}),
			"answered HTTP 401 Unauthorized: the spec refused the source's credential"},
		{"bearer", "/bearer.json", authWith(map[string]string{"header:Authorization": "Bearer " + token}), ""},
		{"api key missing", "/keyed.json", nil, "answered HTTP 403 Forbidden: the spec needs a credential"},
		{"api key wrong", "/keyed.json", authWith(map[string]string{"query:api_key": wrong}), "answered HTTP 403 Forbidden"},
		{"api key", "/keyed.json", authWith(map[string]string{"query:api_key": key}), ""},
		{"api key echoed by redirects", "/loop.json", authWith(map[string]string{"query:api_key": key}), "stopped after 5 redirects"},
	}
	d := newDiscoverer()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &sources.OpenAPIConfig{Spec: specConfigURL(srv.URL + tc.path)}
			disc, _, err := d.Discover(t.Context(), cfg, "", tc.auth)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantError)
				}
				assertNoSecret(t, "the error", err.Error(), token, key, wrong)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(disc.Tools) != 1 {
				t.Fatalf("tools: %+v", disc.Tools)
			}
			tool := disc.Tools[0]
			if tool.Description != "List widgets\n\nYou called this with "+sources.Mask+"." {
				t.Errorf("description = %q", tool.Description)
			}
			if !json.Valid(tool.InputSchema) || !strings.Contains(string(tool.InputSchema), sources.Mask) {
				t.Errorf("input schema = %s", tool.InputSchema)
			}
			if disc.BaseURL != "https://widgets.example.test" {
				t.Errorf("base URL = %q", disc.BaseURL)
			}
			b, _ := json.Marshal(disc)
			assertNoSecret(t, "the discovery", string(b), token, key)
		})
	}
}

func specConfigURL(u string) json.RawMessage {
	b, _ := json.Marshal(u)
	return b
}

// TestDiscoverGraphQLWithCredential introspects graphql-yoga endpoints that
// require a header and a query parameter and echo what they got when
// refusing.
func TestDiscoverGraphQLWithCredential(t *testing.T) {
	token, key, wrong := canary(t, "token"), canary(t, "key"), canary(t, "wrong")
	withHeader := testenv.StartYoga(t, "--require-header", "X-Api-Key="+token)
	withQuery := testenv.StartYoga(t, "--require-query", "api_key="+key)
	both := testenv.StartYoga(t, "--require-header", "X-Api-Key="+token, "--require-query", "api_key="+key)

	tests := []struct {
		name      string
		endpoint  string
		auth      *sources.Auth
		wantError string
	}{
		{"header missing", withHeader, nil, "the endpoint answered HTTP 401: Unauthorized: header X-Api-Key is missing"},
		{"header wrong", withHeader, authWith(map[string]string{"header:X-Api-Key": wrong}),
			"the endpoint answered HTTP 401: Unauthorized: header X-Api-Key is wrong: got " + sources.Mask},
		{"header", withHeader, authWith(map[string]string{"header:X-Api-Key": token}), ""},
		{"query missing", withQuery, nil, "query parameter api_key is missing"},
		{"query wrong", withQuery, authWith(map[string]string{"query:api_key": wrong}),
			"query parameter api_key is wrong: got " + sources.Mask + " (request /graphql?api_key=" + sources.Mask + ")"},
		{"query", withQuery, authWith(map[string]string{"query:api_key": key}), ""},
		{"header without query", both, authWith(map[string]string{"header:X-Api-Key": token}), "query parameter api_key is missing"},
		{"header and query", both, authWith(map[string]string{"header:X-Api-Key": token, "query:api_key": key}), ""},
	}
	d := newDiscoverer()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disc, _, err := d.Discover(t.Context(), &sources.GraphQLConfig{Endpoint: tc.endpoint}, "", tc.auth)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantError)
				}
				if !strings.Contains(err.Error(), "check the source's credentials") {
					t.Errorf("error = %v, want advice on credentials", err)
				}
				assertNoSecret(t, "the error", err.Error(), token, key, wrong)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range disc.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if want := []string{"graphql", "mutation.addBook", "query.authors", "query.book", "query.books"}; !slices.Equal(names, want) {
				t.Errorf("tools = %v, want %v", names, want)
			}
			if disc.BaseURL != tc.endpoint {
				t.Errorf("base URL = %q, want the endpoint without the credential %q", disc.BaseURL, tc.endpoint)
			}
			b, _ := json.Marshal(disc)
			assertNoSecret(t, "the discovery", string(b), token, key)
		})
	}
}

// mcpGuard is an access proxy in front of an MCP server: it refuses, with
// 401 and an echo of what it got, every request without the service token
// header and the tenant query parameter, and records what each request
// carried.
type mcpGuard struct {
	token, tenant string
	next          http.Handler

	mu   sync.Mutex
	seen []string
}

func (g *mcpGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got, tenant := r.Header.Get("X-Service-Token"), r.URL.Query().Get("tenant")
	g.mu.Lock()
	g.seen = append(g.seen, fmt.Sprintf("%s %s token-ok=%v tenant-ok=%v extra=%s",
		r.Method, r.URL.Path, got == g.token, tenant == g.tenant, r.Header.Get("X-Extra")))
	g.mu.Unlock()
	if got != g.token || tenant != g.tenant {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "access denied for token %q at %s", got, r.URL)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *mcpGuard) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

// echoingServer is an MCP server whose one tool repeats, in its text and
// schemas, the token the request that created the session carried.
func echoingServer(r *http.Request) *sdk.Server {
	seen := r.Header.Get("X-Service-Token")
	s := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1.0.0"}, nil)
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		"token": map[string]any{"type": "string", "default": seen, "description": "Yours is " + seen},
	}})
	s.AddTool(&sdk.Tool{
		Name: "whoami", Title: "Who am I (" + seen + ")", Description: "Tells who " + seen + " is.",
		InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(schema),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	})
	return s
}

// TestDiscoverRemoteMCPWithCredential discovers a go-sdk MCP server behind
// an access proxy over streamable HTTP and SSE.
func TestDiscoverRemoteMCPWithCredential(t *testing.T) {
	t.Parallel()
	token, tenant, wrong := canary(t, "token"), canary(t, "tenant"), canary(t, "wrong")
	for _, transport := range []string{sources.TransportStreamableHTTP, sources.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var handler http.Handler = sdk.NewStreamableHTTPHandler(echoingServer, nil)
			if transport == sources.TransportSSE {
				handler = sdk.NewSSEHandler(echoingServer, nil)
			}
			guard := &mcpGuard{token: token, tenant: tenant, next: handler}
			srv := httptest.NewServer(guard)
			defer srv.Close()
			// The source's own headers: one the credential replaces, one it
			// leaves.
			cfg := func() *sources.MCPConfig {
				return &sources.MCPConfig{Transport: transport, URL: srv.URL + "/mcp",
					Headers: map[string]string{"X-Service-Token": "stale-config-value", "X-Extra": "from-config"}}
			}
			d := newDiscoverer()

			for _, tc := range []struct {
				name string
				auth *sources.Auth
			}{
				{"no credential", nil},
				{"wrong token", authWith(map[string]string{"header:X-Service-Token": wrong, "query:tenant": tenant})},
				{"token without tenant", authWith(map[string]string{"header:X-Service-Token": token})},
			} {
				_, _, err := d.Discover(t.Context(), cfg(), "", tc.auth)
				if err == nil || !strings.Contains(err.Error(), "refused the request with 401 Unauthorized") {
					t.Fatalf("%s: error = %v, want a 401 refusal", tc.name, err)
				}
				assertNoSecret(t, tc.name+": the error", err.Error(), token, tenant, wrong)
			}

			before := len(guard.requests())
			auth := authWith(map[string]string{"header:X-Service-Token": token, "query:tenant": tenant})
			disc, _, err := d.Discover(t.Context(), cfg(), "", auth)
			if err != nil {
				t.Fatalf("with the credential: %v", err)
			}
			// Every request of the discovery carried the credential (the
			// SSE stream and each POST) and the source's other header.
			reqs := guard.requests()[before:]
			var methods []string
			for _, r := range reqs {
				if !strings.HasSuffix(r, "token-ok=true tenant-ok=true extra=from-config") {
					t.Errorf("a request went without the credential: %s", r)
				}
				methods = append(methods, strings.Fields(r)[0])
			}
			if !slices.Contains(methods, http.MethodPost) || transport == sources.TransportSSE && !slices.Contains(methods, http.MethodGet) {
				t.Errorf("requests = %v", reqs)
			}
			if len(disc.Tools) != 1 {
				t.Fatalf("tools = %+v", disc.Tools)
			}
			tool := disc.Tools[0]
			if tool.Name != "whoami" || tool.Title != "Who am I ("+sources.Mask+")" || tool.Description != "Tells who "+sources.Mask+" is." {
				t.Errorf("tool = %q %q %q", tool.Name, tool.Title, tool.Description)
			}
			for what, schema := range map[string]json.RawMessage{"input": tool.InputSchema, "output": tool.OutputSchema} {
				var s struct {
					Properties struct {
						Token struct {
							Default     string `json:"default"`
							Description string `json:"description"`
						} `json:"token"`
					} `json:"properties"`
				}
				if err := json.Unmarshal(schema, &s); err != nil || s.Properties.Token.Default != sources.Mask ||
					s.Properties.Token.Description != "Yours is "+sources.Mask {
					t.Errorf("%s schema = %s (%v)", what, schema, err)
				}
			}
			if disc.BaseURL != srv.URL+"/mcp" {
				t.Errorf("base URL = %q", disc.BaseURL)
			}
			b, _ := json.Marshal(disc)
			assertNoSecret(t, "the discovery", string(b), token, tenant)
		})
	}
}

// stdioServerVar makes the test binary an MCP stdio server (see init):
// "serve" lists "ping", and "forecast" when WEATHER_API_KEY is set, whose
// text repeats the key; "fail" complains about the key on stderr and exits.
const stdioServerVar = "TOOLGATE_TEST_STDIO_SERVER"

func init() {
	mode := os.Getenv(stdioServerVar)
	if mode == "" {
		return
	}
	key := os.Getenv("WEATHER_API_KEY")
	if mode == "fail" {
		fmt.Fprintf(os.Stderr, "fatal: WEATHER_API_KEY %s was rejected by the weather service\n", key)
		os.Exit(3)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	nop := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	}
	s.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}, nop)
	if key != "" {
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string", "description": "Asked with key " + key},
		}})
		s.AddTool(&sdk.Tool{Name: "forecast", Description: "Forecasts, with the key " + key + ".", InputSchema: json.RawMessage(schema)}, nop)
	}
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestDiscoverStdioWithCredential runs this test binary as a stdio MCP
// server that needs WEATHER_API_KEY, which the credential gives it.
func TestDiscoverStdioWithCredential(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	key := canary(t, "key")
	cfg := func(mode string) *sources.MCPConfig {
		return &sources.MCPConfig{Transport: sources.TransportStdio, Command: self,
			Env: map[string]string{stdioServerVar: mode, "WEATHER_API_KEY": "stale-config-value"}}
	}
	d := newDiscoverer()
	names := func(disc *sources.Discovery) []string {
		var out []string
		for _, tool := range disc.Tools {
			out = append(out, tool.Name)
		}
		return out
	}

	// Without a credential the configuration's own value is used.
	disc, _, err := d.Discover(t.Context(), cfg("serve"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if forecast := disc.Tools[0]; forecast.Name != "forecast" || forecast.Description != "Forecasts, with the key stale-config-value." {
		t.Errorf("without the credential: %+v", disc.Tools)
	}
	noKey := cfg("serve")
	delete(noKey.Env, "WEATHER_API_KEY")
	disc, _, err = d.Discover(t.Context(), noKey, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(disc); !slices.Equal(got, []string{"ping"}) {
		t.Errorf("without any key: tools %v", got)
	}

	// The credential's variable wins over the configuration's, and its
	// value never comes back.
	auth := authWith(map[string]string{"env:WEATHER_API_KEY": key})
	for _, c := range []*sources.MCPConfig{cfg("serve"), noKey} {
		env := envString(c.Env)
		disc, _, err = d.Discover(t.Context(), c, "", auth)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(disc); !slices.Equal(got, []string{"forecast", "ping"}) {
			t.Fatalf("with the credential: tools %v", got)
		}
		forecast := disc.Tools[0]
		if forecast.Description != "Forecasts, with the key "+sources.Mask+"." {
			t.Errorf("forecast description = %q", forecast.Description)
		}
		if want := `{"properties":{"city":{"description":"Asked with key ` + sources.Mask + `","type":"string"}},"type":"object"}`; string(forecast.InputSchema) != want {
			t.Errorf("forecast schema = %s, want %s", forecast.InputSchema, want)
		}
		b, _ := json.Marshal(disc)
		assertNoSecret(t, "the discovery", string(b), key)
		if got := envString(c.Env); got != env {
			t.Errorf("Discover changed the configuration's env: %s, was %s", got, env)
		}
	}

	// A server that prints the key it was given in its complaint.
	_, _, err = d.Discover(t.Context(), cfg("fail"), "", auth)
	if err == nil || !strings.Contains(err.Error(), "the server exited before answering initialize") ||
		!strings.Contains(err.Error(), "fatal: WEATHER_API_KEY") || !strings.Contains(err.Error(), sources.Mask) {
		t.Fatalf("failing server: %v", err)
	}
	assertNoSecret(t, "the error", err.Error(), key)
}

// envString renders a map for comparison.
func envString(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}
