// Command gateway benchmarks tool calls through toolgate's /mcp against
// calling the same upstream directly. Two upstreams run in this process on
// 127.0.0.1: a go-sdk MCP server (Streamable HTTP) with an echo tool, and an
// HTTP API (GET /echo?text=...) described by an OpenAPI document. toolgate
// runs as a separate process, built from ./cmd/toolgate and started with
// `toolgate serve` over a fresh database seeded through the product's own
// services (an account, its organization and workspace, a workspace API key,
// the two sources); its worker discovers the sources. Every call through
// toolgate is authenticated by the key and goes through the gateway's whole
// pipeline, policy and audit included.
//
// The two upstreams run together in a process of their own, started from
// this program: an agent's calls, direct or through a gateway, always cross
// from one process to another, and with the upstreams in the clients'
// process a direct call never would, so the baseline would be one no
// agent has. -upstreams-in-process runs them here all the same.
//
// Scenarios, each at every -sessions count (N client sessions each calling
// in a loop): the MCP upstream called directly, through /mcp's call_tool
// (search mode) and through /mcp?mode=direct by the tool's direct name; the
// HTTP API called directly (a keep-alive client) and through the same two
// gateway surfaces; and the floor, the MCP upstream called through a bare
// TCP relay in a process of its own (relay.go), whose CPU per call is what
// any Go gateway pays to move the bytes before doing anything with them. Rounds interleave the scenarios; each run warms up, then
// measures for -duration. The report gives per scenario the median over the
// rounds of calls/s, p50 and p99 latency, and the toolgate process's CPU
// time (user+system from /proc/<pid>/stat) per call, then the throughput of
// each gateway scenario as a share of its direct one. PostgreSQL,
// Meilisearch and the upstreams are other processes and not counted as the
// gateway's CPU (the upstreams' is reported apart); this process (the
// clients) shares the machine's cores with all of them. -pprof saves
// toolgate's CPU and allocation profiles of each gateway run.
//
// With the services of the test harness, from the repository root:
//
//	go run ./cmd/testservices -- go run ./bench/gateway -duration 3s -rounds 3
//
// testservices exports TOOLGATE_TEST_DATABASE_URL (a server: the benchmark
// creates a database of its own in it, migrates it and drops it at the end)
// and TOOLGATE_TEST_MEILI_URL / TOOLGATE_TEST_MEILI_KEY (the benchmark's
// toolgate uses an index of its own, deleted at the end). Everything talks
// to 127.0.0.1 only. Results are printed, not asserted.
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
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/mcpserver"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/worker"
)

// protocolVersion is what every client session speaks.
const protocolVersion = "2025-11-25"

// echoText is what every call sends and expects back.
const echoText = "toolgate bench echo"

