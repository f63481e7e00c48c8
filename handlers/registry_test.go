package handlers_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestRegistryAndSearchThroughTheAPI registers sources in two workspaces and
// the organization, then searches as each workspace and as another tenant.
func TestRegistryAndSearchThroughTheAPI(t *testing.T) {
	f := newFixture(t, peerVars)
	owner := tokenClient(t, f.env, "owner@acme.test")
	orgSDL := `type Query { "Find a book in the catalogue by its title." searchBooks(title: String!): [String] }
type Mutation { "Lend a book to a reader." lendBook(bookId: ID!, reader: String!): Boolean }`
	wsSDL := `type Query { "Current weather for a city." weather(city: String!): String }`
	otherSDL := `type Query { "Stock level of a warehouse item." stockLevel(sku: String!): Int }`
	createSource(t, owner, "/api/v1/orgs/acme/sources", map[string]any{"name": "Library", "type": "graphql", "config": map[string]any{"schema": orgSDL}}, 201)
	createSource(t, owner, wsSources, map[string]any{"name": "Weather", "type": "graphql", "config": map[string]any{"schema": wsSDL}}, 201)
	owner.api("POST", "/api/v1/orgs/acme/workspaces", map[string]any{"name": "Ops"})
	createSource(t, owner, "/api/v1/orgs/acme/workspaces/ops/sources", map[string]any{"name": "Warehouse", "type": "graphql", "config": map[string]any{"schema": otherSDL}}, 201)

	var reg struct {
		Signature  string
		TotalTools int `json:"total_tools"`
		Degraded   bool
		Sources    []struct {
			Name, State string
			Indexed     bool
			ToolCount   int `json:"tool_count"`
		}
	}
	owner.api("GET", "/api/v1/orgs/acme/workspaces/default/registry", nil).json(t, &reg)
	if reg.TotalTools != 5 || len(reg.Sources) != 2 || reg.Degraded || reg.Signature == "" {
		t.Fatalf("registry of default: %+v", reg)
	}
	for _, s := range reg.Sources {
		if s.State != "ready" || !s.Indexed {
			t.Fatalf("source not ready and indexed: %+v", s)
		}
	}

	type hits struct {
		Data []struct {
			Path       string
			SourceName string `json:"source_name"`
		}
		Total    int
		Degraded bool
	}
	find := func(c *client, ws, q string) hits {
		t.Helper()
		var h hits
		res := c.api("GET", "/api/v1/orgs/acme/workspaces/"+ws+"/tools?q="+url.QueryEscape(q), nil)
		if res.status != 200 {
			t.Fatalf("search %q in %s: %d %s", q, ws, res.status, res.body)
		}
		res.json(t, &h)
		return h
	}
	paths := func(h hits) string {
		var out []string
		for _, d := range h.Data {
			out = append(out, d.Path)
		}
		return strings.Join(out, " ")
	}
	if h := find(owner, "default", "lend a book"); len(h.Data) == 0 || h.Data[0].Path != "library.mutation.lendBook" {
		t.Fatalf("lend a book: %s", paths(h))
	}
	if h := find(owner, "default", "wether"); !strings.Contains(paths(h), "weather.query.weather") {
		t.Fatalf("typo not tolerated: %s", paths(h))
	}
	// The organization's tools reach every workspace; a workspace's never leave it.
	if h := find(owner, "ops", "book"); !strings.Contains(paths(h), "library.") || strings.Contains(paths(h), "weather.") {
		t.Fatalf("ops sees: %s", paths(h))
	}
	if h := find(owner, "default", "stock level warehouse"); strings.Contains(paths(h), "warehouse.") {
		t.Fatalf("default sees ops' tools: %s", paths(h))
	}
	// Filters.
	var filtered hits
	owner.api("GET", "/api/v1/orgs/acme/workspaces/default/tools?approval=required&limit=50", nil).json(t, &filtered)
	for _, d := range filtered.Data {
		if !strings.Contains(d.Path, ".mutation.") && !strings.HasSuffix(d.Path, ".graphql") {
			t.Fatalf("approval filter let %s through", d.Path)
		}
	}
	// One tool by path and by alias.
	var tool struct {
		Path            string
		DefaultApproval string                      `json:"default_approval"`
		InputSchema     struct{ Required []string } `json:"input_schema"`
	}
	owner.api("GET", "/api/v1/orgs/acme/workspaces/default/tools/library.mutation.lend_book", nil).json(t, &tool)
	if tool.Path != "library.mutation.lendBook" || tool.DefaultApproval != "required" || len(tool.InputSchema.Required) != 2 {
		t.Fatalf("tool by alias: %+v", tool)
	}
	if res := owner.api("GET", "/api/v1/orgs/acme/workspaces/default/tools/warehouse.query.stockLevel", nil); res.status != 404 {
		t.Fatalf("another workspace's tool: %d", res.status)
	}
	// Another organization finds nothing of Acme's.
	outsider := tokenClient(t, f.env, "outsider@globex.test")
	var none hits
	outsider.api("GET", "/api/v1/orgs/globex/workspaces/default/tools?q=book", nil).json(t, &none)
	if none.Total != 0 {
		t.Fatalf("Globex finds Acme's tools: %+v", none)
	}
	if res := outsider.api("GET", "/api/v1/orgs/acme/workspaces/default/tools?q=book", nil); res.status != 404 {
		t.Fatalf("outsider searches Acme: %d", res.status)
	}

	// The console: catalog with an htmx fragment, a tool's page, the dashboard.
	frag := f.member.do("GET", "/o/acme/w/default/tools?q=weather", nil, "", true)
	if frag.status != 200 || strings.Contains(frag.body, "<html") {
		t.Fatalf("catalog fragment: %d", frag.status)
	}
	page := f.member.get("/o/acme/w/default/tools?q=weather")
	if !strings.Contains(page.body, "weather.query.weather") || !strings.Contains(page.body, `data-testid="catalog-form"`) {
		t.Fatal("catalog page lacks the hit")
	}
	tp := f.member.get("/o/acme/w/default/tools/library.mutation.lendBook")
	for _, want := range []string{`data-testid="schema-inputs"`, "bookId", "reader", "Raw JSON Schema", `&#34;path&#34;: &#34;library.mutation.lendBook&#34;`} {
		if !strings.Contains(tp.body, want) {
			t.Errorf("tool page lacks %q", want)
		}
	}
	dash := f.member.get("/o/acme/w/default")
	if !strings.Contains(dash.body, `data-testid="total-tools">5<`) || strings.Contains(dash.body, `hx-trigger="every 2s"`) {
		t.Fatalf("dashboard: total or polling wrong")
	}
	if res := f.member.post("/o/acme/w/default/sources/refresh-all", nil, false); res.status != 403 {
		t.Fatalf("member refresh-all: %d", res.status)
	}
	if res := f.owner.post("/o/acme/w/default/sources/refresh-all", nil, false); res.status != 303 {
		t.Fatalf("refresh-all: %d", res.status)
	}
	if poll := f.owner.do("GET", "/o/acme/w/default/registry", nil, "", true); poll.status != 200 || !strings.Contains(poll.body, `id="registry"`) {
		t.Fatalf("registry fragment: %d", poll.status)
	}
}
