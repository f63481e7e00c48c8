// Command registry benchmarks a refresh end to end: from saving a source
// with GitHub's REST description (1,223 operations, served by a local HTTP
// server) to its tools being findable in Meilisearch. Each run creates a
// fresh organization and source, enqueues its refresh the way the API does,
// lets a real in-process worker (River on PostgreSQL) run it, and polls
// search.Meili until "create a pull request" finds github.pulls.create. It
// prints each run's wall time, the median, and the memory of this process,
// which is the worker's: the peak resident set during each run (sampled)
// and the process's peak (getrusage).
//
// With the services of the test harness, from the repository root:
//
//	go run ./cmd/testservices -- go run ./bench/registry
//
// testservices exports TOOLGATE_TEST_DATABASE_URL (a server: the benchmark
// creates a database of its own in it, migrates it and drops it at the end)
// and TOOLGATE_TEST_MEILI_URL / TOOLGATE_TEST_MEILI_KEY. The Meilisearch
// index (tools_bench_<random>) is deleted at the end unless -keep.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/worker"
)

// want is the tool each run waits to find, and the text that finds it.
const (
	want      = "github.pulls.create"
	queryText = "create a pull request"
)

func main() {
	log.SetFlags(0)
	var (
		serverURL = flag.String("database-server", os.Getenv("TOOLGATE_TEST_DATABASE_URL"),
			"PostgreSQL server to create a fresh database in (default $TOOLGATE_TEST_DATABASE_URL)")
		meiliURL = flag.String("meili-url", os.Getenv("TOOLGATE_TEST_MEILI_URL"), "Meilisearch URL (default $TOOLGATE_TEST_MEILI_URL)")
		meiliKey = flag.String("meili-key", os.Getenv("TOOLGATE_TEST_MEILI_KEY"), "Meilisearch key (default $TOOLGATE_TEST_MEILI_KEY)")
		spec     = flag.String("spec", "internal/testenv/peers/specs/api.github.com.json", "GitHub's REST description")
		runs     = flag.Int("runs", 3, "refreshes to time, each of a fresh source")
		keep     = flag.Bool("keep", false, "keep the database and the index")
	)
	flag.Parse()
	if *serverURL == "" || *meiliURL == "" {
		log.Fatal("bench/registry needs PostgreSQL and Meilisearch; run it as: go run ./cmd/testservices -- go run ./bench/registry")
	}
	if _, err := os.Stat(*spec); err != nil {
		log.Fatalf("GitHub's description is missing (install the test peers with make test-deps): %v", err)
	}
	if err := run(context.Background(), *serverURL, *meiliURL, *meiliKey, *spec, *runs, *keep); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, serverURL, meiliURL, meiliKey, spec string, runs int, keep bool) error {
	databaseURL, drop, err := freshDatabase(ctx, serverURL)
	if err != nil {
		return err
	}
	if keep {
		fmt.Printf("keeping database %s\n", databaseURL)
	} else {
		defer drop()
	}
	store, err := db.Open(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := db.Migrate(ctx, store.Pool()); err != nil {
		return err
	}

	index := search.NewMeili(meiliURL, meiliKey, "tools_bench_"+randomHex(4))
	defer index.Close()
	if err := index.EnsureSettings(ctx); err != nil {
		return err
	}
	if !keep {
		defer func() {
			if err := index.DropIndex(context.WithoutCancel(ctx)); err != nil {
				log.Printf("drop index: %v", err)
			}
		}()
	}

	specSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, spec) }))
	defer specSrv.Close()
	cfg, _ := json.Marshal(map[string]string{"spec": specSrv.URL + "/api.github.com.json"})

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r := &registry.Refresher{Store: store, Discoverer: registry.NewDiscoverer(true, 30*time.Second, "bench"), Log: logger, Index: index}
	q, err := worker.New(store, r, logger, worker.Options{})
	if err != nil {
		return err
	}
	if err := q.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = q.Stop(sctx)
	}()
	svc := &sources.Service{Store: store, Refresher: q}

	runtime.GC()
	fmt.Printf("GitHub's REST description from a local server, %d runs, each a fresh organization and source\n", runs)
	fmt.Printf("before the first run: RSS %.1f MiB, peak RSS %.1f MiB\n", mib(currentRSS()), mib(peakRSS()))
	var walls []time.Duration
	for i := 1; i <= runs; i++ {
		res, err := once(ctx, store, index, svc, cfg)
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		walls = append(walls, res.wall)
		fmt.Printf("run %d: saved -> %s found in %v (discovery %d ms, %d tools, %d searches); RSS peak during the run %.1f MiB\n",
			i, want, res.wall.Round(time.Millisecond), res.discoveryMS, res.tools, res.searches, mib(res.peakRSS))
		for _, p := range res.phases {
			fmt.Printf("  %-10s after %v\n", p.name, p.at.Round(time.Millisecond))
		}
	}
	slices.Sort(walls)
	fmt.Printf("median: %v (target under 5s)\n", walls[len(walls)/2].Round(time.Millisecond))
	fmt.Printf("peak RSS of this process (getrusage): %.1f MiB\n", mib(peakRSS()))
	return nil
}