// Targets from the issue, at the highest session count, with
// authentication, policy and audit on.
const (
	targetShare  = 0.75
	targetCPU    = 100 * time.Microsecond
	targetAtLoad = 32
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat on Linux.
const userHZ = 100

type options struct {
	serverURL, meiliURL, meiliKey string
	toolgateBin                   string
	duration, warmup              time.Duration
	rounds                        int
	sessions                      []int
	only                          []string
	// pprofDir, when set, receives toolgate's CPU and allocation profiles
	// of every measured gateway run.
	pprofDir string
	// env is added to toolgate's environment (GOGC=400, ...).
	env []string
	// jsonAnswers has the MCP upstream answer each POST with one JSON
	// body instead of an event stream.
	jsonAnswers bool
	// upstreamsHere runs the upstreams in this process instead of one of
	// their own.
	upstreamsHere bool
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == upstreamCommand {
		serveUpstreams(os.Args[2] == "json")
		return
	}
	if len(os.Args) == 3 && os.Args[1] == relayCommand {
		serveRelay(os.Args[2])
		return
	}
	// toolgate is started from the main thread, which lives as long as this
	// process, so its Pdeathsig fires only when the benchmark dies.
	runtime.LockOSThread()
	log.SetFlags(0)
	var (
		o        options
		sessions = flag.String("sessions", "1,32", "comma-separated counts of concurrent client sessions")
		only     = flag.String("only", "", "comma-separated scenario keys to run (default all: "+strings.Join(scenarioKeys(), ",")+")")
		env      = flag.String("toolgate-env", "", "comma-separated NAME=value pairs added to toolgate's environment, e.g. GOGC=400")
	)
	answers := flag.String("mcp-answers", "sse", "how the MCP upstream answers a call: sse, an event stream that ends after the response (the go-sdk's default), or json, one JSON body")
	flag.BoolVar(&o.upstreamsHere, "upstreams-in-process", false,
		"run the upstreams in this process, beside the clients, instead of a process of their own: direct calls then never leave the process")
	flag.StringVar(&o.pprofDir, "pprof", "", "a folder to write toolgate's CPU profile and allocation profiles (before, after) of every measured gateway run to")
	flag.StringVar(&o.serverURL, "database-server", os.Getenv("TOOLGATE_TEST_DATABASE_URL"),
		"PostgreSQL server to create a fresh database in (default $TOOLGATE_TEST_DATABASE_URL)")
	flag.StringVar(&o.meiliURL, "meili-url", os.Getenv("TOOLGATE_TEST_MEILI_URL"), "Meilisearch URL (default $TOOLGATE_TEST_MEILI_URL)")
	flag.StringVar(&o.meiliKey, "meili-key", os.Getenv("TOOLGATE_TEST_MEILI_KEY"), "Meilisearch key (default $TOOLGATE_TEST_MEILI_KEY)")
	flag.StringVar(&o.toolgateBin, "toolgate", "", "a toolgate binary to run instead of building ./cmd/toolgate")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "measured time of each run")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured calls before each run")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of every scenario, interleaved; the report takes the median")
	flag.Parse()
	if o.serverURL == "" || o.meiliURL == "" {
		log.Fatal("bench/gateway needs PostgreSQL and Meilisearch; run it as: go run ./cmd/testservices -- go run ./bench/gateway")
	}
	for _, s := range strings.Split(*sessions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			log.Fatalf("-sessions: %q is not a count from 1 to 1024", s)
		}
		o.sessions = append(o.sessions, n)
	}
	if *only != "" {
		for _, k := range strings.Split(*only, ",") {
			if k = strings.TrimSpace(k); !slices.Contains(scenarioKeys(), k) {
				log.Fatalf("-only: unknown scenario %q (choose from %s)", k, strings.Join(scenarioKeys(), ","))
			}
			o.only = append(o.only, strings.TrimSpace(k))
		}
	}
	if *env != "" {
		for _, kv := range strings.Split(*env, ",") {
			if !strings.Contains(kv, "=") {
				log.Fatalf("-toolgate-env: %q is not NAME=value", kv)
			}
			o.env = append(o.env, strings.TrimSpace(kv))
		}
	}
	if o.pprofDir != "" {
		if err := os.MkdirAll(o.pprofDir, 0o755); err != nil {
			log.Fatalf("-pprof: %v", err)
		}
	}
	switch *answers {
	case "sse":
	case "json":
		o.jsonAnswers = true
	default:
		log.Fatalf("-mcp-answers: %q is neither sse nor json", *answers)
	}
	if o.rounds < 1 || o.duration <= 0 || o.warmup < 0 {
		log.Fatal("-rounds must be at least 1 and -duration positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, o options) (err error) {
	tmp, err := os.MkdirTemp("", "toolgate-bench-gateway-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := o.toolgateBin
	if bin == "" {
		bin = filepath.Join(tmp, "toolgate")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolgate")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build toolgate (run from the repository root): %w", err)
		}
	}

	databaseURL, drop, err := freshDatabase(ctx, o.serverURL)
	if err != nil {
		return err
	}
	defer drop()
	store, err := db.Open(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := db.Migrate(ctx, store.Pool()); err != nil {
		return err
	}
	indexName := "tools_bench_" + randomHex(4)
	defer func() {
		index := search.NewMeili(o.meiliURL, o.meiliKey, indexName)
		defer index.Close()
		if err := index.DropIndex(context.WithoutCancel(ctx)); err != nil {
			log.Printf("drop index %s: %v", indexName, err)
		}
	}()

	up, err := startUpstreams(!o.upstreamsHere, o.jsonAnswers)
	if err != nil {
		return err
	}
	defer up.close()

	seed, err := seedTenant(ctx, store, up.url+"/mcp", up.url)
	if err != nil {
		return err
	}

	tg, err := startToolgate(ctx, bin, tmp, databaseURL, o.meiliURL, o.meiliKey, indexName, o.env, o.pprofDir != "")
	if err != nil {
		return err
	}
	defer func() {
		if serr := tg.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	if err := tg.waitReady(ctx, time.Minute); err != nil {
		return err
	}
	tools, err := waitSources(ctx, store, seed, 2*time.Minute)
	if err != nil {
		return err
	}

	b := &bench{o: o, tg: tg, pg: clusterOf(ctx, store), seed: seed, tools: tools, mcpURL: up.url + "/mcp", apiURL: up.url, up: up,
		client: &http.Client{Transport: newTransport()}}
	if slices.ContainsFunc(b.selected(), func(s scenario) bool { return s.relay }) {
		if b.relay, err = startRelay(strings.TrimPrefix(up.url, "http://")); err != nil {
			return err
		}
		defer b.relay.close()
	}
	b.policy = policySummary(ctx, store, seed)
	if problem := b.checkPolicy(ctx, store); problem != "" {
		b.policy = "NOT ENFORCED: " + problem
	}
	fmt.Printf("policy: %s\n", b.policy)
	b.preflight(ctx)
	b.loadBefore = loadAverage()
	results, err := b.measureAll(ctx)
	if err != nil {
		return err
	}
	b.loadAfter = loadAverage()
	b.report(results)

	// Stop toolgate now: its audit recorder flushes on the way out.
	stopErr := tg.stop()
	b.reportAudit(ctx, store)
	tg.reportLog()
	return stopErr
}

// scenario is one way of calling the echo tool.
type scenario struct {
	key      string // for -only
	upstream string // "MCP" or "OpenAPI"
	via      string // "direct", "/mcp call_tool", "/mcp direct mode", "bare TCP relay"
	gateway  bool
	// relay: called directly, through the bare TCP relay (relay.go),
	// whose CPU the run reports in toolgate's place.
	relay bool
}

func (s scenario) name() string { return s.upstream + " " + s.via }

var scenarios = []scenario{
	{"mcp-direct", "MCP", "direct", false, false},
	{"mcp-relay", "MCP", "bare TCP relay", false, true},
	{"mcp-call", "MCP", "/mcp call_tool", true, false},
	{"mcp-directmode", "MCP", "/mcp direct mode", true, false},
	{"api-direct", "OpenAPI", "direct", false, false},
	{"api-call", "OpenAPI", "/mcp call_tool", true, false},
	{"api-directmode", "OpenAPI", "/mcp direct mode", true, false},
}

func scenarioKeys() []string {
	var keys []string
	for _, s := range scenarios {
		keys = append(keys, s.key)
	}
	return keys
}

// bench holds what the runs share.
type bench struct {
	o      options
	tg     *toolgate
	pg     postgres
	seed   seeded
	tools  map[string]string // upstream ("MCP", "OpenAPI") -> tool path
	mcpURL string
	apiURL string
	// client calls the HTTP API directly.
	client *http.Client
	// loadBefore and loadAfter are the machine's load averages around the
	// runs: other work on the machine skews the numbers.
	loadBefore, loadAfter string
	// gatewayCalls counts every call sent through toolgate, warm-up and
	// failures included, to compare with the audit rows.
	gatewayCalls int
	// policy says which rules the calls are evaluated against.
	policy string
	up     *upstreams
	// relay is the bare TCP relay's process; nil unless a relay scenario
	// runs.
	relay *relay
}

// newTransport is a keep-alive transport sized for the largest session
// count: every MCP session holds a POST connection and its standalone SSE
// stream.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 256
	t.Proxy = nil
	return t
}

// caller makes one call of a scenario; close ends its session.
type caller struct {
	call  func(ctx context.Context) error
	close func()
}

// connect opens one client session of a scenario.
func (b *bench) connect(ctx context.Context, s scenario, tr http.RoundTripper) (caller, error) {
	path := b.tools[s.upstream]
	switch {
	case s.upstream == "OpenAPI" && !s.gateway:
		return caller{call: b.callAPI, close: func() {}}, nil
	case s.relay:
		cs, err := openSession(ctx, "http://"+b.relay.addr+"/mcp", &http.Client{Transport: tr})
		if err != nil {
			return caller{}, err
		}
		return sessionCaller(cs, "echo", map[string]any{"text": echoText}), nil
	case !s.gateway:
		cs, err := openSession(ctx, b.mcpURL, &http.Client{Transport: tr})
		if err != nil {
			return caller{}, err
		}
		return sessionCaller(cs, "echo", map[string]any{"text": echoText}), nil
	case s.via == "/mcp call_tool":
		cs, err := openSession(ctx, b.tg.url+"/mcp", bearer(b.seed.key, tr))
		if err != nil {
			return caller{}, err
		}
		return sessionCaller(cs, "call_tool", map[string]any{"path": path, "arguments": map[string]any{"text": echoText}}), nil
	default:
		cs, err := openSession(ctx, b.tg.url+"/mcp?mode=direct", bearer(b.seed.key, tr))
		if err != nil {
			return caller{}, err
		}
		return sessionCaller(cs, mcpserver.ToolName(path), map[string]any{"text": echoText}), nil
	}
}

func openSession(ctx context.Context, endpoint string, hc *http.Client) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", endpoint, err)
	}
	return cs, nil
}

