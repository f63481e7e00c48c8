package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/sources/graphql"
	"github.com/toolgate/toolgate/internal/testenv"
)

// TestReindexRebuildsTheIndexFromPostgreSQL stores a source's tools in
// PostgreSQL only, then runs `toolgate reindex --org`.
func TestReindexRebuildsTheIndexFromPostgreSQL(t *testing.T) {
	ctx := context.Background()
	meiliURL, meiliKey := testenv.Meili(t)
	env := map[string]string{"DATABASE_URL": testenv.DatabaseURL(t), "MEILI_URL": meiliURL, "MEILI_MASTER_KEY": meiliKey,
		"TOOLGATE_MEILI_INDEX": "tools_reindex_" + strings.ToLower(rand.Text()[:8]), "TOOLGATE_DATA_DIR": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"users", "create", "--email", "ops@example.test", "--password-stdin", "--org", "Ops Team"},
		strings.NewReader("a long enough password\n"), &out, &errOut, getenv); code != 0 {
		t.Fatalf("users create: %s", errOut.String())
	}
	a, err := open(ctx, &errOut, getenv, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close(ctx)
	org, err := a.store.OrganizationBySlug(ctx, "ops-team")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]string{"schema": "type Query { hello: String, bye: String }"})
	src, err := a.store.CreateSource(ctx, db.NewSource{ID: "src_00000000-0000-0000-0000-000000000001", OrgID: org.ID, Scope: "organization",
		Name: "Greeter", Slug: "greeter", Type: "graphql", ConfigVersion: 1, Config: cfg, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	disc, err := graphql.FromSDL("type Query { hello: String, bye: String }")
	if err != nil {
		t.Fatal(err)
	}
	result, _, err := registry.Stored(src.Slug, disc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.SaveDiscovery(ctx, org.ID, src.ID, result); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.index.Count(ctx, org.ID, src.ID); n != 0 {
		t.Fatalf("the index already holds %d documents", n)
	}
	out.Reset()
	if code := run(ctx, []string{"reindex", "--org", "ops-team"}, nil, &out, &errOut, getenv); code != 0 {
		t.Fatalf("reindex: %s", errOut.String())
	}
	if !strings.Contains(out.String(), "reindexed 1 sources, 3 tools") {
		t.Fatalf("reindex said %q", out.String())
	}
	if n, err := a.index.Count(ctx, org.ID, src.ID); err != nil || n != 3 {
		t.Fatalf("index holds %d documents (%v), want 3", n, err)
	}
	errOut.Reset()
	if code := run(ctx, []string{"reindex", "--org", "nope"}, nil, &out, &errOut, getenv); code != 1 || !strings.Contains(errOut.String(), `organization "nope"`) {
		t.Fatalf("unknown organization: exit %d %q", code, errOut.String())
	}
}
