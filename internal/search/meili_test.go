package search_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/testenv"
)

// isolationFixture: organization acme with workspaces red and blue, and
// organization globex with workspace green. Every tool mentions "widget".
type isolationFixture struct {
	store      *db.Store
	meili      *search.Meili
	acme, glob tenant
	// Sources by name: acme-org (organization scope), acme-red, acme-blue,
	// acme-red-off (disabled, red), globex-org, globex-green.
	src map[string]db.Source
}

func newIsolationFixture(t *testing.T) isolationFixture {
	t.Helper()
	f := isolationFixture{store: openStore(t), meili: newMeili(t), src: map[string]db.Source{}}
	f.acme = newTenant(t, f.store, "acme", "red", "blue")
	f.glob = newTenant(t, f.store, "globex", "green")
	var docs []search.Doc
	add := func(name string, orgID int64, ws *db.Workspace, enabled bool, typ string, toolNames ...string) {
		var nd []string
		for _, n := range toolNames {
			nd = append(nd, n, "Manage a widget: "+strings.ReplaceAll(n, "_", " "))
		}
		src, d := addSource(t, f.store, orgID, ws, typ, name, name, tools(nd...), enabled)
		f.src[name] = src
		docs = append(docs, d...)
	}
	add("acme-org", f.acme.org.ID, nil, true, "openapi", "list_widgets", "get_widget")
	add("acme-red", f.acme.org.ID, &f.acme.ws[0], true, "mcp", "paint_widget")
	add("acme-blue", f.acme.org.ID, &f.acme.ws[1], true, "graphql", "polish_widget")
	add("acme-red-off", f.acme.org.ID, &f.acme.ws[0], false, "openapi", "burn_widget")
	add("globex-org", f.glob.org.ID, nil, true, "openapi", "steal_widget")
	add("globex-green", f.glob.org.ID, &f.glob.ws[0], true, "mcp", "hide_widget")
	if err := f.meili.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	return f
}

func sortedPaths(res search.Results) []string {
	p := paths(res)
	sort.Strings(p)
	return p
}

func TestIsolation(t *testing.T) {
	f := newIsolationFixture(t)
	acme, globex := f.acme.org.ID, f.glob.org.ID
	red, blue, green := f.acme.ws[0].ID, f.acme.ws[1].ID, f.glob.ws[0].ID
	cases := []struct {
		name string
		q    search.Query
		want []string
	}{
		{"red sees its own and the organization's", search.Query{OrgID: acme, WorkspaceID: red},
			[]string{"acme-org.get_widget", "acme-org.list_widgets", "acme-red.paint_widget"}},
		{"blue sees its own and the organization's", search.Query{OrgID: acme, WorkspaceID: blue},
			[]string{"acme-blue.polish_widget", "acme-org.get_widget", "acme-org.list_widgets"}},
		{"green sees only globex", search.Query{OrgID: globex, WorkspaceID: green},
			[]string{"globex-green.hide_widget", "globex-org.steal_widget"}},
		{"disabled tools on request", search.Query{OrgID: acme, WorkspaceID: red, IncludeDisabled: true},
			[]string{"acme-org.get_widget", "acme-org.list_widgets", "acme-red-off.burn_widget", "acme-red.paint_widget"}},
		{"another organization's workspace id finds nothing of it", search.Query{OrgID: acme, WorkspaceID: green},
			[]string{"acme-org.get_widget", "acme-org.list_widgets"}},
		{"another organization's id finds nothing of the workspace", search.Query{OrgID: globex, WorkspaceID: red},
			[]string{"globex-org.steal_widget"}},
		{"source filter", search.Query{OrgID: acme, WorkspaceID: red, SourceID: f.src["acme-red"].ID},
			[]string{"acme-red.paint_widget"}},
		{"source filter cannot reach another workspace", search.Query{OrgID: acme, WorkspaceID: red, SourceID: f.src["acme-blue"].ID},
			[]string{}},
		{"type filter", search.Query{OrgID: acme, WorkspaceID: blue, Type: "graphql"},
			[]string{"acme-blue.polish_widget"}},
		{"approval filter", search.Query{OrgID: acme, WorkspaceID: red, Approval: "required"},
			[]string{}},
	}
	impls := []struct {
		name string
		idx  search.Index
	}{
		{"meilisearch", f.meili},
		{"postgresql", search.Postgres{Store: f.store}},
	}
	for _, impl := range impls {
		for _, text := range []string{"widget", ""} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/%q/%s", impl.name, text, c.name), func(t *testing.T) {
					q := c.q
					q.Text = text
					res, err := impl.idx.Search(context.Background(), q)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(c.want, sortedPaths(res)); diff != "" {
						t.Errorf("paths (-want +got):\n%s", diff)
					}
					if res.Total != len(c.want) {
						t.Errorf("Total = %d, want %d", res.Total, len(c.want))
					}
					if res.Degraded {
						t.Errorf("Degraded set by %s itself", impl.name)
					}
				})
			}
		}
	}
}