// sessionCaller calls one tool over an MCP session and checks that the
// echo came back.
func sessionCaller(cs *mcp.ClientSession, name string, args map[string]any) caller {
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	return caller{
		call: func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				return err
			}
			text := resultText(res)
			if res.IsError {
				return fmt.Errorf("tool error: %s", text)
			}
			if !strings.Contains(text, echoText) {
				return fmt.Errorf("the echo is missing from the result: %.200s", text)
			}
			return nil
		},
		close: func() { _ = cs.Close() },
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// callAPI calls the HTTP API directly, as an agent's own HTTP client would.
func (b *bench) callAPI(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.apiURL+"/echo?text="+url.QueryEscape(echoText), nil)
	if err != nil {
		return err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Text string `json:"text"`
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return err
	}
	if out.Text != echoText {
		return fmt.Errorf("echo %q", out.Text)
	}
	return nil
}

// bearer is an HTTP client that sends the workspace API key.
func bearer(key string, next http.RoundTripper) *http.Client {
	return &http.Client{Transport: keyTransport{key: key, next: next}}
}

type keyTransport struct {
	key  string
	next http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

// preflight makes one call of every gateway scenario and says what fails,
// so a broken pipeline shows before the timed runs.
func (b *bench) preflight(ctx context.Context) {
	tr := newTransport()
	defer tr.CloseIdleConnections()
	for _, s := range b.selected() {
		c, err := b.connect(ctx, s, tr)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = c.call(cctx)
			cancel()
			c.close()
			if s.gateway {
				b.gatewayCalls++
			}
		}
		if err != nil {
			fmt.Printf("preflight %-28s FAILED: %v\n", s.name(), err)
		} else {
			fmt.Printf("preflight %-28s ok\n", s.name())
		}
	}
}

func (b *bench) selected() []scenario {
	if len(b.o.only) == 0 {
		return scenarios
	}
	var out []scenario
	for _, s := range scenarios {
		if slices.Contains(b.o.only, s.key) {
			out = append(out, s)
		}
	}
	return out
}

// runResult is one timed run of a scenario.
type runResult struct {
	calls, errors int
	firstErr      string
	elapsed       time.Duration
	p50, p99      time.Duration
	// cpu is toolgate's user+system time over the run, pgCPU the
	// PostgreSQL cluster's (every backend and the postmaster), selfCPU
	// this process's (the clients, and the upstreams when they run here).
	cpu, pgCPU, selfCPU time.Duration
	// upCPU is the upstreams' process's; 0 when they run here.
	upCPU time.Duration
}

func (r runResult) perSecond() float64 { return float64(r.calls) / r.elapsed.Seconds() }

func (r runResult) cpuPerCall() time.Duration { return r.perCall(r.cpu) }

func (r runResult) pgCPUPerCall() time.Duration { return r.perCall(r.pgCPU) }

func (r runResult) selfCPUPerCall() time.Duration { return r.perCall(r.selfCPU) }

func (r runResult) perCall(d time.Duration) time.Duration {
	if r.calls+r.errors == 0 {
		return 0
	}
	return d / time.Duration(r.calls+r.errors)
}

type runKey struct {
	sessions int
	scenario string
}

