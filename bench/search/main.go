// Command search benchmarks tool search at scale: it stores 50,143 tools
// (GitHub's 1,223 REST tools under 41 sources: one organization source
// every workspace sees and two sources in each of 20 workspaces) in
// PostgreSQL and a fresh Meilisearch index, then replays the labelled
// relevance queries from random workspaces against Meilisearch and against
// the PostgreSQL fallback, and prints latency percentiles (the Search call
// timed in-process, plus Meilisearch's own processingTimeMs) and the peak
// RSS of this process.
//
// With the services of the test harness, from the repository root:
//
//	go run ./cmd/testservices -- go run ./bench/search
//
// testservices exports TOOLGATE_TEST_DATABASE_URL (a server: the benchmark
// creates a database of its own in it and drops it at the end) and
// TOOLGATE_TEST_MEILI_URL / TOOLGATE_TEST_MEILI_KEY. Against other services
// pass -database-url (an existing database: it is migrated, and the
// benchmark's organization is deleted at the end), -meili-url and -meili-key,
// or set DATABASE_URL, MEILI_URL and MEILI_MASTER_KEY. The Meilisearch index
// (tools_bench_<random>) is deleted at the end unless -keep.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"maps"
	mathrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/search/relevance"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

func main() {
	log.SetFlags(0)
	var (
		databaseURL = flag.String("database-url", os.Getenv("DATABASE_URL"), "existing database to use (default $DATABASE_URL)")
		serverURL   = flag.String("database-server", os.Getenv("TOOLGATE_TEST_DATABASE_URL"),
			"PostgreSQL server to create a fresh database in (default $TOOLGATE_TEST_DATABASE_URL)")
		meiliURL   = flag.String("meili-url", firstEnv("MEILI_URL", "TOOLGATE_TEST_MEILI_URL"), "Meilisearch URL")
		meiliKey   = flag.String("meili-key", firstEnv("MEILI_MASTER_KEY", "TOOLGATE_TEST_MEILI_KEY"), "Meilisearch key")
		spec       = flag.String("spec", "internal/testenv/peers/specs/api.github.com.json", "GitHub's REST description")
		workspaces = flag.Int("workspaces", 20, "workspaces")
		perWS      = flag.Int("sources-per-workspace", 2, "GitHub copies in each workspace, besides the organization's")
		queries    = flag.Int("queries", 2000, "queries per engine")
		limit      = flag.Int("limit", 20, "results per query")
		keep       = flag.Bool("keep", false, "keep the database and the index")
	)
	flag.Parse()
	if (*databaseURL == "" && *serverURL == "") || *meiliURL == "" {
		log.Fatal("bench/search needs PostgreSQL and Meilisearch; run it as: go run ./cmd/testservices -- go run ./bench/search")
	}
	b := &bench{workspaces: *workspaces, perWS: *perWS, queries: *queries, limit: *limit, keep: *keep}
	if err := b.run(context.Background(), *databaseURL, *serverURL, *meiliURL, *meiliKey, *spec); err != nil {
		log.Fatal(err)
	}
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

type bench struct {
	workspaces, perWS, queries, limit int
	keep                              bool

	store *db.Store
	meili *search.Meili
	org   db.Organization
	ws    []db.Workspace
}

func (b *bench) run(ctx context.Context, databaseURL, serverURL, meiliURL, meiliKey, spec string) error {
	if databaseURL == "" {
		u, drop, err := freshDatabase(ctx, serverURL)
		if err != nil {
			return err
		}
		if !b.keep {
			defer drop()
		}
		databaseURL = u
	}
	if b.keep {
		fmt.Printf("keeping database %s\n", databaseURL)
	}
	store, err := db.Open(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := db.Migrate(ctx, store.Pool()); err != nil {
		return err
	}
	b.store = store

	b.meili = search.NewMeili(meiliURL, meiliKey, "tools_bench_"+randomHex(4))
	defer b.meili.Close()
	if err := b.meili.EnsureSettings(ctx); err != nil {
		return err
	}
	if !b.keep {
		defer func() {
			if err := b.meili.DropIndex(context.WithoutCancel(ctx)); err != nil {
				log.Printf("drop index: %v", err)
			}
		}()
	}

	raw, err := os.ReadFile(spec)
	if err != nil {
		return fmt.Errorf("read GitHub's description (install the test peers with make test-deps): %w", err)
	}
	disc, err := openapi.Build(raw, openapi.Options{})
	if err != nil {
		return err
	}
	if err := b.tenant(ctx); err != nil {
		return err
	}
	if !b.keep {
		defer b.store.InTx(context.WithoutCancel(ctx), func(tx *sqlx.Tx) error { //nolint:errcheck // best effort
			_, err := tx.ExecContext(ctx, `DELETE FROM organizations WHERE id = $1`, b.org.ID)
			return err
		})
	}
	if err := b.load(ctx, disc); err != nil {
		return err
	}
	return b.measure(ctx)
}

// freshDatabase creates a database in the server and returns its URL and
// a function that drops it.
func freshDatabase(ctx context.Context, serverURL string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", serverURL, err)
	}
	name := "toolgate_bench_" + randomHex(4)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u.Path, u.RawPath = "/"+name, ""
	drop := func() {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			log.Printf("drop database %s: %v", name, err)
		}
		conn.Close(context.Background())
	}
	return u.String(), drop, nil
}

