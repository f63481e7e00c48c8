package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
)

// serverEnv makes the test binary an MCP stdio server (see stdioServer).
const serverEnv = "GATEWAY_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		stdioServer()
		return
	}
	testenv.Main(m)
}

// recorder collects audit rows: a test double of the gateway's Recorder.
type recorder struct {
	mu    sync.Mutex
	calls []audit.Call
}

func (r *recorder) Record(c audit.Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) all() []audit.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]audit.Call(nil), r.calls...)
}

func (r *recorder) last(t testing.TB) audit.Call {
	t.Helper()
	all := r.all()
	if len(all) == 0 {
		t.Fatal("no audit row")
	}
	return all[len(all)-1]
}

// tenant is an organization with its owner and two workspaces.
type tenant struct {
	org     db.Organization
	owner   credentials.Actor
	member  credentials.Actor
	ws, ws2 db.Workspace
}

// caller calls from the tenant's first workspace as its owner.
func (tn tenant) caller() gateway.Caller {
	return gateway.Caller{OrgID: tn.org.ID, WorkspaceID: tn.ws.ID, UserID: tn.owner.UserID, Via: gateway.ViaConsole, Role: "owner"}
}

// env is a database with two tenants, the services that create sources
// and credentials the way the product does, and a gateway over them.
type env struct {
	t       testing.TB
	opts    gateway.Options
	store   *db.Store
	creds   *credentials.Service
	sources *sources.Service
	rec     *recorder
	gw      *gateway.Gateway
	// held is the approvals service the gateway holds calls with.
	held *approvals.Service
	ring *secrets.Ring
	a, b tenant
}

func newEnv(t testing.TB, opts ...func(*gateway.Options)) *env {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	entry, err := secrets.NewKeyEntry()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secrets.ParseRing(entry)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rules := sources.Rules{AllowStdio: true}
	refresher := &registry.Refresher{Store: store, Discoverer: registry.NewDiscoverer(true, 30*time.Second, "test"), Log: log, Rules: rules}
	e := &env{t: t, store: store, rec: &recorder{}}
	e.sources = &sources.Service{Store: store, Refresher: refresher, Rules: rules}
	e.creds = &credentials.Service{Store: store, Ring: ring, Refresher: refresher, Sources: e.sources}
	e.sources.Credentials = e.creds
	refresher.Credentials = e.creds
	e.a = e.newTenant("a")
	e.b = e.newTenant("b")
	e.ring = ring
	e.held = e.newApprovals()

	o := gateway.Options{Store: store, Credentials: e.creds, Index: search.Postgres{Store: store}, Recorder: e.rec,
		AllowPrivateNetworks: true, Version: "test", Logger: log,
		Policies: &policy.Service{Store: store}, Approvals: e.held, ApprovalWait: 30 * time.Second,
		ApprovalURL: func(org, ws, id string) string {
			return "https://toolgate.test/o/" + org + "/w/" + ws + "/approvals/" + id
		}}
	for _, f := range opts {
		f(&o)
	}
	e.opts = o
	e.gw = gateway.New(o)
	t.Cleanup(func() { e.closeGateway() })
	return e
}

// newApprovals is an approvals service over the env's database, as a
// replica of its own would run one; it wakes and ticks quickly.
func (e *env) newApprovals() *approvals.Service {
	s := approvals.New(approvals.Options{Store: e.store, Ring: e.ring, PollInterval: 200 * time.Millisecond,
		TickInterval: 50 * time.Millisecond, SweepInterval: time.Second})
	e.t.Cleanup(s.Close)
	return s
}

// rule stores a policy rule of an organization (ws nil) or a workspace.
func (e *env) rule(tn tenant, ws *db.Workspace, f db.PolicyFields) db.Policy {
	e.t.Helper()
	if f.TargetType == "" {
		f.TargetType = "everyone"
	}
	if f.SelectorType == "" {
		f.SelectorType = "all"
	}
	if f.ApprovalTTLSeconds == 0 {
		f.ApprovalTTLSeconds = 600
	}
	f.Enabled = true
	var wsID *int64
	if ws != nil {
		wsID = &ws.ID
	}
	p, err := e.store.CreatePolicy(context.Background(), tn.org.ID, wsID, tn.owner.UserID, f)
	if err != nil {
		e.t.Fatalf("create policy: %v", err)
	}
	return p
}