// measureAll runs every round: each session count, each scenario in turn.
func (b *bench) measureAll(ctx context.Context) (map[runKey][]runResult, error) {
	results := map[runKey][]runResult{}
	for round := 1; round <= b.o.rounds; round++ {
		for _, n := range b.o.sessions {
			for _, s := range b.selected() {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if b.tg.exited() {
					return nil, fmt.Errorf("toolgate exited during the runs:\n%s", b.tg.logTail(30))
				}
				r := b.measure(ctx, s, n, round)
				results[runKey{n, s.name()}] = append(results[runKey{n, s.name()}], r)
				status := ""
				if r.errors > 0 {
					status = fmt.Sprintf("  %d ERRORS, first: %s", r.errors, r.firstErr)
				}
				if b.up.pid != 0 {
					status = fmt.Sprintf("  upstreams %8s", fmtDur(r.perCall(r.upCPU))) + status
				}
				fmt.Printf("round %d  %3d sessions  %-28s %6.0f calls/s  p50 %8s  p99 %8s  CPU/call: toolgate %8s  Postgres %8s  %s %8s%s\n",
					round, n, s.name(), r.perSecond(), fmtDur(r.p50), fmtDur(r.p99), fmtDur(r.cpuPerCall()), fmtDur(r.pgCPUPerCall()),
					b.selfName(), fmtDur(r.selfCPUPerCall()), status)
			}
		}
	}
	return results, nil
}

// measure connects n sessions, lets them call through the warm-up, then
// counts the calls that start within the measured window.
func (b *bench) measure(ctx context.Context, s scenario, n, round int) runResult {
	tr := newTransport()
	defer tr.CloseIdleConnections()
	callers := make([]caller, 0, n)
	defer func() {
		for _, c := range callers {
			c.close()
		}
	}()
	for range n {
		c, err := b.connect(ctx, s, tr)
		if err != nil {
			return runResult{errors: 1, firstErr: err.Error(), elapsed: time.Second}
		}
		callers = append(callers, c)
	}

	start := time.Now().Add(b.o.warmup)
	end := start.Add(b.o.duration)
	type worker struct {
		lat      []time.Duration
		errors   int
		firstErr error
		all      int
	}
	workers := make([]worker, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(w *worker, c caller) {
			defer wg.Done()
			w.lat = make([]time.Duration, 0, 1<<14)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := c.call(cctx)
				cancel()
				d := time.Since(t0)
				w.all++
				if t0.Before(start) {
					continue
				}
				if err != nil {
					w.errors++
					if w.firstErr == nil {
						w.firstErr = err
					}
					// Failing fast must not spin the cores the others need.
					time.Sleep(time.Millisecond)
					continue
				}
				w.lat = append(w.lat, d)
			}
		}(&workers[i], callers[i])
	}
	time.Sleep(time.Until(start))
	cpuOf := b.tg.cpu
	if s.relay {
		cpuOf = b.relay.cpu
	}
	cpu0, pg0, self0, up0 := cpuOf(), b.pg.cpu(), selfCPU(), b.up.cpu()
	profiled := b.profile(ctx, s, n, round)
	wg.Wait()
	profiled()
	r := runResult{elapsed: time.Since(start), cpu: cpuOf() - cpu0, pgCPU: b.pg.cpu() - pg0, selfCPU: selfCPU() - self0, upCPU: b.up.cpu() - up0}

	var lat []time.Duration
	for _, w := range workers {
		lat = append(lat, w.lat...)
		r.errors += w.errors
		if w.firstErr != nil && r.firstErr == "" {
			r.firstErr = w.firstErr.Error()
		}
		if s.gateway {
			b.gatewayCalls += w.all
		}
	}
	r.calls = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		r.p50, r.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	}
	return r
}

// profile saves toolgate's allocation profile now and its CPU profile of
// the measured window; the function it returns saves the allocation
// profile again and waits for the CPU profile. `go tool pprof -base
// X.allocs-before.pprof X.allocs-after.pprof` shows the run's allocations.
func (b *bench) profile(ctx context.Context, s scenario, n, round int) func() {
	if b.o.pprofDir == "" || !s.gateway || b.tg.pprof == "" {
		return func() {}
	}
	name := filepath.Join(b.o.pprofDir, fmt.Sprintf("%s-%d-r%d", s.key, n, round))
	save := func(url, path string) {
		if err := fetchTo(ctx, url, path); err != nil {
			log.Printf("profile %s: %v", path, err)
		}
	}
	save(b.tg.pprof+"/allocs", name+".allocs-before.pprof")
	seconds := int(b.o.duration.Round(time.Second) / time.Second)
	cpuDone := make(chan struct{})
	go func() {
		defer close(cpuDone)
		save(fmt.Sprintf("%s/profile?seconds=%d", b.tg.pprof, max(seconds, 1)), name+".cpu.pprof")
	}()
	return func() {
		save(b.tg.pprof+"/allocs", name+".allocs-after.pprof")
		<-cpuDone
	}
}

// fetchTo saves what GET url answers to path.
func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// summary is the median over the rounds of each measure.
type summary struct {
	perSecond     float64
	p50, p99, cpu time.Duration
	pgCPU, self   time.Duration
	up            time.Duration
	errors        int
	rounds        int
}

func summarize(runs []runResult) summary {
	s := summary{rounds: len(runs)}
	var rate []float64
	var p50, p99, cpu, pg, self, up []time.Duration
	for _, r := range runs {
		up = append(up, r.perCall(r.upCPU))
		rate = append(rate, r.perSecond())
		p50, p99, cpu = append(p50, r.p50), append(p99, r.p99), append(cpu, r.cpuPerCall())
		pg, self = append(pg, r.pgCPUPerCall()), append(self, r.selfCPUPerCall())
		s.errors += r.errors
	}
	s.perSecond, s.p50, s.p99 = median(rate), median(p50), median(p99)
	s.cpu, s.pgCPU, s.self, s.up = median(cpu), median(pg), median(self), median(up)
	return s
}

