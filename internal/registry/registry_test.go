package registry_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/worker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestDeleteLeavesSearch deletes a source through sources.Service, whose
// refresher is a running worker: the unindex job removes its documents
// from Meilisearch, and its rows leave PostgreSQL at once.
func TestDeleteLeavesSearch(t *testing.T) {
	e := newEnv(t)
	q := e.startWorker()
	svc := &sources.Service{Store: e.store, Refresher: q}
	spec := newSpecServer(t, openAPI(widgetOps...))
	src, err := svc.Create(t.Context(), e.org.ID, nil, sources.Input{Name: "Widgets", Type: sources.TypeOpenAPI,
		Scope: sources.ScopeOrganization, Config: specConfig(spec.URL)})
	if err != nil {
		t.Fatal(err)
	}
	e.waitIndexed(src.ID, len(widgetOps))
	if hits := e.searchPaths("list widgets", false); !slices.Contains(hits, "widgets.list_widgets") {
		t.Fatalf("before delete: search found %v", hits)
	}

	if err := svc.Delete(t.Context(), src, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		n, err := e.index.Count(t.Context(), e.org.ID, src.ID)
		return err == nil && n == 0, fmt.Sprintf("meilisearch holds %d documents of the deleted source (%v)", n, err)
	})
	if hits := e.searchPaths("list widgets", true); len(hits) != 0 {
		t.Fatalf("after delete: search found %v", hits)
	}
	if n := e.toolRows(src.ID); n != 0 {
		t.Fatalf("after delete: %d tool rows", n)
	}
}

// TestDeleteDuringIndexingLeavesSearch deletes a source (and removes its
// documents) while a refresh of it is sending its documents to
// Meilisearch: once that refresh ends, none of them may be left behind.
func TestDeleteDuringIndexingLeavesSearch(t *testing.T) {
	e := newEnv(t)
	spec := newSpecServer(t, openAPI(widgetOps...))
	src := e.insertSource("Widgets", spec.URL)
	held, release := e.proxy.holdUpserts(t)
	done := make(chan error, 1)
	go func() { done <- e.r.Refresh(context.Background(), e.org.ID, src.ID) }()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the refresh ended before sending documents: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the refresh never sent its documents")
	}
	// The source is deleted the way the console does it; the unindex runs
	// at once (the refresher itself, not a queue).
	direct := &registry.Refresher{Store: e.store, Log: e.r.Log, Index: e.index}
	if err := (&sources.Service{Store: e.store, Refresher: direct}).Delete(t.Context(), src, 0); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Logf("refresh of the deleted source: %v", err)
	}
	if n, err := e.index.Count(t.Context(), e.org.ID, src.ID); err != nil || n != 0 {
		t.Fatalf("meilisearch holds %d documents of a source deleted during its refresh (%v)", n, err)
	}
}