type result struct {
	wall        time.Duration
	discoveryMS int
	tools       int
	searches    int
	peakRSS     int64
	// phases are when the source's row first showed a refresh step.
	phases []phaseAt
}

type phaseAt struct {
	name string
	at   time.Duration
}

// once saves a source in a fresh organization and waits until search finds
// its tool.
func once(ctx context.Context, store *db.Store, index *search.Meili, svc *sources.Service, cfg json.RawMessage) (result, error) {
	var org db.Organization
	err := store.InTx(ctx, func(tx *sqlx.Tx) error {
		slug := "bench-" + randomHex(4)
		var err error
		if org, err = db.CreateOrganization(ctx, tx, slug, slug); err != nil {
			return err
		}
		_, err = db.CreateWorkspace(ctx, tx, org.ID, "default", "Default")
		return err
	})
	if err != nil {
		return result{}, err
	}
	ws, err := store.WorkspaceBySlug(ctx, org.ID, "default")
	if err != nil {
		return result{}, err
	}
	runtime.GC()
	var peak atomic.Int64
	stop := sampleRSS(&peak)
	defer stop()

	start := time.Now()
	src, err := svc.Create(ctx, org.ID, nil, sources.Input{Name: "GitHub", Type: sources.TypeOpenAPI,
		Scope: sources.ScopeOrganization, Config: cfg})
	if err != nil {
		return result{}, err
	}
	res := result{}
	deadline := start.Add(5 * time.Minute)
	for {
		if s, err := store.Source(ctx, org.ID, src.ID); err == nil {
			phase := map[string]bool{"picked up": s.State != "queued", "written": s.Generation > 0}
			for _, name := range []string{"picked up", "written"} {
				if phase[name] && !slices.ContainsFunc(res.phases, func(p phaseAt) bool { return p.name == name }) {
					res.phases = append(res.phases, phaseAt{name, time.Since(start)})
				}
			}
		}
		res.searches++
		hits, err := index.Search(ctx, search.Query{OrgID: org.ID, WorkspaceID: ws.ID, Text: queryText, Limit: 20})
		if err == nil && slices.ContainsFunc(hits.Hits, func(h search.Hit) bool { return h.Path == want }) {
			res.wall = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			s, _ := store.Source(ctx, org.ID, src.ID)
			return result{}, fmt.Errorf("%s not found after 5 minutes: source %s (%s), search error %v", want, s.State, s.Error, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	// The search may find the tool before the worker records the
	// generation as indexed; that is the end of the refresh.
	var s db.Source
	for {
		if s, err = store.Source(ctx, org.ID, src.ID); err != nil {
			return result{}, err
		}
		if s.Generation > 0 && s.IndexedGeneration == s.Generation && s.State == "ready" {
			res.phases = append(res.phases, phaseAt{"ready", time.Since(start)})
			break
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("source never ready: %s (%s)", s.State, s.Error)
		}
		time.Sleep(5 * time.Millisecond)
	}
	res.discoveryMS, res.tools, res.peakRSS = s.DiscoveryMS, s.ToolCount, peak.Load()
	return res, nil
}

// sampleRSS records the largest resident set seen until stop is called.
func sampleRSS(peak *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss := currentRSS(); rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var stopped atomic.Bool
	return func() {
		if stopped.CompareAndSwap(false, true) {
			close(done)
			<-finished
		}
	}
}

// currentRSS is this process's resident set in KiB (VmRSS).
func currentRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// peakRSS is this process's peak resident set in KiB (getrusage's maxrss).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