func (e *env) closeGateway() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.gw.Close(ctx); err != nil {
		e.t.Errorf("close the gateway: %v", err)
	}
}

func (e *env) newTenant(name string) tenant {
	e.t.Helper()
	ctx := context.Background()
	ten := &tenancy.Service{Store: e.store}
	suffix := strings.ToLower(rand.Text()[:8])
	u, org, err := ten.CreateAccount(ctx, name+"-owner-"+suffix+"@example.test", "Owner "+name, "correct horse battery", "Org "+name+" "+suffix)
	if err != nil {
		e.t.Fatal(err)
	}
	m, _, err := ten.CreateAccount(ctx, name+"-member-"+suffix+"@example.test", "Member "+name, "correct horse battery", "")
	if err != nil {
		e.t.Fatal(err)
	}
	tn := tenant{org: *org, owner: credentials.Actor{UserID: u.ID, Role: auth.Owner}, member: credentials.Actor{UserID: m.ID, Role: auth.Member}}
	err = e.store.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := db.AddMember(ctx, tx, org.ID, m.ID, string(auth.Member)); err != nil {
			return err
		}
		if tn.ws, err = db.CreateWorkspace(ctx, tx, org.ID, "one-"+suffix, "One"); err != nil {
			return err
		}
		tn.ws2, err = db.CreateWorkspace(ctx, tx, org.ID, "two-"+suffix, "Two")
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	// Tools default to needing approval unless read-only; the gateway's
	// tests call them freely, and the policy tests add stricter rules.
	e.rule(tn, nil, db.PolicyFields{Effect: "allow", Note: "tests call every tool"})
	return tn
}

// source creates a source in a workspace (nil: organization-wide) the way
// the console does, which discovers its tools before returning.
func (e *env) source(tn tenant, ws *db.Workspace, name string, typ sources.Type, cfg any) db.Source {
	e.t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	scope, wsID := sources.ScopeOrganization, (*int64)(nil)
	if ws != nil {
		scope, wsID = sources.ScopeWorkspace, &ws.ID
	}
	src, err := e.sources.Create(context.Background(), tn.org.ID, wsID, sources.Input{Name: name, Type: typ, Scope: scope, Config: raw, ActorID: tn.owner.UserID})
	if err != nil {
		e.t.Fatalf("create source %s: %v", name, err)
	}
	if src.State == "failed" || src.ToolCount == 0 {
		e.t.Fatalf("source %s: state %s, %d tools, error %s", name, src.State, src.ToolCount, src.Error)
	}
	return src
}

// credential stores a credential for a source.
func (e *env) credential(tn tenant, ws *db.Workspace, actor credentials.Actor, src db.Source, scope credentials.Scope, a credentials.Auth, sec credentials.Secret) db.Credential {
	e.t.Helper()
	place := credentials.Place{OrgID: tn.org.ID}
	if ws != nil {
		place.WorkspaceID = &ws.ID
	}
	c, err := e.creds.Create(context.Background(), place, actor, credentials.Input{SourceID: src.ID, Scope: scope, Auth: a, Secret: &sec})
	if err != nil {
		e.t.Fatalf("create %s credential: %v", scope, err)
	}
	return c
}