// TestRacingRefreshesWriteOneGeneration runs two refreshes of one source
// at once, several times: the spec server answers only when both are
// fetching, so both discover before either writes. An unchanged spec
// writes one generation in all; a changed one exactly one more.
func TestRacingRefreshesWriteOneGeneration(t *testing.T) {
	e := newEnv(t)
	spec := newSpecServer(t, openAPI(widgetOps...))
	var missed sync.Map
	b := &barrier{}
	spec.before = func(r *http.Request) {
		if !b.wait(2, 20*time.Second) {
			missed.Store(r.URL.String(), true)
		}
	}
	src := e.insertSource("Widgets", spec.URL)
	race := func(round int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { errs[i] = e.r.Refresh(context.Background(), e.org.ID, src.ID) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	check := func(round int, wantGeneration int64, wantTools int) {
		t.Helper()
		s := e.source(src.ID)
		if s.Generation != wantGeneration || s.IndexedGeneration != s.Generation || s.State != "ready" || s.ToolCount != wantTools {
			t.Fatalf("round %d: generation %d (want %d), indexed %d, state %s, %d tools", round, s.Generation, wantGeneration,
				s.IndexedGeneration, s.State, s.ToolCount)
		}
		if rows, distinct := e.toolRows(src.ID), e.distinctPaths(src.ID); rows != wantTools || distinct != wantTools {
			t.Fatalf("round %d: %d tool rows, %d distinct paths; want %d", round, rows, distinct, wantTools)
		}
		if n, err := e.index.Count(t.Context(), e.org.ID, src.ID); err != nil || n != wantTools {
			t.Fatalf("round %d: meilisearch holds %d documents (%v), want %d", round, n, err, wantTools)
		}
	}
	for round := 1; round <= 4; round++ {
		race(round)
		check(round, 1, len(widgetOps))
	}
	spec.set(openAPI(append(slices.Clone(widgetOps), op{"archive_widget", "Archive a widget"})...))
	race(5)
	check(5, 2, len(widgetOps)+1)
	missed.Range(func(k, _ any) bool {
		t.Errorf("a fetch of %s ran alone: the refreshes did not race", k)
		return true
	})
}

// TestIndexByDifference changes one tool, removes one and adds one:
// Meilisearch receives exactly the changed and added documents and a
// deletion of the removed one, and an unchanged refresh sends nothing.
func TestIndexByDifference(t *testing.T) {
	e := newEnv(t)
	spec := newSpecServer(t, openAPI(widgetOps...))
	src := e.createSource("Widgets", spec.URL)
	e.waitIndexed(src.ID, len(widgetOps))
	if up := e.proxy.take(); len(up.upserted) != len(widgetOps) {
		t.Fatalf("first refresh sent %d documents, want %d", len(up.upserted), len(widgetOps))
	}

	if err := e.r.Refresh(t.Context(), e.org.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	if w := e.proxy.take(); len(w.upserted)+len(w.deleted)+len(w.filters) != 0 {
		t.Fatalf("an unchanged refresh wrote to meilisearch: %+v", w)
	}

	// get_widget changes, delete_widget goes, archive_widget arrives.
	changed := []op{{"list_widgets", "List widgets"}, {"get_widget", "Fetch a widget with its gizmo count"},
		{"create_widget", "Create a widget"}, {"update_widget", "Update a widget"}, {"archive_widget", "Archive a widget"}}
	spec.set(openAPI(changed...))
	if err := e.r.Refresh(t.Context(), e.org.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	w := e.proxy.take()
	wantUp := []string{search.DocID(src.ID, "widgets.archive_widget"), search.DocID(src.ID, "widgets.get_widget")}
	slices.Sort(wantUp)
	slices.Sort(w.upserted)
	if !slices.Equal(w.upserted, wantUp) || !slices.Equal(w.deleted, []string{search.DocID(src.ID, "widgets.delete_widget")}) || len(w.filters) != 0 {
		t.Fatalf("second refresh: upserted %v, deleted %v, filters %v; want upserted %v (get, archive) and deleted delete_widget",
			w.upserted, w.deleted, w.filters, wantUp)
	}
	e.waitIndexed(src.ID, len(changed))
	if hits := e.searchPaths("gizmo", false); !slices.Equal(hits, []string{"widgets.get_widget"}) {
		t.Fatalf("search for the changed description: %v", hits)
	}
	if hits := e.searchPaths("archive widget", false); !slices.Contains(hits, "widgets.archive_widget") {
		t.Fatalf("search for the added tool: %v", hits)
	}
	if hits := e.searchPaths("delete widget", false); slices.Contains(hits, "widgets.delete_widget") {
		t.Fatalf("the removed tool is still found: %v", hits)
	}
}

// TestIndexAfterFailedIndexIsComplete: a generation whose indexing failed
// (Meilisearch down) is not in the index, so the next generation cannot be
// indexed by difference against it. Marked indexed, the index must hold
// every tool of the source.
func TestIndexAfterFailedIndexIsComplete(t *testing.T) {
	e := newEnv(t)
	spec := newSpecServer(t, openAPI(widgetOps...))
	up := e.r.Index
	e.r.Index = search.NewMeili(deadURL(t), "key", e.index.IndexName())
	src := e.createSource("Widgets", spec.URL)
	if s := e.source(src.ID); s.Generation != 1 || s.IndexedGeneration != 0 || s.IndexError == "" || s.State != "ready" {
		t.Fatalf("with meilisearch down: generation %d, indexed %d, index error %q, state %s", s.Generation, s.IndexedGeneration, s.IndexError, s.State)
	}
	// Meilisearch is back; an edit lands before any reconcile.
	e.r.Index = up
	spec.set(openAPI(append(slices.Clone(widgetOps[:4]), op{"delete_widget", "Destroy a widget for good"})...))
	if err := e.r.Refresh(t.Context(), e.org.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	s := e.source(src.ID)
	n, err := e.index.Count(t.Context(), e.org.ID, src.ID)
	if s.IndexedGeneration == s.Generation && (err != nil || n != s.ToolCount) {
		t.Fatalf("generation %d marked indexed but meilisearch holds %d of its %d tools (%v)", s.Generation, n, s.ToolCount, err)
	}
	if s.IndexedGeneration != s.Generation || s.IndexError != "" {
		t.Fatalf("generation %d, indexed %d, index error %q", s.Generation, s.IndexedGeneration, s.IndexError)
	}
}

// TestReconcileRacingRefreshKeepsNewestGeneration: a reconcile reindexes
// generation 1 of a source whose indexing had failed; while its documents
// are on the way, an edit writes and indexes generation 2. The reconcile's
// older documents land last, yet the index must end holding generation 2.
func TestReconcileRacingRefreshKeepsNewestGeneration(t *testing.T) {
	e := newEnv(t)
	spec := newSpecServer(t, openAPI(widgetOps...))
	viaProxy := e.r.Index
	e.r.Index = search.NewMeili(deadURL(t), "key", e.index.IndexName())
	src := e.createSource("Widgets", spec.URL)
	e.r.Index = viaProxy
	if s := e.source(src.ID); s.Generation != 1 || s.IndexedGeneration != 0 {
		t.Fatalf("with meilisearch down: generation %d, indexed %d", s.Generation, s.IndexedGeneration)
	}

	// The reconcile (through the proxy, which holds its upsert) ...
	held, release := e.proxy.holdUpserts(t)
	done := make(chan error, 1)
	go func() { done <- e.r.Reindex(context.Background(), e.source(src.ID)) }()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the reindex ended before sending documents: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the reindex never sent its documents")
	}
	// ... while an edit is refreshed and indexed directly.
	gen2 := []op{{"list_widgets", "List widgets"}, {"get_widget", "Fetch a widget with its gizmo count"},
		{"create_widget", "Create a widget"}, {"update_widget", "Update a widget"}}
	spec.set(openAPI(gen2...))
	direct := &registry.Refresher{Store: e.store, Discoverer: e.r.Discoverer, Log: e.r.Log, Index: e.index}
	if err := direct.Refresh(t.Context(), e.org.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := e.source(src.ID)
	if s.Generation != 2 || s.IndexedGeneration != 2 {
		t.Fatalf("generation %d, indexed %d; want 2 and 2", s.Generation, s.IndexedGeneration)
	}
	if n, err := e.index.Count(t.Context(), e.org.ID, src.ID); err != nil || n != len(gen2) {
		t.Errorf("meilisearch holds %d documents (%v), want generation 2's %d", n, err, len(gen2))
	}
	if hits := e.searchPaths("gizmo", false); !slices.Equal(hits, []string{"widgets.get_widget"}) {
		t.Errorf("search for generation 2's description: %v", hits)
	}
	if hits := e.searchPaths("delete widget", false); slices.Contains(hits, "widgets.delete_widget") {
		t.Errorf("generation 1's removed tool is still found: %v", hits)
	}
}

// TestDisabledSourceIsHidden disables a source: its tools stay stored but
// neither Meilisearch nor the PostgreSQL fallback finds them by default;
// both do with IncludeDisabled, and enabling brings them back.
func TestDisabledSourceIsHidden(t *testing.T) {
	e := newEnv(t)
	spec := newSpecServer(t, openAPI(widgetOps...))
	src := e.createSource("Widgets", spec.URL)
	pg := search.Postgres{Store: e.store}
	find := func(idx search.Index, includeDisabled bool) []search.Hit {
		t.Helper()
		res, err := idx.Search(t.Context(), search.Query{OrgID: e.org.ID, WorkspaceID: e.ws.ID, Text: "create widget",
			IncludeDisabled: includeDisabled, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []search.Hit
		for _, h := range res.Hits {
			if h.Path == "widgets.create_widget" {
				out = append(out, h)
			}
		}
		return out
	}
	for name, idx := range map[string]search.Index{"meilisearch": e.index, "postgresql": pg} {
		if hits := find(idx, false); len(hits) != 1 || !hits[0].Enabled {
			t.Fatalf("%s, enabled source: %+v", name, hits)
		}
	}

	src, err := e.svc.SetEnabled(t.Context(), src, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if s := e.source(src.ID); s.Enabled || s.State != "ready" || s.IndexedGeneration != s.Generation || e.toolRows(src.ID) != len(widgetOps) {
		t.Fatalf("disabled source: enabled %v, state %s, generation %d, indexed %d", s.Enabled, s.State, s.Generation, s.IndexedGeneration)
	}
	for name, idx := range map[string]search.Index{"meilisearch": e.index, "postgresql": pg} {
		if hits := find(idx, false); len(hits) != 0 {
			t.Errorf("%s finds a disabled source's tool by default: %+v", name, hits)
		}
		if hits := find(idx, true); len(hits) != 1 || hits[0].Enabled {
			t.Errorf("%s with IncludeDisabled: %+v, want the tool marked disabled", name, hits)
		}
	}

	if _, err := e.svc.SetEnabled(t.Context(), src, 0, true); err != nil {
		t.Fatal(err)
	}
	for name, idx := range map[string]search.Index{"meilisearch": e.index, "postgresql": pg} {
		if hits := find(idx, false); len(hits) != 1 || !hits[0].Enabled {
			t.Errorf("%s after enabling again: %+v", name, hits)
		}
	}
}

// TestOneHundredWorkspacesShareOrgTools stores GitHub's REST description
// as one organization source in an organization of 100 workspaces: its
// 1,223 tools are stored once, and the first and the last workspace both
// find github.pulls.create, through Meilisearch and through PostgreSQL.
func TestOneHundredWorkspacesShareOrgTools(t *testing.T) {
	e := newEnv(t)
	workspaces := []db.Workspace{e.ws}
	err := e.store.InTx(t.Context(), func(tx *sqlx.Tx) error {
		for i := 2; i <= 100; i++ {
			ws, err := db.CreateWorkspace(t.Context(), tx, e.org.ID, fmt.Sprintf("ws-%03d", i), fmt.Sprintf("Workspace %03d", i))
			if err != nil {
				return err
			}
			workspaces = append(workspaces, ws)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(testenv.GitHubSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	spec := newSpecServer(t, doc)
	src := e.createSource("GitHub", spec.URL)
	e.waitIndexed(src.ID, 1223)

	var rows, all int
	if err := e.store.DB().QueryRowContext(t.Context(), `SELECT
		(SELECT count(*) FROM source_tools WHERE source_id = $1), (SELECT count(*) FROM source_tools)`, src.ID).Scan(&rows, &all); err != nil {
		t.Fatal(err)
	}
	if rows != 1223 || all != 1223 || e.distinctPaths(src.ID) != 1223 {
		t.Fatalf("%d tool rows for the source, %d in all; want 1,223 and 1,223", rows, all)
	}
	for _, ws := range []db.Workspace{workspaces[0], workspaces[99]} {
		for name, idx := range map[string]search.Index{"meilisearch": e.index, "postgresql": search.Postgres{Store: e.store}} {
			res, err := idx.Search(t.Context(), search.Query{OrgID: e.org.ID, WorkspaceID: ws.ID, Text: "create a pull request", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, h := range res.Hits {
				paths = append(paths, h.Path)
			}
			if !slices.Contains(paths, "github.pulls.create") {
				t.Errorf("%s from workspace %s: %v", name, ws.Slug, paths)
			}
		}
		if tool, err := e.store.ToolByPath(t.Context(), e.org.ID, ws.ID, "github.pulls.create"); err != nil || tool.SourceID != src.ID {
			t.Errorf("workspace %s resolves github.pulls.create: %+v, %v", ws.Slug, tool.SourceID, err)
		}
	}
}

// widgetOps are the operations of a small OpenAPI description.
var widgetOps = []op{
	{"list_widgets", "List widgets"},
	{"get_widget", "Get a widget"},
	{"create_widget", "Create a widget"},
	{"update_widget", "Update a widget"},
	{"delete_widget", "Delete a widget"},
}

// env is a Refresher over a fresh database and a Meilisearch index of its
// own. The refresher writes to Meilisearch through a recording proxy; the
// test reads the index directly.
type env struct {
	t     *testing.T
	store *db.Store
	index *search.Meili
	proxy *meiliProxy
	r     *registry.Refresher
	// svc refreshes synchronously: its refresher is r.
	svc *sources.Service
	org db.Organization
	ws  db.Workspace
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	meiliURL, key := testenv.Meili(t)
	name := "tools_registry_" + strings.ToLower(rand.Text()[:12])
	index := search.NewMeili(meiliURL, key, name)
	if err := index.EnsureSettings(ctx); err != nil {
		t.Fatalf("meilisearch settings: %v", err)
	}
	t.Cleanup(func() {
		_ = index.DropIndex(context.Background())
		index.Close()
	})
	proxy := newMeiliProxy(t, meiliURL)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r := &registry.Refresher{Store: store, Discoverer: registry.NewDiscoverer(true, 30*time.Second, "test"),
		Log: log, Index: search.NewMeili(proxy.URL, key, name)}
	e := &env{t: t, store: store, index: index, proxy: proxy, r: r, svc: &sources.Service{Store: store, Refresher: r}}
	err = store.InTx(ctx, func(tx *sqlx.Tx) error {
		slug := "reg-" + strings.ToLower(rand.Text()[:8])
		if e.org, err = db.CreateOrganization(ctx, tx, slug, "Registry "+slug); err != nil {
			return err
		}
		e.ws, err = db.CreateWorkspace(ctx, tx, e.org.ID, "default", "Default")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// startWorker runs an in-process worker over the env's refresher.
func (e *env) startWorker() *worker.Queue {
	e.t.Helper()
	q, err := worker.New(e.store, e.r, e.r.Log, worker.Options{Concurrency: 2, JobTimeout: time.Minute, ReconcileInterval: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = q.Stop(ctx)
	})
	return q
}

// createSource saves an organization OpenAPI source through the service,
// which refreshes it before returning.
func (e *env) createSource(name, specURL string) db.Source {
	e.t.Helper()
	src, err := e.svc.Create(e.t.Context(), e.org.ID, nil, sources.Input{Name: name, Type: sources.TypeOpenAPI,
		Scope: sources.ScopeOrganization, Config: specConfig(specURL)})
	if err != nil {
		e.t.Fatalf("create source %s: %v", name, err)
	}
	return src
}

// insertSource saves an organization OpenAPI source without refreshing it.
func (e *env) insertSource(name, specURL string) db.Source {
	e.t.Helper()
	src, err := e.store.CreateSource(e.t.Context(), db.NewSource{ID: "src_" + uuid.NewString(), OrgID: e.org.ID,
		Scope: string(sources.ScopeOrganization), Name: name, Slug: strings.ToLower(name), Type: string(sources.TypeOpenAPI),
		ConfigVersion: sources.ConfigVersion, Config: specConfig(specURL), Enabled: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return src
}

func specConfig(specURL string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"spec": specURL})
	return b
}

func (e *env) source(id string) db.Source {
	e.t.Helper()
	s, err := e.store.Source(e.t.Context(), e.org.ID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) toolRows(id string) int {
	e.t.Helper()
	var n int
	if err := e.store.DB().QueryRowContext(e.t.Context(), `SELECT count(*) FROM source_tools WHERE source_id = $1`, id).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) distinctPaths(id string) int {
	e.t.Helper()
	var n int
	if err := e.store.DB().QueryRowContext(e.t.Context(), `SELECT count(DISTINCT path) FROM source_tools WHERE source_id = $1`, id).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// waitIndexed waits until the source is ready with its generation in the
// index, holding tools documents.
func (e *env) waitIndexed(id string, tools int) {
	e.t.Helper()
	eventually(e.t, 2*time.Minute, func() (bool, string) {
		s, err := e.store.Source(e.t.Context(), e.org.ID, id)
		if err != nil {
			return false, err.Error()
		}
		n, err := e.index.Count(e.t.Context(), e.org.ID, id)
		ok := err == nil && s.State == "ready" && s.Generation > 0 && s.IndexedGeneration == s.Generation && s.ToolCount == tools && n == tools
		return ok, fmt.Sprintf("state %s (%s), generation %d, indexed %d, %d tools, %d documents (%v); want %d",
			s.State, s.Error, s.Generation, s.IndexedGeneration, s.ToolCount, n, err, tools)
	})
}

// searchPaths searches the first workspace through Meilisearch.
func (e *env) searchPaths(text string, includeDisabled bool) []string {
	e.t.Helper()
	res, err := e.index.Search(e.t.Context(), search.Query{OrgID: e.org.ID, WorkspaceID: e.ws.ID, Text: text,
		IncludeDisabled: includeDisabled, Limit: 10})
	if err != nil {
		e.t.Fatal(err)
	}
	paths := []string{}
	for _, h := range res.Hits {
		paths = append(paths, h.Path)
	}
	return paths
}

// eventually polls cond until it holds, failing with its last message
// after limit: a bound on waiting, not a measurement.
func eventually(t *testing.T, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s: %s", limit, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// op is one operation of a generated OpenAPI description.
type op struct{ id, summary string }

// openAPI generates an OpenAPI 3.0 description with one GET per operation.
func openAPI(ops ...op) []byte {
	paths := map[string]any{}
	for _, o := range ops {
		paths["/"+o.id] = map[string]any{"get": map[string]any{
			"operationId": o.id, "summary": o.summary,
			"parameters": []any{map[string]any{"name": "owner", "in": "query", "schema": map[string]any{"type": "string"}}},
			"responses":  map[string]any{"200": map[string]any{"description": "OK"}},
		}}
	}
	b, _ := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Widgets", "version": "1"},
		"servers": []any{map[string]any{"url": "https://widgets.example.test"}}, "paths": paths})
	return b
}

// specServer serves one document that the test may replace, without
// ETags, so every refresh discovers.
type specServer struct {
	URL    string
	mu     sync.Mutex
	doc    []byte
	before func(*http.Request)
}

func newSpecServer(t *testing.T, doc []byte) *specServer {
	s := &specServer{doc: doc}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.before != nil {
			s.before(r)
		}
		s.mu.Lock()
		doc := s.doc
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/openapi.json"
	return s
}

func (s *specServer) set(doc []byte) {
	s.mu.Lock()
	s.doc = doc
	s.mu.Unlock()
}

// barrier lets callers through in groups.
type barrier struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

// wait returns true once parties callers wait together, false when none
// came to join within limit.
func (b *barrier) wait(parties int, limit time.Duration) bool {
	b.mu.Lock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	ch := b.ch
	b.n++
	if b.n == parties {
		close(ch)
		b.ch, b.n = nil, 0
	}
	b.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(limit):
		return false
	}
}

// meiliProxy forwards to Meilisearch and records the document writes of
// every index: ids upserted, ids deleted, delete filters. It can hold the
// next upsert until released.
type meiliProxy struct {
	URL string
	mu  sync.Mutex
	w   writes
	// hold, when set, is closed to release a held upsert; held is closed
	// when one is held.
	hold, held chan struct{}
}

type writes struct {
	upserted, deleted, filters []string
}

func newMeiliProxy(t *testing.T, target string) *meiliProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &meiliProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/indexes/") && strings.Contains(r.URL.Path, "/documents") {
			body, _ := io.ReadAll(r.Body)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			upsert := strings.HasSuffix(r.URL.Path, "/documents")
			p.record(r.URL.Path, body)
			if upsert {
				if hold := p.holding(); hold != nil {
					select {
					case <-hold:
					case <-r.Context().Done():
						return
					}
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *meiliProxy) record(path string, body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case strings.HasSuffix(path, "/documents"):
		var docs []struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &docs)
		for _, d := range docs {
			p.w.upserted = append(p.w.upserted, d.ID)
		}
	case strings.HasSuffix(path, "/documents/delete-batch"):
		var ids []string
		_ = json.Unmarshal(body, &ids)
		p.w.deleted = append(p.w.deleted, ids...)
	case strings.HasSuffix(path, "/documents/delete"):
		p.w.filters = append(p.w.filters, string(body))
	}
}

// take returns the writes recorded since the last take.
func (p *meiliProxy) take() writes {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.w
	p.w = writes{}
	return w
}

// holding returns the channel a new upsert waits on, or nil, and reports
// the first held upsert.
func (p *meiliProxy) holding() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold == nil {
		return nil
	}
	select {
	case <-p.held:
	default:
		close(p.held)
	}
	return p.hold
}

// holdUpserts holds upserts from now on: held is closed when the first
// arrives, release lets them through (and is called at cleanup).
func (p *meiliProxy) holdUpserts(t *testing.T) (held <-chan struct{}, release func()) {
	p.mu.Lock()
	p.hold, p.held = make(chan struct{}), make(chan struct{})
	hold, h := p.hold, p.held
	p.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			p.mu.Lock()
			p.hold = nil
			p.mu.Unlock()
			close(hold)
		})
	}
	t.Cleanup(release)
	return h, release
}

// deadURL is the URL of a port nobody listens on.
func deadURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}
