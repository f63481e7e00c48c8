package handlers_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testenv"
)

// canaryUpstream serves an OpenAPI spec only to requests carrying the
// canary bearer token. While reject is set it answers 401 and echoes the
// Authorization header and URL it received, as careless APIs do; when it
// serves the spec it echoes the token into descriptions too.
type canaryUpstream struct {
	*httptest.Server
	reject atomic.Bool
	// hits counts requests that carried the canary.
	hits atomic.Int64
}

func newCanaryUpstream(t *testing.T, canary string) *canaryUpstream {
	u := &canaryUpstream{}
	u.reject.Store(true)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if got == "Bearer "+canary {
			u.hits.Add(1)
		}
		if u.reject.Load() || got != "Bearer "+canary {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error": "token %q is not valid for %s"}`, got, r.URL.String())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"openapi": "3.0.3", "info": {"title": "Vault", "version": "1", "description": "Signed in as %[1]s"},
			"servers": [{"url": "https://vault.example.test"}],
			"paths": {"/secrets": {"get": {"operationId": "listSecrets", "summary": "List secrets",
				"description": "Lists secrets visible to %[1]s.", "responses": {"200": {"description": "ok"}}}}}}`, got)
	}))
	t.Cleanup(u.Close)
	return u
}

// TestCanarySecretNeverLeaks sets canary secrets through the API and
// walks everything a person or a machine can read: pages, API answers,
// error messages, the log, Meilisearch documents and every table in clear.
func TestCanarySecretNeverLeaks(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	member := tokenClient(t, f.env, "member@acme.test")
	canary := "canary-" + strings.ToLower(rand.Text()[:10]) + "-Zq9"
	mine := "canary-mine-" + strings.ToLower(rand.Text()[:10])
	up := newCanaryUpstream(t, canary)
	var seen []string // every body read, checked at the end
	keep := func(r response) response { seen = append(seen, r.body); return r }

	src := createSource(t, owner, wsSources, map[string]any{"name": "Vault", "type": "openapi", "config": map[string]any{"spec": up.URL + "/spec.json"}}, 201)
	if src.State != "failed" {
		t.Fatalf("without a credential the spec should be refused: %+v", src)
	}
	credPath := "/api/v1/orgs/acme/workspaces/default/credentials"

	// A bad request carrying the secret: the error names the field, not the value.
	bad := keep(owner.api("POST", credPath, map[string]any{"source_id": src.ID, "auth": map[string]any{"type": "bearer", "header": "Bad Header"},
		"secret": map[string]any{"value": canary}}))
	if bad.status != http.StatusUnprocessableEntity {
		t.Fatalf("bad header: %d %s", bad.status, bad.body)
	}

	created := keep(owner.api("POST", credPath, map[string]any{"source_id": src.ID, "scope": "workspace",
		"auth": map[string]any{"type": "bearer"}, "secret": map[string]any{"value": canary}}))
	if created.status != http.StatusCreated {
		t.Fatalf("create credential: %d %s", created.status, created.body)
	}
	var cred struct {
		ID      string
		Binding string
		Hint    string
	}
	created.json(t, &cred)
	if cred.Binding != "source:"+src.ID || cred.Hint == "" {
		t.Errorf("created credential: %+v", cred)
	}

	// The credential's refresh reaches the upstream, which still refuses and
	// echoes the token: the recorded error is scrubbed.
	waitFor(t, "the refresh with the credential", func() bool { return up.hits.Load() > 0 })
	failed := settle(t, owner, wsSources+"/"+src.ID)
	if failed.State != "failed" || !strings.Contains(failed.Error, "401") {
		t.Fatalf("after the credential, while the upstream refuses: %+v", failed)
	}
	seen = append(seen, failed.Error)
	tested := keep(owner.api("POST", credPath+"/"+cred.ID+"/test", nil))
	if tested.status != http.StatusOK || !strings.Contains(tested.body, "401") {
		t.Fatalf("test button: %d %s", tested.status, tested.body)
	}

	// Now the upstream accepts it and echoes it into the spec.
	up.reject.Store(false)
	before := up.hits.Load()
	keep(owner.api("POST", wsSources+"/"+src.ID+"/refresh", nil))
	waitFor(t, "the second refresh", func() bool { return up.hits.Load() > before })
	ready := settle(t, owner, wsSources+"/"+src.ID)
	if ready.State != "ready" || ready.ToolCount != 1 {
		t.Fatalf("with the credential accepted: %+v", ready)
	}

	// A member's own credential, through /me.
	minePost := keep(member.api("POST", "/api/v1/me/credentials", map[string]any{"source_id": src.ID,
		"auth": map[string]any{"type": "apiKey", "in": "query", "name": "key"}, "secret": map[string]any{"value": mine}}))
	if minePost.status != http.StatusCreated {
		t.Fatalf("member's own credential: %d %s", minePost.status, minePost.body)
	}

	// The organization's credential, through the console form: first with a
	// mistake (the page comes back with the error, not the value), then right.
	console := "canary-console-" + strings.ToLower(rand.Text()[:10])
	form := url.Values{"source_id": {src.ID}, "scope": {"organization"}, "type": {"bearer"}, "bearer_header": {"Bad Header"}, "bearer_token": {console}}
	if r := keep(f.owner.post("/o/acme/credentials", form, false)); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("console form with a bad header: %d", r.status)
	}
	form = url.Values{"source_id": {src.ID}, "scope": {"organization"}, "type": {"headers"}, "header_name": {"X-Console"}, "header_value": {console}}
	if r := keep(f.owner.post("/o/acme/credentials", form, false)); r.status != http.StatusSeeOther {
		t.Fatalf("console form: %d %s", r.status, excerpt(r.body))
	}

	// Everything a person or a machine reads.
	for _, p := range []string{"/o/acme/w/default/sources/" + src.ID, "/o/acme/w/default/sources", "/o/acme/w/default/credentials",
		"/o/acme/credentials", "/settings/credentials", "/o/acme/w/default/tools?q=secrets", "/o/acme/w/default/tools/vault.listSecrets",
		"/o/acme/w/default"} {
		for _, c := range []*client{f.owner, f.member, f.viewer} {
			if r := keep(c.get(p)); r.status != http.StatusOK {
				t.Errorf("GET %s: %d", p, r.status)
			}
		}
	}
	for _, p := range []string{credPath, credPath + "/" + cred.ID, "/api/v1/orgs/acme/credentials", "/api/v1/me/credentials",
		wsSources + "/" + src.ID, wsSources + "/" + src.ID + "/tools", "/api/v1/orgs/acme/workspaces/default/tools?q=secrets",
		"/api/v1/orgs/acme/workspaces/default/tools/vault.listSecrets", "/api/v1/orgs/acme/workspaces/default/registry"} {
		if r := keep(owner.api("GET", p, nil)); r.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, r.status, excerpt(r.body))
		}
		keep(member.api("GET", p, nil))
	}
	seen = append(seen, logsOf(t), meiliDocuments(t, f.env), tablesInClear(t, f.env))

	for i, body := range seen {
		for _, secret := range []string{canary, mine, console, url.QueryEscape(canary)} {
			if strings.Contains(body, secret) {
				t.Errorf("reading %d shows a secret: %s", i, excerptAround(body, secret))
			}
		}
	}
	// The searchable text kept the rest of the description.
	if docs := meiliDocuments(t, f.env); !strings.Contains(docs, "Lists secrets visible to") {
		t.Errorf("the tool's description did not reach the index: %s", excerpt(docs))
	}
}

// waitFor polls cond for up to 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\nlog: %s", what, lastLines(logsOf(t), 5))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// meiliDocuments is every document of the env's index, as JSON text.
func meiliDocuments(t *testing.T, e *env) string {
	t.Helper()
	meiliURL, key := testenv.Meili(t)
	req, _ := http.NewRequest("GET", meiliURL+"/indexes/"+e.index.IndexName()+"/documents?limit=10000", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("meilisearch documents: %d %s", res.StatusCode, b)
	}
	return string(b)
}

// tablesInClear is every row of every table of toolgate's schema as text:
// sealed values show as hex, so a secret can appear only if stored in clear.
func tablesInClear(t *testing.T, e *env) string {
	t.Helper()
	ctx := context.Background()
	rows, err := e.store.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	var b strings.Builder
	for _, table := range tables {
		var text *string
		q := fmt.Sprintf(`SELECT string_agg(t::text, E'\n') FROM %q t`, table)
		if err := e.store.Pool().QueryRow(ctx, q).Scan(&text); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if text != nil {
			b.WriteString(table + ": " + *text + "\n")
		}
	}
	if !strings.Contains(b.String(), "audit_events") {
		t.Fatal("no audit rows were written")
	}
	return b.String()
}

func excerptAround(s, needle string) string {
	i := strings.Index(s, needle)
	if i < 0 {
		return ""
	}
	from, to := max(0, i-120), min(len(s), i+len(needle)+40)
	return s[from:to]
}
