package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/embedded"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
	"github.com/toolgate/toolgate/internal/worker"
)

// TestWorkerKilledMidRefreshRecovers runs `toolgate worker` on a refresh of
// GitHub's REST description (1,223 operations) and SIGKILLs it while it
// indexes: the tools are written as generation 1 and the worker's upsert to
// Meilisearch is held by a proxy when the kill lands. A second worker
// rescues the job and retries it; the registry ends consistent, with every
// tool stored and indexed once.
func TestWorkerKilledMidRefreshRecovers(t *testing.T) {
	bin := buildBinary(t)
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	meiliURL, meiliKey := testenv.Meili(t)
	indexName := "tools_kill_" + strings.ToLower(rand.Text()[:12])
	index := search.NewMeili(meiliURL, meiliKey, indexName)
	t.Cleanup(func() {
		_ = index.DropIndex(context.Background())
		index.Close()
	})
	store, err := db.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	_, org, err := (&tenancy.Service{Store: store}).CreateAccount(ctx, "ops@example.test", "", "a long enough password", "Ops")
	if err != nil {
		t.Fatal(err)
	}

	spec := testenv.GitHubSpec(t)
	var served sync.Map
	specSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, spec)
		served.Store(time.Now(), true)
	}))
	t.Cleanup(specSrv.Close)
	proxy := newHoldingProxy(t, meiliURL)

	// The source is saved and its refresh enqueued, as the API does.
	q, err := worker.NewQueue(store)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]string{"spec": specSrv.URL + "/api.github.com.json"})
	src, err := (&sources.Service{Store: store, Refresher: q}).Create(ctx, org.ID, nil, sources.Input{Name: "GitHub",
		Type: sources.TypeOpenAPI, Scope: sources.ScopeOrganization, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}

	env := []string{"DATABASE_URL=" + dbURL, "MEILI_MASTER_KEY=" + meiliKey, "TOOLGATE_MEILI_INDEX=" + indexName,
		"TOOLGATE_JOB_TIMEOUT=3s", "TOOLGATE_RECONCILE_INTERVAL=2s", "TOOLGATE_ALLOW_PRIVATE_NETWORKS=true",
		"TOOLGATE_LOG_FORMAT=json", "TOOLGATE_DATA_DIR=" + t.TempDir(), "TOOLGATE_SECRET_KEYS=" + testKeys(t)}
	first := startProcess(t, bin, append(env, "MEILI_URL="+proxy.URL), "worker")
	select {
	case <-proxy.held:
	case <-first.done:
		t.Fatalf("the first worker exited before indexing: %v\n%s", first.err, first.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the first worker never sent the documents to meilisearch\n%s", first.log())
	}
	// Mid-indexing: generation 1 is in PostgreSQL, its documents on the way.
	var state string
	var generation, indexed int64
	if err := store.DB().QueryRowContext(ctx, `SELECT state, generation, indexed_generation FROM sources WHERE id = $1`, src.ID).
		Scan(&state, &generation, &indexed); err != nil {
		t.Fatal(err)
	}
	jobState, attempt := refreshJob(t, store, src.ID)
	// The state may read queued rather than indexing: the worker's start-up
	// scan of due sources asks for another refresh of a source never
	// refreshed, which the running job will honour after this one.
	if (state != "indexing" && state != "queued") || generation != 1 || indexed != 0 || jobState != "running" || attempt != 1 {
		t.Fatalf("when killed: source %s, generation %d, indexed %d; job %s (attempt %d)", state, generation, indexed, jobState, attempt)
	}
	first.kill(t)

	second := startProcess(t, bin, append(env, "MEILI_URL="+meiliURL), "worker")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s, err := store.Source(ctx, org.ID, src.ID)
		if err != nil {
			t.Fatal(err)
		}
		jobState, attempt = refreshJob(t, store, src.ID)
		if s.State == "ready" && s.Generation > 0 && s.IndexedGeneration == s.Generation && jobState == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up: source %s (%s), generation %d, indexed %d (%s); job %s, attempt %d\nsecond worker:\n%s",
				s.State, s.Error, s.Generation, s.IndexedGeneration, s.IndexError, jobState, attempt, second.log())
		}
		select {
		case <-second.done:
			t.Fatalf("the second worker exited: %v\n%s", second.err, second.log())
		case <-time.After(200 * time.Millisecond):
		}
	}

	s, _ := store.Source(ctx, org.ID, src.ID)
	var rows, paths int
	if err := store.DB().QueryRowContext(ctx, `SELECT count(*), count(DISTINCT path) FROM source_tools WHERE source_id = $1`, src.ID).
		Scan(&rows, &paths); err != nil {
		t.Fatal(err)
	}
	if rows != 1223 || paths != 1223 || s.ToolCount != 1223 || s.Generation != 1 {
		t.Errorf("postgresql: %d tool rows, %d distinct paths, tool_count %d, generation %d; want 1,223 at generation 1",
			rows, paths, s.ToolCount, s.Generation)
	}
	if n, err := index.Count(ctx, org.ID, src.ID); err != nil || n != 1223 {
		t.Errorf("meilisearch: %d documents (%v), want 1,223", n, err)
	}
	if attempt < 2 {
		t.Errorf("the refresh job completed at attempt %d; want a retry", attempt)
	}
	var rescued bool
	if err := store.DB().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM river_job, unnest(errors) e
		WHERE kind = 'refresh_source' AND args->>'source_id' = $1 AND e->>'error' LIKE '%rescued%')`, src.ID).Scan(&rescued); err != nil {
		t.Fatal(err)
	}
	var attempts []string
	rows2, err := store.DB().QueryContext(ctx, `SELECT e->>'attempt', e->>'error' FROM river_job, unnest(errors) e
		WHERE kind = 'refresh_source' AND args->>'source_id' = $1`, src.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows2.Next() {
		var n, msg string
		if err := rows2.Scan(&n, &msg); err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, "attempt "+n+": "+msg)
	}
	rows2.Close()
	t.Logf("refresh job completed at attempt %d (rescued: %v); spec served %d times; errors: %q", attempt, rescued, count(&served), attempts)

	second.stop(t)
	if left := processesRunning(bin); len(left) > 0 {
		t.Fatalf("processes left: %v", left)
	}
}

// TestMeilisearchDownDuringRefresh stops a private Meilisearch, refreshes a
// source with an in-process worker: PostgreSQL has the tools, the source is
// ready with the index error shown, and search falls back to PostgreSQL.
// Meilisearch comes back on the same port and, with no manual step, the
// worker's reconcile brings the index level and search uses it again.
func TestMeilisearchDownDuringRefresh(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	dataDir := t.TempDir()
	opts := embedded.Options{DataDir: dataDir, Meili: true, MeiliBin: meiliBin(t), Logger: log}
	sup, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Stop(context.Background()) })
	meiliURL := sup.MeiliURL()
	u, _ := url.Parse(meiliURL)
	opts.MeiliPort, _ = strconv.Atoi(u.Port())
	index := search.NewMeili(meiliURL, sup.MeiliKey(), "tools")
	t.Cleanup(index.Close)
	if err := index.EnsureSettings(ctx); err != nil {
		t.Fatal(err)
	}

	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	var org db.Organization
	var ws db.Workspace
	err = store.InTx(ctx, func(tx *sqlx.Tx) error {
		if org, err = db.CreateOrganization(ctx, tx, "down", "Down"); err != nil {
			return err
		}
		ws, err = db.CreateWorkspace(ctx, tx, org.ID, "default", "Default")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &registry.Refresher{Store: store, Discoverer: registry.NewDiscoverer(true, 20*time.Second, "test"), Log: log, Index: index}
	q, err := worker.New(store, r, log, worker.Options{Concurrency: 2, JobTimeout: 30 * time.Second, ReconcileInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = q.Stop(sctx)
	})

	if err := sup.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]string{"schema": librarySDL})
	src, err := (&sources.Service{Store: store, Refresher: q}).Create(ctx, org.ID, &ws.ID, sources.Input{Name: "Library",
		Type: sources.TypeGraphQL, Scope: sources.ScopeWorkspace, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s := waitSource(t, store, org.ID, src.ID, func(s db.Source) bool {
		return s.Generation == 1 && s.State == "ready" && s.IndexError != ""
	})
	tools, err := store.AllTools(ctx, org.ID, src.ID)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, tl := range tools {
		stored = append(stored, tl.Path)
	}
	if !slices.Equal(stored, libraryTools) || s.IndexedGeneration != 0 || s.ToolCount != len(libraryTools) {
		t.Fatalf("with meilisearch down: postgresql holds %v (tool_count %d), want %v; indexed generation %d",
			stored, s.ToolCount, libraryTools, s.IndexedGeneration)
	}
	f := &search.Fallback{Primary: index, Secondary: search.Postgres{Store: store}, Log: log, Cooldown: 100 * time.Millisecond}
	query := search.Query{OrgID: org.ID, WorkspaceID: ws.ID, Text: "add book", Limit: 10}
	res, err := f.Search(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Degraded || !slices.Contains(hitPaths(res), "library.mutation.addBook") {
		t.Fatalf("search with meilisearch down: degraded %v, %v", res.Degraded, hitPaths(res))
	}

	// Meilisearch is back, at the same address; nobody does anything.
	back, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = back.Stop(context.Background()) })
	if back.MeiliURL() != meiliURL {
		t.Fatalf("meilisearch came back at %s, not %s", back.MeiliURL(), meiliURL)
	}
	waitSource(t, store, org.ID, src.ID, func(s db.Source) bool {
		return s.IndexedGeneration == s.Generation && s.IndexError == "" && s.State == "ready"
	})
	if n, err := index.Count(ctx, org.ID, src.ID); err != nil || n != len(libraryTools) {
		t.Fatalf("meilisearch holds %d documents (%v), want %d", n, err, len(libraryTools))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		res, err = f.Search(ctx, query)
		if err == nil && !res.Degraded && slices.Contains(hitPaths(res), "library.mutation.addBook") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search after meilisearch came back: degraded %v, %v, %v", res.Degraded, hitPaths(res), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const librarySDL = `type Query {
  "Look up one book by its id."
  book(id: ID!): Book
  "List the books of the library."
  books: [Book!]!
}
type Mutation {
  "Add a book to the library."
  addBook(title: String!): Book
}
type Book { id: ID! title: String! }`

var libraryTools = []string{"library.graphql", "library.mutation.addBook", "library.query.book", "library.query.books"}

func hitPaths(res search.Results) []string {
	out := []string{}
	for _, h := range res.Hits {
		out = append(out, h.Path)
	}
	return out
}

// waitSource polls a source until done holds, for at most two minutes.
func waitSource(t *testing.T, store *db.Store, orgID int64, id string, done func(db.Source) bool) db.Source {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s, err := store.Source(context.Background(), orgID, id)
		if err != nil {
			t.Fatal(err)
		}
		if done(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up: source %s (%s), generation %d, indexed %d, index error %q", s.State, s.Error, s.Generation,
				s.IndexedGeneration, s.IndexError)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refreshJob returns the state and attempt of a source's refresh job.
func refreshJob(t *testing.T, store *db.Store, sourceID string) (string, int) {
	t.Helper()
	var state string
	var attempt int
	err := store.DB().QueryRowContext(context.Background(), `SELECT state, attempt FROM river_job
		WHERE kind = 'refresh_source' AND args->>'source_id' = $1 ORDER BY id DESC LIMIT 1`, sourceID).Scan(&state, &attempt)
	if err != nil {
		t.Fatalf("refresh job: %v", err)
	}
	return state, attempt
}

func count(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// buildBinary builds toolgate into the test's temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toolgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/toolgate")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// meiliBin finds Meilisearch as the test harness does.
func meiliBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("MEILI_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("meilisearch"); err == nil {
		return bin
	}
	bin := filepath.Join(testenv.RepoRoot(t), ".data", "bin", "meilisearch")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("meilisearch not found (MEILI_BIN, PATH, %s); install it with: make deps", bin)
	}
	return bin
}

// process is a toolgate child in its own process group.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// kill SIGKILLs the process group and reaps it.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// stop sends SIGTERM and waits for a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", p.err, p.log())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("no exit within 30s of SIGTERM\n%s", p.log())
	}
}

func (p *process) log() string { return p.out.String() }

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// processesRunning lists live processes running bin.
func processesRunning(bin string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.HasPrefix(string(cmdline), bin+"\x00") {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// holdingProxy forwards to Meilisearch but holds the first document upsert
// until its client goes away: the worker that sent it is then killed
// mid-indexing, its documents never written.
type holdingProxy struct {
	URL  string
	held chan struct{}
	once sync.Once
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{held: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/indexes/") && strings.HasSuffix(r.URL.Path, "/documents") {
			first := false
			p.once.Do(func() { first = true })
			if first {
				_, _ = io.Copy(io.Discard, r.Body)
				close(p.held)
				<-r.Context().Done()
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// testKeys is a fresh one-key ring for a process under test.
func testKeys(t *testing.T) string {
	t.Helper()
	entry, err := secrets.NewKeyEntry()
	if err != nil {
		t.Fatal(err)
	}
	return entry
}