// toolPath finds the path of a source's tool whose path ends with suffix.
func (e *env) toolPath(src db.Source, suffix string) string {
	e.t.Helper()
	tools, err := e.store.AllTools(context.Background(), src.OrgID, src.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	var paths []string
	for _, tool := range tools {
		if strings.HasSuffix(tool.Path, suffix) {
			return tool.Path
		}
		paths = append(paths, tool.Path)
	}
	e.t.Fatalf("source %s has no tool ending in %q; it has %v", src.Name, suffix, paths)
	return ""
}

// text joins a result's text content.
func text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// call runs a call that must not fail in toolgate.
func (e *env) call(c gateway.Caller, path string, args string) *mcp.CallToolResult {
	e.t.Helper()
	res, err := e.gw.Call(e.t.Context(), c, path, json.RawMessage(args), nil)
	if err != nil {
		e.t.Fatalf("call %s: %v", path, err)
	}
	return res
}

// itemsSpec is the OpenAPI description of itemsAPI.
const itemsSpec = `{
  "openapi": "3.0.3",
  "info": {"title": "Items", "version": "1"},
  "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
  "security": [{"key": []}],
  "paths": {
    "/items/{id}": {"get": {"operationId": "getItem",
      "parameters": [
        {"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}},
        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
        {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object",
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}}}}}},
    "/items": {"post": {"operationId": "createItem",
      "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object",
        "required": ["name", "count"], "additionalProperties": false,
        "properties": {"name": {"type": "string", "minLength": 2}, "count": {"type": "integer", "minimum": 0},
          "color": {"type": "string", "enum": ["red", "green"]}, "password": {"type": "string", "pattern": "^[a-z0-9-]+$"}}}}}},
      "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"type": "object"}}}}}}},
    "/whoami": {"get": {"operationId": "whoami", "responses": {"200": {"description": "the caller's key, echoed"}}}},
    "/big": {"get": {"operationId": "big", "responses": {"200": {"description": "10 MB"}}}},
    "/broken": {"get": {"operationId": "broken", "responses": {"200": {"description": "JSON that is not"}}}},
    "/fail": {"get": {"operationId": "fail", "responses": {"503": {"description": "down"}}}},
    "/hang": {"get": {"operationId": "hang", "responses": {"200": {"description": "never"}}}},
    "/away": {"get": {"operationId": "away", "responses": {"302": {"description": "elsewhere"}}}}
  }
}`

// bigSize is what /big answers.
const bigSize = 10 << 20

// itemsAPI is a real net/http API described by itemsSpec; it logs every
// request it receives.
type itemsAPI struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD /path?query key=<X-Api-Key>"
	// elsewhere is where /away redirects, another origin that logs too.
	elsewhere *httptest.Server
	away      []string
}

func newItemsAPI(t testing.TB) *itemsAPI {
	t.Helper()
	api := &itemsAPI{}
	api.elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.mu.Lock()
		api.away = append(api.away, r.URL.RequestURI()+" key="+r.Header.Get("X-Api-Key"))
		api.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"landed":true}`)
	}))
	t.Cleanup(api.elsewhere.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%s,"name":"item %s","verbose":%q}`, r.PathValue("id"), r.PathValue("id"), r.URL.Query().Get("verbose"))
	})
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"created":%s}`, body)
	})
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"key": r.Header.Get("X-Api-Key")})
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(bigSize))
		line := []byte(strings.Repeat("x", 1023) + "\n")
		for i := 0; i < bigSize/len(line); i++ {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": 1, "name": "cut`)
	})
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"error":"down for maintenance","your_key":%q}`, r.Header.Get("X-Api-Key"))
	})
	mux.HandleFunc("GET /hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	mux.HandleFunc("GET /away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, api.elsewhere.URL+"/landing", http.StatusFound)
	})
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.mu.Lock()
		api.seen = append(api.seen, r.Method+" "+r.URL.RequestURI()+" key="+r.Header.Get("X-Api-Key"))
		api.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	return api
}

func (a *itemsAPI) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

func (a *itemsAPI) redirected() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.away...)
}

// openAPIConfig is an inline spec with a base URL.
func openAPIConfig(spec, baseURL string) map[string]any {
	return map[string]any{"spec": json.RawMessage(spec), "baseUrl": baseURL}
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrism serves a spec with Prism's mock server and returns its URL.
func startPrism(t testing.TB, spec string) string {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testenv.PeerBin(t, "prism"), "mock", "-p", fmt.Sprint(port), "--host", "127.0.0.1", spec)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start prism: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/")
		if err == nil {
			res.Body.Close()
			return base
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("prism did not start within 60 s:\n%s", out.String())
	return ""
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