func median[T int64 | float64 | time.Duration](v []T) T {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// report prints the table, the ratios to direct and the targets.
func (b *bench) report(results map[runKey][]runResult) {
	fmt.Println()
	fmt.Printf("command: go run ./cmd/testservices -- go run ./bench/gateway -duration %s -rounds %d -warmup %s -sessions %s",
		b.o.duration, b.o.rounds, b.o.warmup, joinInts(b.o.sessions))
	if len(b.o.only) > 0 {
		fmt.Printf(" -only %s", strings.Join(b.o.only, ","))
	}
	if b.o.jsonAnswers {
		fmt.Print(" -mcp-answers json")
	}
	fmt.Println()
	where := "the upstreams' process (pid " + strconv.Itoa(b.up.pid) + ")"
	if b.up.pid == 0 {
		where = "no other: the upstreams run in this process (-upstreams-in-process)"
	}
	fmt.Printf("machine: %s, %d cores, %s; toolgate pid %d shares them with this process (the clients), %s, PostgreSQL and Meilisearch\n",
		cpuModel(), runtime.NumCPU(), runtime.Version(), b.tg.cmd.Process.Pid, where)
	fmt.Printf("load average (1, 5, 15 min) before the runs %s, after %s\n", b.loadBefore, b.loadAfter)
	answers := "an event stream ending after the response (the go-sdk's default)"
	if b.o.jsonAnswers {
		answers = "one JSON body"
	}
	fmt.Printf("the MCP upstream answers each call with %s\n", answers)
	fmt.Printf("on every call through toolgate: authentication (workspace API key), policy (%s), audit (tool_calls rows)\n", b.policy)
	if len(b.o.env) > 0 {
		fmt.Printf("toolgate environment: %s\n", strings.Join(b.o.env, " "))
	}
	fmt.Printf("medians over %d rounds of %s (after %s warm-up); CPU/call is user+system time per call of the toolgate process, of the\n"+
		"PostgreSQL cluster (%s), of this process (%s) and of the upstreams' process;\n"+
		"on direct runs toolgate's and PostgreSQL's are their idle background; on the bare TCP relay's runs toolgate's column is the relay's\n\n", b.o.rounds, b.o.duration, b.o.warmup, b.pg, b.selfName())
	selfHead, upHead := [2]string{"", "clients"}, [2]string{"", "upstreams"}
	if b.up.pid == 0 {
		selfHead, upHead = [2]string{"clients+", "upstreams"}, [2]string{"", ""}
	}
	fmt.Printf("%-8s  %-28s  %9s  %9s  %9s  %9s  %9s  %9s  %9s  %9s  %6s\n", "", "", "", "", "",
		"CPU/call:", "", selfHead[0], upHead[0], "", "")
	fmt.Printf("%-8s  %-28s  %9s  %9s  %9s  %9s  %9s  %9s  %9s  %9s  %6s\n", "sessions", "scenario", "calls/s", "p50", "p99",
		"toolgate", "Postgres", selfHead[1], upHead[1], "vs direct", "errors")
	type verdict struct {
		name     string
		upstream string
		share    float64
		cpu      time.Duration
		errs     int
	}
	var verdicts []verdict
	floor := map[string]time.Duration{} // upstream -> the relay's CPU per call at targetAtLoad sessions
	for _, n := range b.o.sessions {
		for _, s := range b.selected() {
			runs := results[runKey{n, s.name()}]
			if len(runs) == 0 {
				continue
			}
			sum := summarize(runs)
			share := "-"
			if s.relay && n == targetAtLoad {
				floor[s.upstream] = sum.cpu
			}
			if s.gateway || s.relay {
				if d := results[runKey{n, s.upstream + " direct"}]; len(d) > 0 {
					ds := summarize(d)
					if ds.perSecond > 0 {
						v := sum.perSecond / ds.perSecond
						share = fmt.Sprintf("%.0f%%", 100*v)
						if n == targetAtLoad && s.gateway {
							verdicts = append(verdicts, verdict{s.name(), s.upstream, v, sum.cpu, sum.errors})
						}
					}
				}
			}
			errs := strconv.Itoa(sum.errors)
			if sum.errors > 0 {
				errs += " (!)"
			}
			up := ""
			if b.up.pid != 0 {
				up = fmtDur(sum.up)
			}
			fmt.Printf("%-8d  %-28s  %9.0f  %9s  %9s  %9s  %9s  %9s  %9s  %9s  %6s\n", n, s.name(), sum.perSecond,
				fmtDur(sum.p50), fmtDur(sum.p99), fmtDur(sum.cpu), fmtDur(sum.pgCPU), fmtDur(sum.self), up, share, errs)
		}
	}
	if len(verdicts) == 0 {
		return
	}
	fmt.Printf("\ntargets at %d sessions: throughput at least %.0f%% of direct, toolgate CPU at most %s per call\n",
		targetAtLoad, 100*targetShare, fmtDur(targetCPU))
	for _, v := range verdicts {
		mark := func(ok bool) string {
			if ok {
				return "met"
			}
			return "MISSED"
		}
		note := ""
		if v.errs > 0 {
			note = fmt.Sprintf(" (runs had %d errors: not a valid measurement)", v.errs)
		}
		above := ""
		if f := floor[v.upstream]; f > 0 {
			above = fmt.Sprintf(" (%s above the bare relay's %s)", fmtDur(v.cpu-f), fmtDur(f))
		}
		fmt.Printf("  %-28s throughput %4.0f%% %-6s  CPU/call %8s %s%s%s\n", v.name, 100*v.share, mark(v.share >= targetShare),
			fmtDur(v.cpu), mark(v.cpu <= targetCPU), above, note)
	}
}

// checkPolicy shows toolgate evaluates the rules on every call: a deny
// rule put first stops a call_tool call to the HTTP API; it is removed
// again before the runs. It says what went wrong, or "".
func (b *bench) checkPolicy(ctx context.Context, store *db.Store) string {
	rules := &policy.Service{Store: store}
	at := policy.Place{OrgID: b.seed.orgID}
	deny, err := rules.Create(ctx, at, b.seed.userID, policy.Input{TargetType: policy.TargetEveryone,
		SelectorType: policy.SelectAll, Effect: policy.Deny, Note: "bench: policy check"})
	if err != nil {
		return "cannot add the check's deny rule: " + err.Error()
	}
	defer func() {
		if err := rules.Delete(context.WithoutCancel(ctx), at, b.seed.userID, deny.ID); err != nil {
			log.Printf("remove the check's deny rule: %v", err)
		}
	}()
	if _, err := rules.Move(ctx, at, b.seed.userID, deny.ID, "up"); err != nil {
		return "cannot move the check's deny rule first: " + err.Error()
	}
	tr := newTransport()
	defer tr.CloseIdleConnections()
	c, err := b.connect(ctx, scenario{"api-call", "OpenAPI", "/mcp call_tool", true, false}, tr)
	if err != nil {
		return err.Error()
	}
	defer c.close()
	// Replicas learn of rule changes by notification: allow it a moment.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.call(cctx)
		cancel()
		b.gatewayCalls++
		if err != nil && strings.Contains(err.Error(), "tool error") {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "a call went through despite an organization rule denying everything"
}

// policySummary counts the rules every call through toolgate is evaluated
// against.
func policySummary(ctx context.Context, store *db.Store, s seeded) string {
	org, err := store.Policies(ctx, s.orgID, nil)
	if err != nil {
		return "rules unknown: " + err.Error()
	}
	ws, err := store.Policies(ctx, s.orgID, &s.wsID)
	if err != nil {
		return "rules unknown: " + err.Error()
	}
	return fmt.Sprintf("on: %d organization rule(s), the first %q, and %d workspace rule(s)", len(org), org[0].Effect+" everything", len(ws))
}

// reportAudit compares the audit rows toolgate wrote with the calls sent
// through it.
func (b *bench) reportAudit(ctx context.Context, store *db.Store) {
	var rows int64
	err := store.Pool().QueryRow(context.WithoutCancel(ctx), `SELECT count(*) FROM tool_calls WHERE org_id = $1`, b.seed.orgID).Scan(&rows)
	switch {
	case err != nil:
		fmt.Printf("\naudit: cannot count tool_calls: %v\n", err)
	case rows == 0 && b.gatewayCalls > 0:
		fmt.Printf("\naudit: NO tool_calls rows for %d calls through toolgate: the audit recorder is not wired into `toolgate serve`\n", b.gatewayCalls)
	default:
		fmt.Printf("\naudit: %d tool_calls rows for %d calls through toolgate (warm-up and preflight included)\n", rows, b.gatewayCalls)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// loadAverage is the 1, 5 and 15 minute load averages of the machine.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return runtime.GOARCH
}

// The upstreams.

// upstreamCommand is the argument on which this program serves the
// upstreams alone, in a process of their own.
const upstreamCommand = "upstreams"

// upstreams serve the MCP upstream at /mcp and the HTTP API at /echo, on
// one server: in this process, or (pid set) in one of their own.
type upstreams struct {
	url   string
	pid   int
	close func()
}

// cpu is the upstreams' process's CPU time so far; 0 when they run here.
func (u *upstreams) cpu() time.Duration {
	if u.pid == 0 {
		return 0
	}
	own, _, _ := procTimes(u.pid)
	return own
}

// selfName names what this process's CPU covers.
func (b *bench) selfName() string {
	if b.up.pid == 0 {
		return "clients+upstreams"
	}
	return "clients"
}

func startUpstreams(separate, jsonAnswers bool) (*upstreams, error) {
	if !separate {
		srv := newUpstreams(jsonAnswers)
		return &upstreams{url: srv.URL, close: srv.Close}, nil
	}
	answers := "sse"
	if jsonAnswers {
		answers = "json"
	}
	pid, url, stop, err := startSelf("the upstreams' process", upstreamCommand, answers)
	if err != nil {
		return nil, err
	}
	return &upstreams{url: url, pid: pid, close: stop}, nil
}

// startSelf starts this program with args, in a process of its own that
// ends with this one, and returns the line it prints first: where it
// serves. stop ends it.
func startSelf(what string, args ...string) (pid int, line string, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, "", nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return 0, "", nil, fmt.Errorf("start %s: %w", what, err)
	}
	line, err = bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, "", nil, fmt.Errorf("%s did not say where it serves: %w", what, err)
	}
	fmt.Printf("%s: pid %d at %s", what, cmd.Process.Pid, line)
	return cmd.Process.Pid, strings.TrimSpace(line), func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}, nil
}

