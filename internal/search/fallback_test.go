package search_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/embedded"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/testenv"
)

// relay is a TCP relay with a fixed address in front of a Meilisearch whose
// port changes when it restarts. With no target it closes connections at
// once, like a stopped server; hung, it accepts and never answers.
type relay struct {
	ln       net.Listener
	mu       sync.Mutex
	target   string
	hung     bool
	accepted atomic.Int64
}

func newRelay(t *testing.T) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go r.serve()
	return r
}

func (r *relay) URL() string { return "http://" + r.ln.Addr().String() }

func (r *relay) set(target string, hung bool) {
	r.mu.Lock()
	r.target, r.hung = strings.TrimPrefix(target, "http://"), hung
	r.mu.Unlock()
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.accepted.Add(1)
		go r.handle(c)
	}
}

func (r *relay) handle(c net.Conn) {
	defer c.Close()
	r.mu.Lock()
	target, hung := r.target, r.hung
	r.mu.Unlock()
	if hung {
		_, _ = io.Copy(io.Discard, c)
		return
	}
	if target == "" {
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// privateMeili starts a Meilisearch of the test's own in dir.
func privateMeili(t *testing.T, dir string) *embedded.Supervisor {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sup, err := embedded.Start(ctx, embedded.Options{DataDir: dir, Meili: true, MeiliBin: meiliBin(t),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Stop(context.Background()) })
	return sup
}

// meiliBin finds Meilisearch where the harness looks for it.
func meiliBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("MEILI_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("meilisearch"); err == nil {
		return bin
	}
	var tried []string
	if dir := os.Getenv("TOOLGATE_DATA_DIR"); dir != "" {
		tried = append(tried, filepath.Join(dir, "bin", "meilisearch"))
	}
	tried = append(tried, filepath.Join(testenv.RepoRoot(t), ".data", "bin", "meilisearch"))
	for _, bin := range tried {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	t.Fatalf("meilisearch not found (MEILI_BIN, PATH, %v); install it with: make deps", tried)
	return ""
}

// syncBuffer is a log destination safe for the probe's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFallback(t *testing.T) {
	ctx := context.Background()
	dir, err := embedded.MkdirTemp("toolgate-search-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sup := privateMeili(t, dir)
	rl := newRelay(t)
	rl.set(sup.MeiliURL(), false)

	f := newIsolationFixture(t)
	// No index cleanup: the private Meilisearch and its directory go.
	m := search.NewMeili(rl.URL(), sup.MeiliKey(), "tools")
	t.Cleanup(m.Close)
	if err := m.EnsureSettings(ctx); err != nil {
		t.Fatal(err)
	}
	// The index gets one tool PostgreSQL lacks, so answers show their origin.
	_, docs := addSource(t, f.store, f.acme.org.ID, &f.acme.ws[0], "openapi", "pg only", "pgonly",
		tools("frob_widget", "Frob a widget"), true)
	all := docs
	for _, name := range []string{"acme-org", "acme-red"} {
		tl, err := f.store.AllTools(ctx, f.acme.org.ID, f.src[name].ID)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, search.DocsFor(f.src[name], tl)...)
	}
	meiliOnly := all[0]
	meiliOnly.ID, meiliOnly.Path = search.DocID("src_x", "meili.only_widget"), "meili.only_widget"
	if err := m.Upsert(ctx, append(all[1:], meiliOnly)); err != nil {
		t.Fatal(err)
	}

	logs := &syncBuffer{}
	const cooldown = 1500 * time.Millisecond
	fb := &search.Fallback{Primary: m, Secondary: search.Postgres{Store: f.store},
		Log: slog.New(slog.NewTextHandler(logs, nil)), Timeout: 500 * time.Millisecond, Cooldown: cooldown}
	q := search.Query{OrgID: f.acme.org.ID, WorkspaceID: f.acme.ws[0].ID, Text: "widget", Limit: 50}
	check := func(wantDegraded bool, wantPath string) time.Duration {
		t.Helper()
		start := time.Now()
		res, err := fb.Search(ctx, q)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if res.Degraded != wantDegraded || !strings.Contains(strings.Join(paths(res), " "), wantPath) {
			t.Fatalf("degraded %v with %v, want degraded %v with %s", res.Degraded, paths(res), wantDegraded, wantPath)
		}
		return took
	}

	// Up: Meilisearch answers.
	check(false, "meili.only_widget")
	if fb.Degraded() {
		t.Fatal("Degraded while Meilisearch is up")
	}

	// Stop it: PostgreSQL answers, the failure is logged once, and during
	// the cooldown queries do not even try Meilisearch.
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	if err := sup.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	cancel()
	rl.set("", false)
	if took := check(true, "pgonly.frob_widget"); took > time.Second {
		t.Errorf("the first degraded query took %v", took)
	}
	tries := rl.accepted.Load()
	for range 5 {
		if took := check(true, "pgonly.frob_widget"); took > 200*time.Millisecond {
			t.Errorf("a degraded query in the cooldown took %v", took)
		}
	}
	if n := rl.accepted.Load() - tries; n != 0 {
		t.Errorf("%d connections to Meilisearch during the cooldown, want none", n)
	}
	if !fb.Degraded() {
		t.Error("Degraded() is false while Meilisearch is down")
	}
	if n := strings.Count(logs.String(), "meilisearch unavailable"); n != 1 {
		t.Errorf("logged the outage %d times, want once:\n%s", n, logs)
	}

	// Start it again (same data directory: same key and index). Queries
	// stay on PostgreSQL until the cooldown ends, then return to it.
	sup = privateMeili(t, dir)
	rl.set(sup.MeiliURL(), false)
	time.Sleep(cooldown + 100*time.Millisecond)
	check(false, "meili.only_widget")
	if fb.Degraded() {
		t.Error("Degraded() is true after recovery")
	}
	if n := strings.Count(logs.String(), "meilisearch is back"); n != 1 {
		t.Errorf("logged the recovery %d times, want once:\n%s", n, logs)
	}

	// A Meilisearch that accepts and never answers costs one timeout, then
	// the breaker opens.
	rl.set(sup.MeiliURL(), true)
	m.Close() // drop kept-alive connections so the next query dials the hung relay
	if took := check(true, "pgonly.frob_widget"); took < 400*time.Millisecond || took > 2*time.Second {
		t.Errorf("the query that met the hung server took %v, want about the 500 ms timeout", took)
	}
	if took := check(true, "pgonly.frob_widget"); took > 200*time.Millisecond {
		t.Errorf("a query with the breaker open took %v", took)
	}

	// Recovery without queries: Degraded() probes in the background once
	// the cooldown has passed, so the console's banner clears by itself.
	rl.set(sup.MeiliURL(), false)
	m.Close()
	time.Sleep(cooldown + 100*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for fb.Degraded() {
		if time.Now().After(deadline) {
			t.Fatal("Degraded() stayed true after Meilisearch came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	check(false, "meili.only_widget")
}

func TestFallbackKeepsQueryErrors(t *testing.T) {
	f := newIsolationFixture(t)
	fb := &search.Fallback{Primary: f.meili, Secondary: search.Postgres{Store: f.store}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fb.Search(ctx, search.Query{OrgID: f.acme.org.ID, WorkspaceID: f.acme.ws[0].ID, Text: "widget"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled query: %v, want context.Canceled", err)
	}
	if fb.Degraded() {
		t.Error("the caller's cancellation opened the breaker")
	}
}
