package handlers_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/websession"
)

func TestReadyzNamesWhatIsDown(t *testing.T) {
	e := newEnv(t, nil)
	cfg, _ := config.Load(func(string) string { return "" })
	srv := httptest.NewServer(handlers.New(handlers.Deps{
		Config: cfg, Store: e.store, Sessions: handlers.NewSessions(cfg, websession.NewStore(e.store.Pool(), 0)),
		Logger: testLogger(t),
		Checks: map[string]func(context.Context) error{
			"postgresql":  e.store.Ping,
			"meilisearch": func(context.Context) error { return errors.New("connection refused") },
		},
	}))
	defer srv.Close()
	c := &client{e: &env{t: t, srv: srv}, http: srv.Client()}
	res := c.get("/readyz")
	if res.status != 503 || !strings.Contains(res.body, `"meilisearch":"unreachable"`) || !strings.Contains(res.body, `"postgresql":"ok"`) || !strings.Contains(res.body, "meilisearch not reachable") {
		t.Fatalf("readyz: %d %s", res.status, res.body)
	}
	if res := c.get("/healthz"); res.status != 200 {
		t.Fatalf("healthz while a dependency is down: %d", res.status)
	}
}

// TestServerErrorsRenderInTheLayoutAndAreLogged breaks the database under a
// signed-in person: the page is a 500 in the console's frame, the API gets
// the JSON error, and the log line carries the request id.
func TestServerErrorsRenderInTheLayoutAndAreLogged(t *testing.T) {
	f := newFixture(t)
	if _, err := f.store.Pool().Exec(context.Background(), `ALTER TABLE workspaces RENAME TO workspaces_gone`); err != nil {
		t.Fatal(err)
	}
	res := f.owner.get("/o/acme/w/default")
	if res.status != 500 || !strings.Contains(res.body, "Something went wrong") || !strings.Contains(res.body, `data-testid="org-nav"`) {
		t.Fatalf("500 page: %d %s", res.status, excerpt(res.body))
	}
	if strings.Contains(res.body, "workspaces") && strings.Contains(res.body, "does not exist") {
		t.Fatal("the 500 page shows internal details")
	}
	api := f.owner.api("GET", "/api/v1/orgs/acme/workspaces", nil)
	if api.status != 500 || !strings.Contains(api.body, `"code":"internal"`) {
		t.Fatalf("API 500: %d %s", api.status, api.body)
	}
	id := res.header.Get("X-Request-Id")
	logs := logsOf(t)
	if id == "" || !strings.Contains(logs, `"msg":"request failed","request_id":"`+id+`"`) {
		t.Fatalf("no error line with request id %q in:\n%s", id, logs)
	}
	res = f.owner.do("GET", "/o/acme/w/default", nil, "", true)
	if res.status != 500 || res.header.Get("HX-Retarget") != "#alerts" || strings.Contains(res.body, "<html") {
		t.Fatalf("htmx 500: %d %v %s", res.status, res.header, excerpt(res.body))
	}
}