func TestHitFields(t *testing.T) {
	f := newIsolationFixture(t)
	src := f.src["acme-red"]
	for _, idx := range []search.Index{f.meili, search.Postgres{Store: f.store}} {
		res, err := idx.Search(context.Background(), search.Query{OrgID: f.acme.org.ID, WorkspaceID: f.acme.ws[0].ID, Text: "paint widget", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 {
			t.Fatalf("%T: hits %v", idx, paths(res))
		}
		h := res.Hits[0]
		want := search.Hit{Path: "acme-red.paint_widget", Description: "Manage a widget: paint widget", SourceID: src.ID,
			SourceName: "acme-red", Type: "mcp", DefaultApproval: "auto", Enabled: true, Score: h.Score}
		if diff := cmp.Diff(want, h); diff != "" {
			t.Errorf("%T: hit (-want +got):\n%s", idx, diff)
		}
		if h.Score <= 0 {
			t.Errorf("%T: score %v", idx, h.Score)
		}
	}
}

func TestListingAndPaging(t *testing.T) {
	f := newIsolationFixture(t)
	for _, idx := range []search.Index{f.meili, search.Postgres{Store: f.store}} {
		q := search.Query{OrgID: f.acme.org.ID, WorkspaceID: f.acme.ws[0].ID, Limit: 2}
		first, err := idx.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		q.Offset = 2
		second, err := idx.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		// Empty text lists by path.
		got := append(paths(first), paths(second)...)
		want := []string{"acme-org.get_widget", "acme-org.list_widgets", "acme-red.paint_widget"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T: listing (-want +got):\n%s", idx, diff)
		}
		if first.Total != 3 || second.Total != 3 {
			t.Errorf("%T: totals %d, %d, want 3", idx, first.Total, second.Total)
		}
	}
}

func TestTypos(t *testing.T) {
	f := newIsolationFixture(t)
	cases := []struct {
		idx  search.Index
		text string
	}{
		// Meilisearch: one typo per word from five letters, transpositions
		// included.
		{f.meili, "piant widgte"},
		{f.meili, "paintt wigdet"},
		// PostgreSQL: trigram word similarity, which doubled or missing
		// letters keep high.
		{search.Postgres{Store: f.store}, "paintt widgett"},
		{search.Postgres{Store: f.store}, "pait widget"},
	}
	for _, c := range cases {
		res, err := c.idx.Search(context.Background(), search.Query{OrgID: f.acme.org.ID, WorkspaceID: f.acme.ws[0].ID, Text: c.text, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || res.Hits[0].Path != "acme-red.paint_widget" {
			t.Errorf("%T: %q found %v, want acme-red.paint_widget first", c.idx, c.text, paths(res))
		}
	}
}

func TestWrites(t *testing.T) {
	ctx := context.Background()
	m := newMeili(t)
	// Idempotent.
	if err := m.EnsureSettings(ctx); err != nil {
		t.Fatal(err)
	}
	doc := func(org int64, source, path, desc string) search.Doc {
		return search.Doc{ID: search.DocID(source, path), OrgID: org, Scope: "organization", SourceID: source, SourceName: source,
			Type: "openapi", Path: path, Name: path, Aliases: []string{}, Description: desc, Params: []string{},
			DefaultApproval: "auto", Enabled: true}
	}
	// Past one batch of 10,000.
	var docs []search.Doc
	for i := range 10_050 {
		docs = append(docs, doc(1, "src_a", fmt.Sprintf("a.tool_%05d", i), "bulk tool"))
	}
	docs = append(docs, doc(1, "src_b", "b.one", "first"), doc(1, "src_b", "b.two", "second"), doc(2, "src_c", "c.one", "other org"))
	if err := m.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	count := func(org int64, source string, want int) {
		t.Helper()
		n, err := m.Count(ctx, org, source)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("Count(%d, %q) = %d, want %d", org, source, n, want)
		}
	}
	count(1, "src_a", 10_050)
	count(1, "src_b", 2)
	count(1, "", 10_052)
	count(2, "", 1)

	// Upsert replaces a document.
	if err := m.Upsert(ctx, []search.Doc{doc(1, "src_b", "b.one", "renamed zeppelin")}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Search(ctx, search.Query{OrgID: 1, WorkspaceID: 9, Text: "zeppelin"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b.one"}, paths(res)); diff != "" {
		t.Errorf("after replace (-want +got):\n%s", diff)
	}
	count(1, "src_b", 2)

	if err := m.Delete(ctx, []string{search.DocID("src_b", "b.two")}); err != nil {
		t.Fatal(err)
	}
	count(1, "src_b", 1)
	if err := m.DeleteWhere(ctx, 1, "src_a"); err != nil {
		t.Fatal(err)
	}
	count(1, "src_a", 0)
	count(1, "", 1)
	count(2, "", 1)
	if err := m.DeleteWhere(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	count(1, "", 0)
	count(2, "", 1)

	// A failed task fails the write with Meilisearch's message.
	bad := doc(1, "src_b", "b.bad", "x")
	bad.ID = "not a valid id!"
	err = m.Upsert(ctx, []search.Doc{bad})
	var te *search.TaskError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "invalid_document_id") {
		t.Errorf("Upsert of an invalid id: %v, want a TaskError with invalid_document_id", err)
	}
}

func TestHealthAndErrors(t *testing.T) {
	ctx := context.Background()
	url, key := testenv.Meili(t)
	m := newMeiliAt(t, url, key)
	if err := m.Health(ctx); err != nil {
		t.Errorf("Health: %v", err)
	}

	wrongKey := search.NewMeili(url, "not-the-key", m.IndexName())
	defer wrongKey.Close()
	err := wrongKey.Health(ctx)
	if !errors.Is(err, search.ErrUnavailable) {
		t.Errorf("Health with a wrong key: %v, want ErrUnavailable", err)
	}

	// A closed port: nothing listens on port 1 of loopback.
	down := search.NewMeili("http://127.0.0.1:1", key, m.IndexName())
	defer down.Close()
	start := time.Now()
	_, err = down.Search(ctx, search.Query{OrgID: 1, WorkspaceID: 1, Text: "x"})
	if !errors.Is(err, search.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Errorf("Search on a closed port: %v after %v, want ErrUnavailable at once", err, time.Since(start))
	}
	if err != nil && strings.Contains(err.Error(), key) {
		t.Errorf("the error reveals the master key: %v", err)
	}

	missing := search.NewMeili(url, key, "tools_missing_"+randomHex(4))
	defer missing.Close()
	if err := missing.Health(ctx); !errors.Is(err, search.ErrUnavailable) {
		t.Errorf("Health of a missing index: %v, want ErrUnavailable", err)
	}

	// A quote in a filter value stays inside the string.
	if err := m.Upsert(ctx, []search.Doc{{ID: "d1", OrgID: 7, Scope: "organization", SourceID: "s", Path: "s.t", Type: "mcp", Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Search(ctx, search.Query{OrgID: 1, WorkspaceID: 1, Type: `x" OR org_id > 0 OR type = "`})
	if err != nil || len(res.Hits) != 0 {
		t.Errorf("filter injection: %v, %v", paths(res), err)
	}
}
