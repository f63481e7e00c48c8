package handlers_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/approvals"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/fastconn"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/mcpserver"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/websession"
	"github.com/toolgate/toolgate/internal/worker"
	"github.com/toolgate/toolgate/views/paths"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// password is every fixture account's password.
const password = "correct horse battery"

// env is a real toolgate over a private database, served by httptest.
type env struct {
	t       testing.TB
	srv     *httptest.Server
	echo    *echo.Echo
	store   *db.Store
	index   *search.Meili
	queue   *worker.Queue
	keys    *secrets.Ring
	tenancy *tenancy.Service
	gateway *gateway.Gateway
	mcp     *mcpserver.Handler
	// loops serve agents' connections once a call is answered on them.
	loops *fastconn.Server
	audit *audit.Recorder
	// approvals is the server's approvals service.
	approvals *approvals.Service
}

// newEnv starts toolgate on a fresh database; vars override configuration.
func newEnv(t testing.TB, vars map[string]string) *env {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(store.Close)
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	sessions := websession.NewStore(store.Pool(), 0)
	log := testLogger(t)
	meiliURL, meiliKey := testenv.Meili(t)
	index := search.NewMeili(meiliURL, meiliKey, "tools_"+strings.ToLower(rand.Text()))
	if err := index.EnsureSettings(ctx); err != nil {
		t.Fatalf("meilisearch settings: %v", err)
	}
	keys := testKeys(t, cfg.SecretKeys)
	refresher := &registry.Refresher{Store: store, Discoverer: registry.NewDiscoverer(cfg.AllowPrivateNetworks, cfg.OutboundTimeout, "test"),
		Rules: sources.Rules{AllowStdio: cfg.AllowStdio}, Log: log, Index: index,
		Credentials: &credentials.Service{Store: store, Ring: keys}}
	queue, err := worker.New(store, refresher, log, worker.Options{Concurrency: 4, JobTimeout: time.Minute, ReconcileInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := queue.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = queue.Stop(context.Background()) })
	finder := &search.Fallback{Primary: index, Secondary: &search.Postgres{Store: store}, Log: log}
	recorder := audit.New(store, audit.Options{Logger: log, FlushInterval: 20 * time.Millisecond})
	t.Cleanup(func() { _ = recorder.Close(context.Background()) })
	// Progress ticks come quickly, so held calls report their wait in tests.
	apr := approvals.New(approvals.Options{Store: store, Ring: keys, Logger: log, TickInterval: 100 * time.Millisecond})
	t.Cleanup(apr.Close)
	gw := gateway.New(gateway.Options{
		Recorder: recorder, Store: store, Credentials: &credentials.Service{Store: store, Ring: keys}, Index: finder,
		AllowPrivateNetworks: cfg.AllowPrivateNetworks, MaxResultBytes: cfg.MaxResultBytes, Version: "test", Logger: log,
		Policies: &policy.Service{Store: store}, Approvals: apr, ApprovalWait: cfg.ApprovalWait,
		ApprovalURL: func(org, ws, id string) string { return cfg.BaseURL.String() + paths.Approval(org, ws, id) },
	})
	t.Cleanup(func() { _ = gw.Close(context.Background()) })
	mcpH := mcpserver.New(mcpserver.Options{
		Gateway: gw, Auth: &auth.Authenticator{Store: store}, Store: store, BaseURL: cfg.BaseURL,
		AllowedHosts: cfg.MCPAllowedHosts, AllowedOrigins: cfg.MCPAllowedOrigins, Version: "test", Logger: log,
		PollInterval: 200 * time.Millisecond,
	})
	t.Cleanup(mcpH.Close)
	// As `serve`: agents' connections are taken over by the fast loop.
	loops := fastconn.New(fastconn.Options{Path: "/mcp", Serve: mcpH.ServeFast, MaxBody: handlers.MCPMaxBody, Logger: log, Log: handlers.MCPRequestLog(cfg, log)})
	e := handlers.New(handlers.Deps{
		Config: cfg, Store: store, Sessions: handlers.NewSessions(cfg, sessions),
		Logger: log, Version: "test", Refresher: queue, Keys: keys, Search: finder,
		Gateway: gw, MCP: mcpH, MCPConns: loops, Approvals: apr,
		Checks: map[string]func(context.Context) error{"postgresql": store.Ping},
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	go func() { _ = srv.Config.Serve(loops.Listener()) }()
	t.Cleanup(loops.Close) // before srv.Close
	// Shut down first, as serve does, so open event streams end and Close
	// does not wait for them.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Config.Shutdown(ctx)
	})
	return &env{t: t, srv: srv, echo: e, store: store, index: index, queue: queue, keys: keys,
		tenancy: &tenancy.Service{Store: store, Signup: cfg.Signup}, gateway: gw, mcp: mcpH, audit: recorder,
		approvals: apr, loops: loops}
}