// serveUpstreams serves the upstreams until SIGTERM, after printing their URL.
func serveUpstreams(jsonAnswers bool) {
	srv := newUpstreams(jsonAnswers)
	fmt.Println(srv.URL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	srv.Close()
}

// newUpstreams serves both upstreams on one loopback server.
func newUpstreams(jsonAnswers bool) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/mcp", newMCPUpstream(jsonAnswers))
	mux.HandleFunc("GET /echo", echoAPI)
	return httptest.NewServer(mux)
}

// newMCPUpstream is a go-sdk MCP server over Streamable HTTP with one
// tool, echo, that returns its text. It answers a call with an event
// stream, the SDK's default, whose end comes after the response as a
// write of its own; with jsonAnswers, with one JSON body.
func newMCPUpstream(jsonAnswers bool) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench-echo", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text" jsonschema:"the text to send back"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{JSONResponse: jsonAnswers})
}

// echoSpec describes the HTTP API; %s is its URL.
const echoSpec = `{"openapi": "3.0.3", "info": {"title": "Echo", "version": "1"},
	"servers": [{"url": %q}],
	"paths": {"/echo": {"get": {"operationId": "echo", "summary": "Send the text back",
		"parameters": [{"name": "text", "in": "query", "required": true, "schema": {"type": "string"}}],
		"responses": {"200": {"description": "the text", "content": {"application/json": {"schema": {
			"type": "object", "properties": {"text": {"type": "string"}}}}}}}}}}}`