func (b *bench) tenant(ctx context.Context) error {
	return b.store.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		slug := "bench-" + randomHex(3)
		if b.org, err = db.CreateOrganization(ctx, tx, slug, slug); err != nil {
			return err
		}
		for i := range b.workspaces {
			ws, err := db.CreateWorkspace(ctx, tx, b.org.ID, fmt.Sprintf("ws-%02d", i+1), fmt.Sprintf("Workspace %02d", i+1))
			if err != nil {
				return err
			}
			b.ws = append(b.ws, ws)
		}
		return nil
	})
}

// names vary the sources' names and namespaces.
var names = []string{"octo", "hub", "forge", "code", "repo", "git", "mono", "core", "ship", "dev"}

// load stores every source's tools and indexes them.
func (b *bench) load(ctx context.Context, disc *sources.Discovery) error {
	start := time.Now()
	var docs []search.Doc
	n := 1 + b.workspaces*b.perWS
	for i := range n {
		in := db.NewSource{ID: sourceID(), OrgID: b.org.ID, Scope: "organization", Type: "openapi",
			Name:          fmt.Sprintf("GitHub %s %02d", names[i%len(names)], i),
			Slug:          fmt.Sprintf("gh-%s-%02d", names[i%len(names)], i),
			ConfigVersion: sources.ConfigVersion, Config: json.RawMessage(`{}`), Enabled: true}
		if i > 0 {
			in.Scope, in.WorkspaceID = "workspace", &b.ws[(i-1)%b.workspaces].ID
		}
		src, err := b.store.CreateSource(ctx, in)
		if err != nil {
			return err
		}
		copied := *disc
		copied.Tools = slices.Clone(disc.Tools)
		result, _, err := registry.Stored(in.Slug, &copied)
		if err != nil {
			return err
		}
		d := search.DocsFor(src, result.Tools)
		for j := range result.Tools {
			result.Tools[j].DocHash = d[j].Hash()
		}
		if _, err := b.store.SaveDiscovery(ctx, b.org.ID, src.ID, result); err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	stored := time.Since(start)
	start = time.Now()
	if err := b.meili.Upsert(ctx, docs); err != nil {
		return err
	}
	fmt.Printf("corpus: %d tools in %d sources across %d workspaces (each sees %d)\n",
		len(docs), n, b.workspaces, len(disc.Tools)*(1+b.perWS))
	fmt.Printf("  stored in PostgreSQL in %v, indexed in Meilisearch in %v\n", stored.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

func (b *bench) measure(ctx context.Context) error {
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	qs := make([]search.Query, b.queries)
	for i := range qs {
		qs[i] = search.Query{OrgID: b.org.ID, WorkspaceID: b.ws[rng.IntN(len(b.ws))].ID,
			Text: relevance.Set[rng.IntN(len(relevance.Set))].Text, Limit: b.limit}
	}
	pg := search.Postgres{Store: b.store}
	// Warm both engines up (connections, caches).
	for _, q := range qs[:min(100, len(qs))] {
		if _, err := b.meili.Search(ctx, q); err != nil {
			return err
		}
		if _, err := pg.Search(ctx, q); err != nil {
			return err
		}
	}
	var meiliWall, meiliServer, pgWall []time.Duration
	for _, q := range qs {
		start := time.Now()
		_, processing, err := b.meili.SearchTimed(ctx, q)
		if err != nil {
			return err
		}
		meiliWall = append(meiliWall, time.Since(start))
		meiliServer = append(meiliServer, processing)
	}
	slowest := map[string]time.Duration{}
	for _, q := range qs {
		start := time.Now()
		if _, err := pg.Search(ctx, q); err != nil {
			return err
		}
		took := time.Since(start)
		pgWall = append(pgWall, took)
		slowest[q.Text] = max(slowest[q.Text], took)
	}
	fmt.Printf("queries: %d per engine from %d labelled texts, random workspace each, limit %d, one at a time\n",
		len(qs), len(relevance.Set), b.limit)
	report("meilisearch   Search call", meiliWall)
	report("meilisearch   processingTimeMs", meiliServer)
	report("postgresql    Search call", pgWall)
	texts := slices.SortedFunc(maps.Keys(slowest), func(a, b string) int { return cmp.Compare(slowest[b], slowest[a]) })
	fmt.Printf("  slowest texts on postgresql:")
	for _, t := range texts[:min(5, len(texts))] {
		fmt.Printf(" %q %v;", t, slowest[t].Round(100*time.Microsecond))
	}
	fmt.Println()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		fmt.Printf("peak RSS of this process: %.1f MiB\n", float64(ru.Maxrss)/1024)
	}
	return nil
}

func report(name string, d []time.Duration) {
	slices.Sort(d)
	p := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	fmt.Printf("  %-32s p50 %-10v p95 %-10v p99 %-10v max %v\n", name,
		p(0.50).Round(10*time.Microsecond), p(0.95).Round(10*time.Microsecond), p(0.99).Round(10*time.Microsecond),
		d[len(d)-1].Round(10*time.Microsecond))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sourceID() string {
	h := randomHex(16)
	return fmt.Sprintf("src_%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}
