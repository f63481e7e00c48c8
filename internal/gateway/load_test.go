package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// loadEnv has an OpenAPI source over itemsAPI and an MCP source over an
// in-test streamable HTTP server, both with credentials.
func loadEnv(t testing.TB) (*env, *itemsAPI, *mcpHTTP) {
	t.Helper()
	e, api, _ := itemsEnv(t)
	m := newMCPHTTP(t)
	src := e.source(e.a, &e.a.ws, "Remote", sources.TypeMCP, map[string]any{"transport": "streamable-http", "url": m.URL})
	e.credential(e.a, &e.a.ws, e.a.owner, src, credentials.ScopeWorkspace, credentials.Auth{Type: credentials.TypeBearer}, credentials.Secret{Value: mcpToken})
	return e, api, m
}

// A thousand concurrent calls on this machine's two cores all succeed,
// and closing the gateway leaves no goroutine behind.
func TestThousandConcurrentCalls(t *testing.T) {
	e, api, m := loadEnv(t)
	e.closeGateway() // this test runs its own
	processes := children()
	e.source(e.a, &e.a.ws, "Everything", sources.TypeMCP, map[string]any{"transport": "stdio",
		"command": testenv.PeerBin(t, "mcp-server-everything"), "args": []string{"stdio"}})
	rec := &recorder{}
	opts := e.opts
	opts.Recorder = rec
	// Every tool is allowed here: no call is held, and the approvals
	// service's LISTEN connection must not count against the gateway.
	e.held.Close()
	opts.Approvals = nil

	runtime.GC()
	baseline := goroutines()
	gw := gateway.New(opts)
	c := e.a.caller()
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			path, args, want := "items.get_item", fmt.Sprintf(`{"id": %d}`, i+1), fmt.Sprintf(`"name": "item %d"`, i+1)
			switch i % 3 {
			case 1:
				path, args, want = "remote.echo", fmt.Sprintf(`{"message": "m%d"}`, i), fmt.Sprintf("Echo: m%d", i)
			case 2:
				path, args, want = "everything.echo", fmt.Sprintf(`{"message": "s%d"}`, i), fmt.Sprintf("Echo: s%d", i)
			}
			res, err := gw.Call(context.Background(), c, path, []byte(args), nil)
			switch {
			case err != nil:
				errs <- fmt.Errorf("call %d: %w", i, err)
			case res.IsError || !strings.Contains(text(res), want):
				errs <- fmt.Errorf("call %d: %s", i, text(res))
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls failed", failed, n)
	}
	rows := rec.all()
	if len(rows) != n {
		t.Errorf("%d audit rows for %d calls", len(rows), n)
	}
	for _, r := range rows {
		if r.Outcome != audit.OutcomeOK {
			t.Errorf("audit row %+v", r)
			break
		}
	}
	if got := len(api.requests()); got != (n+2)/3 {
		t.Errorf("the OpenAPI upstream saw %d requests, want %d", got, (n+2)/3)
	}
	if got := m.calls.Load(); got != (n+1)/3 {
		t.Errorf("the MCP upstream ran %d calls, want %d", got, (n+1)/3)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := gw.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return len(goroutines()) <= len(baseline) }) {
		after := goroutines()
		t.Errorf("%d goroutines after Close, %d before New; new since New:\n%s",
			len(after), len(baseline), strings.Join(newGoroutines(baseline, after), "\n\n"))
	}
	if !eventually(10*time.Second, func() bool { return len(children()) <= len(processes) }) {
		t.Errorf("processes left after Close: %q (before: %q)", children(), processes)
	}
}

// BenchmarkCall measures a call through the gateway (credential, policy
// step and audit on) against the same call made directly, for an OpenAPI
// upstream and an MCP upstream on loopback. The parallel runs use 32
// goroutines on this machine's two cores, as 32 agent sessions would;
// compare gateway and direct ns/op for the throughput ratio.
func BenchmarkCall(b *testing.B) {
	e, api, m := loadEnv(b)
	e.gw.Close(context.Background())
	opts := e.opts
	opts.Recorder = discard{}
	opts.Logger = nil
	gw := gateway.New(opts)
	b.Cleanup(func() { gw.Close(context.Background()) })
	c := e.a.caller()
	ctx := context.Background()
	parallelism := max(1, 32/runtime.GOMAXPROCS(0))

	viaGateway := func(path, args string) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(parallelism)
			defer cpuPerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := gw.Call(ctx, c, path, []byte(args), nil)
					if err != nil || res.IsError {
						b.Fatalf("%v %s", err, text(res))
					}
				}
			})
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	b.Run("openapi/direct", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(parallelism)
		defer cpuPerOp(b)()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/items/7?verbose=true", nil)
				req.Header.Set("X-Api-Key", itemsKey)
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	})
	b.Run("openapi/gateway", viaGateway("items.get_item", `{"id": 7, "verbose": true}`))

	session, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: m.URL, HTTPClient: client, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { session.Close() })
	b.Run("mcp/direct", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(parallelism)
		defer cpuPerOp(b)()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("mcp/gateway", viaGateway("remote.echo", `{"message": "hi"}`))
}

// cpuPerOp reports this process's CPU time (user and system) per op as
// cpu-ns/op: the in-process clients and upstreams count in both the direct
// and the gateway runs, so their difference is the gateway's own CPU per
// call (PostgreSQL, another process, apart).
func cpuPerOp(b *testing.B) func() {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discard is a Recorder that keeps nothing, as a non-blocking one costs.
type discard struct{}

func (discard) Record(audit.Call) {}

// goroutines lists the stacks of the goroutines the gateway could have
// left behind, each without its goroutine header. Two kinds never count:
//   - the stdio spawner's: it starts with the first stdio server (whenever
//     that is in the test run) and lives as long as the process by design;
//   - pgx's background readers: a connection of the test database's pool
//     (not the gateway's: it outlives every gateway) starts one when a
//     write is slow, as under a loaded CI run, and it stays parked on the
//     idle connection until the pool next uses it.
func goroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var stacks []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/stdioserver.spawn") || strings.Contains(g, "pgconn/internal/bgreader") {
			continue
		}
		_, stack, _ := strings.Cut(g, "\n")
		stacks = append(stacks, stack)
	}
	return stacks
}

// newGoroutines is after less baseline, by each stack's functions (the
// argument values and offsets differ from one goroutine to the next).
func newGoroutines(baseline, after []string) []string {
	seen := map[string]int{}
	for _, s := range baseline {
		seen[frames(s)]++
	}
	var fresh []string
	for _, s := range after {
		if k := frames(s); seen[k] > 0 {
			seen[k]--
		} else {
			fresh = append(fresh, s)
		}
	}
	return fresh
}

// frames is a stack's function lines.
func frames(stack string) string {
	var fns []string
	for _, line := range strings.Split(stack, "\n") {
		if line != "" && !strings.HasPrefix(line, "\t") {
			fn, _, _ := strings.Cut(line, "(0x")
			fn, _, _ = strings.Cut(fn, " in goroutine ")
			fns = append(fns, fn)
		}
	}
	return strings.Join(fns, "\n")
}