// echoAPI is the HTTP API: GET /echo?text=... answers {"text": ...}.
func echoAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"text": r.URL.Query().Get("text")})
}

// The tenant.

// seeded is what seedTenant made.
type seeded struct {
	orgID       int64
	wsID        int64
	userID      int64
	key         string
	mcpSourceID string
	apiSourceID string
}

// seedTenant creates an account with its organization and Default
// workspace, a search-mode workspace API key, the organization rule "allow
// every call" (so policy is evaluated on every call and no call is held for
// approval: the MCP echo tool's default is to require it), and the two
// sources, whose refreshes wait in the queue for toolgate's worker.
func seedTenant(ctx context.Context, store *db.Store, mcpURL, apiURL string) (seeded, error) {
	ten := &tenancy.Service{Store: store, Signup: tenancy.SignupClosed}
	user, org, err := ten.CreateAccount(ctx, "bench@toolgate.test", "Bench", "bench-"+randomHex(12), "Bench")
	if err != nil {
		return seeded{}, fmt.Errorf("create the account: %w", err)
	}
	ws, err := store.WorkspaceBySlug(ctx, org.ID, "default")
	if err != nil {
		return seeded{}, err
	}
	_, key, err := ten.CreateAPIKey(ctx, ws, user, auth.Owner, tenancy.APIKeyInput{Name: "bench agent", Mode: tenancy.ModeSearch})
	if err != nil {
		return seeded{}, fmt.Errorf("create the API key: %w", err)
	}
	rules := &policy.Service{Store: store}
	if _, err := rules.Create(ctx, policy.Place{OrgID: org.ID}, user.ID, policy.Input{TargetType: policy.TargetEveryone,
		SelectorType: policy.SelectAll, Effect: policy.Allow, Note: "bench: allow every call"}); err != nil {
		return seeded{}, fmt.Errorf("create the policy rule: %w", err)
	}
	q, err := worker.NewQueue(store)
	if err != nil {
		return seeded{}, err
	}
	svc := &sources.Service{Store: store, Refresher: q}
	mcpCfg, _ := json.Marshal(sources.MCPConfig{Transport: sources.TransportStreamableHTTP, URL: mcpURL})
	mcpSrc, err := svc.Create(ctx, org.ID, &ws.ID, sources.Input{Name: "Echo MCP", Type: sources.TypeMCP,
		Scope: sources.ScopeWorkspace, Config: mcpCfg, ActorID: user.ID})
	if err != nil {
		return seeded{}, fmt.Errorf("create the MCP source: %w", err)
	}
	apiCfg, _ := json.Marshal(map[string]json.RawMessage{"spec": json.RawMessage(fmt.Sprintf(echoSpec, apiURL))})
	apiSrc, err := svc.Create(ctx, org.ID, &ws.ID, sources.Input{Name: "Echo API", Type: sources.TypeOpenAPI,
		Scope: sources.ScopeWorkspace, Config: apiCfg, ActorID: user.ID})
	if err != nil {
		return seeded{}, fmt.Errorf("create the OpenAPI source: %w", err)
	}
	return seeded{orgID: org.ID, wsID: ws.ID, userID: user.ID, key: key, mcpSourceID: mcpSrc.ID, apiSourceID: apiSrc.ID}, nil
}