// testKeys is the key ring given as TOOLGATE_SECRET_KEYS, or a fresh one.
func testKeys(t testing.TB, ring string) *secrets.Ring {
	t.Helper()
	if ring == "" {
		entry, err := secrets.NewKeyEntry()
		if err != nil {
			t.Fatal(err)
		}
		ring = entry
	}
	keys, err := secrets.ParseRing(ring)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// account creates a user, optionally owning a new organization.
func (e *env) account(email, org string) db.User {
	e.t.Helper()
	u, _, err := e.tenancy.CreateAccount(context.Background(), email, "", password, org)
	if err != nil {
		e.t.Fatalf("create account %s: %v", email, err)
	}
	return u
}

// join adds a user to an organization with a role.
func (e *env) join(u db.User, orgSlug, role string) {
	e.t.Helper()
	ctx := context.Background()
	var orgID int64
	err := e.store.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &orgID, `SELECT id FROM organizations WHERE slug = $1`, orgSlug); err != nil {
			return err
		}
		return db.AddMember(ctx, tx, orgID, u.ID, role)
	})
	if err != nil {
		e.t.Fatalf("join %s to %s: %v", u.Email, orgSlug, err)
	}
}

// client is a browser-like client: a cookie jar, no automatic redirects.
type client struct {
	e    *env
	http *http.Client
	// token, when set, is sent as a bearer token.
	token string
}

func (e *env) anon() *client {
	jar, _ := cookiejar.New(nil)
	c := &client{e: e, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	c.get("/healthz") // any page sets no cookie; the CSRF cookie comes with the first app page
	c.get("/signin")
	return c
}

// signIn returns a client signed in through the real sign-in route.
func (e *env) signIn(email string) *client {
	e.t.Helper()
	c := e.anon()
	res := c.post("/signin", url.Values{"email": {email}, "password": {password}}, false)
	if res.status != http.StatusSeeOther {
		e.t.Fatalf("sign in %s: status %d: %s", email, res.status, res.body)
	}
	return c
}

// csrf is the token the server expects back: the value of its cookie.
func (c *client) csrf() string {
	if c.http.Jar == nil {
		return ""
	}
	u, _ := url.Parse(c.e.srv.URL)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "toolgate_csrf" {
			return ck.Value
		}
	}
	return ""
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

func (c *client) do(method, path string, body io.Reader, contentType string, htmx bool) response {
	c.e.t.Helper()
	req, err := http.NewRequest(method, c.e.srv.URL+path, body)
	if err != nil {
		c.e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if htmx {
		req.Header.Set("HX-Request", "true")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	} else if method != http.MethodGet {
		req.Header.Set("X-CSRF-Token", c.csrf())
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

func (c *client) get(path string) response { return c.do(http.MethodGet, path, nil, "", false) }

// post sends a form with the CSRF token, as a browser form would.
func (c *client) post(path string, form url.Values, htmx bool) response {
	if form == nil {
		form = url.Values{}
	}
	if form.Get("_csrf") == "" {
		form.Set("_csrf", c.csrf())
	}
	return c.do(http.MethodPost, path, strings.NewReader(form.Encode()), "application/x-www-form-urlencoded", htmx)
}

// api sends JSON to the API.
func (c *client) api(method, path string, body any) response {
	var r io.Reader
	ct := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.e.t.Fatal(err)
		}
		r, ct = strings.NewReader(string(b)), "application/json"
	}
	return c.do(method, path, r, ct, false)
}