// waitSources waits until toolgate's worker has discovered and indexed both
// sources, and returns each one's tool path.
func waitSources(ctx context.Context, store *db.Store, s seeded, limit time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(limit)
	tools := map[string]string{}
	for upstream, id := range map[string]string{"MCP": s.mcpSourceID, "OpenAPI": s.apiSourceID} {
		for {
			src, err := store.Source(ctx, s.orgID, id)
			if err != nil {
				return nil, err
			}
			if src.State == "failed" {
				return nil, fmt.Errorf("%s source %s failed discovery: %s", upstream, id, src.Error)
			}
			if src.State == "ready" && src.ToolCount > 0 && src.IndexedGeneration == src.Generation {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s source %s not ready after %s: state %s %s", upstream, id, limit, src.State, src.Error)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		all, err := store.AllTools(ctx, s.orgID, id)
		if err != nil {
			return nil, err
		}
		if len(all) != 1 {
			return nil, fmt.Errorf("%s source %s has %d tools, want the one echo tool", upstream, id, len(all))
		}
		tools[upstream] = all[0].Path
		fmt.Printf("%s upstream: tool %s (direct mode name %s)\n", upstream, all[0].Path, mcpserver.ToolName(all[0].Path))
	}
	return tools, nil
}

// The toolgate process.

type toolgate struct {
	cmd *exec.Cmd
	url string
	// pprof is its profiles' base URL when -pprof asked for them.
	pprof   string
	log     string
	done    chan struct{}
	err     error // the process's exit, once done is closed
	once    sync.Once
	stopErr error
}

// startToolgate runs `toolgate serve` on a free loopback port.
func startToolgate(ctx context.Context, bin, tmp, databaseURL, meiliURL, meiliKey, index string, env []string, profiles bool) (*toolgate, error) {
	key, err := secrets.NewKeyEntry()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(tmp, "toolgate.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := []string{"serve"}
	pprofURL := ""
	if profiles {
		pprofAddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args = append(args, "--pprof", pprofAddr)
		pprofURL = "http://" + pprofAddr + "/debug/pprof"
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + tmp,
		"DATABASE_URL=" + databaseURL,
		"MEILI_URL=" + meiliURL,
		"MEILI_MASTER_KEY=" + meiliKey,
		"TOOLGATE_MEILI_INDEX=" + index,
		"TOOLGATE_SECRET_KEYS=" + key,
		"TOOLGATE_ALLOW_PRIVATE_NETWORKS=true",
		"TOOLGATE_ADDR=" + addr,
		"TOOLGATE_DATA_DIR=" + filepath.Join(tmp, "data"),
		"TOOLGATE_LOG_LEVEL=warn",
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start toolgate: %w", err)
	}
	tg := &toolgate{cmd: cmd, url: "http://" + addr, pprof: pprofURL, log: logPath, done: make(chan struct{})}
	go func() {
		tg.err = cmd.Wait()
		close(tg.done)
	}()
	fmt.Printf("toolgate serve: pid %d at %s\n", cmd.Process.Pid, tg.url)
	return tg, nil
}

// freeAddr is a loopback address with a port nobody listens on.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (t *toolgate) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// waitReady polls /readyz until toolgate answers 200.
func (t *toolgate) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if t.exited() {
			return fmt.Errorf("toolgate exited at start (%v):\n%s", t.err, t.logTail(30))
		}
		resp, err := http.Get(t.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("toolgate not ready after %s:\n%s", limit, t.logTail(30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cpu is the process's user and system time so far, all threads included.
func (t *toolgate) cpu() time.Duration {
	own, _, _ := procTimes(t.cmd.Process.Pid)
	return own
}

// procTimes reads /proc/<pid>/stat: the process's user+system time, that of
// its waited-for children, and its parent's pid.
func procTimes(pid int) (own, children time.Duration, ppid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0
	}
	// The fields after the command name, which may hold spaces, start at
	// field 3 (state): ppid is field 4, utime, stime, cutime and cstime
	// fields 14 to 17.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, 0
	}
	tick := func(s string) time.Duration {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Second / userHZ
	}
	ppid, _ = strconv.Atoi(f[1])
	return tick(f[11]) + tick(f[12]), tick(f[13]) + tick(f[14]), ppid
}

// selfCPU is this process's user and system time so far.
func selfCPU() time.Duration {
	own, _, _ := procTimes(os.Getpid())
	return own
}

// postgres is the PostgreSQL cluster the benchmark's database lives in,
// by its postmaster's pid; 0 when it is not a process on this machine.
type postgres int

// clusterOf finds the postmaster: the parent of a backend serving store.
func clusterOf(ctx context.Context, store *db.Store) postgres {
	var backend int
	if err := store.Pool().QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	if _, _, ppid := procTimes(backend); ppid > 1 {
		return postgres(ppid)
	}
	return 0
}

func (p postgres) String() string {
	if p == 0 {
		return "not on this machine: not measured"
	}
	return fmt.Sprintf("postmaster pid %d, all its processes", int(p))
}

// cpu is the cluster's user and system time so far: the postmaster's, its
// exited backends' and its live ones'.
func (p postgres) cpu() time.Duration {
	if p == 0 {
		return 0
	}
	own, children, _ := procTimes(int(p))
	total := own + children
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if own, _, ppid := procTimes(pid); ppid == int(p) {
			total += own
		}
	}
	return total
}

// stop sends SIGTERM and waits for a clean exit; past the limit it kills.
func (t *toolgate) stop() error {
	t.once.Do(func() {
		if t.exited() {
			t.stopErr = fmt.Errorf("toolgate had exited before the end (%v)", t.err)
			return
		}
		start := time.Now()
		_ = t.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-t.done:
			if t.err != nil {
				t.stopErr = fmt.Errorf("toolgate did not exit cleanly on SIGTERM: %v\n%s", t.err, t.logTail(30))
				return
			}
			fmt.Printf("toolgate stopped cleanly on SIGTERM in %s\n", time.Since(start).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			_ = t.cmd.Process.Kill()
			<-t.done
			t.stopErr = fmt.Errorf("toolgate did not exit within 30s of SIGTERM; killed\n%s", t.logTail(30))
		}
	})
	return t.stopErr
}

// reportLog prints what toolgate logged (warnings and errors), each
// distinct message once with its count.
func (t *toolgate) reportLog() {
	f, err := os.Open(t.log)
	if err != nil {
		return
	}
	defer f.Close()
	counts := map[string]int{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil {
			delete(entry, "time")
			b, _ := json.Marshal(entry)
			line = string(b)
		}
		if counts[line] == 0 {
			order = append(order, line)
		}
		counts[line]++
	}
	if len(order) == 0 {
		return
	}
	fmt.Printf("toolgate logged %d distinct lines:\n", len(order))
	for i, line := range order {
		if i == 20 {
			fmt.Printf("  ... and %d more\n", len(order)-20)
			break
		}
		fmt.Printf("  %6dx %.400s\n", counts[line], line)
	}
}

func (t *toolgate) logTail(n int) string {
	f, err := os.Open(t.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
