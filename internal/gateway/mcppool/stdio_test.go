package mcppool_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestStdioEchoConcurrentOneProcess(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	cfg := everything(t)
	key := keyOf("src_echo", cfg, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("hello %d", i)
			res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": msg}, nil)
			if err != nil {
				errs <- err
				return
			}
			if got := text(t, res); got != "Echo: "+msg || res.IsError {
				errs <- fmt.Errorf("call %d: got %q (isError %v)", i, got, res.IsError)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := p.Stats(); st.Stdio != 1 || st.Sessions != 1 {
		t.Errorf("Stats = %+v, want one session with one process", st)
	}
}

func TestStdioProgressRelayed(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	cfg := everything(t)
	type step struct{ progress, total float64 }
	var (
		mu    sync.Mutex
		steps []step
	)
	res, err := p.Call(t.Context(), keyOf("src_progress", cfg, nil), cfg, nil, "trigger-long-running-operation",
		map[string]any{"duration": 0.5, "steps": 5}, func(progress, total float64, _ string) {
			mu.Lock()
			steps = append(steps, step{progress, total})
			mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, res), "Long running operation completed") {
		t.Errorf("result %q", text(t, res))
	}
	mu.Lock()
	defer mu.Unlock()
	// The server sends step 5 just before its result, and the SDK hands
	// notifications to their handler on another goroutine than responses:
	// the last step may come after the call returned, when nobody waits for
	// it. Every earlier step arrives, in order.
	if len(steps) < 4 || len(steps) > 5 {
		t.Fatalf("progress = %v, want steps 1 to 4 or 5 of 5", steps)
	}
	for i, s := range steps {
		if s.progress != float64(i+1) || s.total != 5 {
			t.Errorf("step %d = %+v", i, s)
		}
	}
}

// tinyImage reads the PNG server-everything serves from its source.
func tinyImage(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(testenv.PeerPath(t, "@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`MCP_TINY_IMAGE = "([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no MCP_TINY_IMAGE in get-tiny-image.js")
	}
	b, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStdioContentPassesThrough(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	cfg := everything(t)
	key := keyOf("src_content", cfg, nil)

	res, err := p.Call(t.Context(), key, cfg, nil, "get-tiny-image", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" || string(img.Data) != string(tinyImage(t)) {
		t.Errorf("image content = %+v", res.Content)
	}

	res, err = p.Call(t.Context(), key, cfg, nil, "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var emb *mcp.EmbeddedResource
	for _, c := range res.Content {
		if e, ok := c.(*mcp.EmbeddedResource); ok {
			emb = e
		}
	}
	if emb == nil || emb.Resource == nil || !strings.Contains(emb.Resource.URI, "2") || emb.Resource.Text == "" {
		t.Errorf("embedded resource = %+v in %+v (isError %v: %s)", emb, res.Content, res.IsError, text(t, res))
	}
}

func TestStdioReconnectsAfterKill(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	cfg := everything(t)
	key := keyOf("src_kill", cfg, nil)
	if _, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	before := p.Stats().PIDs
	if len(before) != 1 {
		t.Fatalf("PIDs = %v", before)
	}
	if err := syscall.Kill(before[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "b"}, nil)
	if err != nil {
		t.Fatalf("call after kill: %v", err)
	}
	if text(t, res) != "Echo: b" {
		t.Errorf("got %q", text(t, res))
	}
	after := p.Stats().PIDs
	if len(after) != 1 || after[0] == before[0] {
		t.Errorf("PIDs before %v, after %v", before, after)
	}
	if !eventually(5*time.Second, func() bool { return !running(before[0]) }) {
		t.Errorf("killed process %d still listed as running", before[0])
	}
}

func TestStdioKilledMidCallReconnects(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	cfg := everything(t)
	key := keyOf("src_midcall", cfg, nil)
	if _, err := p.Call(t.Context(), key, cfg, nil, "echo", map[string]any{"message": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	pid := p.Stats().PIDs[0]
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}()
	// The first attempt dies with its process; the retry on a new one
	// completes.
	res, err := p.Call(t.Context(), key, cfg, nil, "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, res), "completed") {
		t.Errorf("got %q", text(t, res))
	}
}

func TestStdioCrashAtOnceFailsAfterOneRetry(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	log := filepath.Join(t.TempDir(), "starts")
	cfg := &sources.MCPConfig{Transport: sources.TransportStdio, Command: "sh",
		Args: []string{"-c", `echo start >> "$LOG"; echo "fatal: no config" >&2; exit 3`},
		Env:  map[string]string{"LOG": log}}
	start := time.Now()
	_, err := p.Call(t.Context(), keyOf("src_crash", cfg, nil), cfg, nil, "echo", nil, nil)
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("error after %s: %v", time.Since(start).Round(time.Millisecond), err)
	for _, want := range []string{"src_crash", "exit status 3", "fatal: no config", "reconnected once"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "start"); n != 2 {
		t.Errorf("started %d times, want 2", n)
	}
	if st := p.Stats(); st.Sessions != 0 || st.Stdio != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestStdioIdleProcessStopped(t *testing.T) {
	p := newPool(t, mcppool.Options{IdleTimeout: 200 * time.Millisecond})
	cfg := everything(t)
	if _, err := p.Call(t.Context(), keyOf("src_idle", cfg, nil), cfg, nil, "echo", map[string]any{"message": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	pid := p.Stats().PIDs[0]
	if !eventually(10*time.Second, func() bool { return p.Stats().Stdio == 0 && !running(pid) }) {
		t.Fatalf("after the idle timeout: Stats %+v, pid %d running %v", p.Stats(), pid, running(pid))
	}
}

func TestStdioCeilingWaitsForSlot(t *testing.T) {
	p := newPool(t, mcppool.Options{MaxStdio: 1})
	cfg := everything(t)
	keyA, keyB := keyOf("src_a", cfg, nil), keyOf("src_b", cfg, nil)
	longDone := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), keyA, cfg, nil, "trigger-long-running-operation", map[string]any{"duration": 1.5, "steps": 3}, nil)
		longDone <- err
	}()
	if !eventually(10*time.Second, func() bool { return p.Stats().Stdio == 1 }) {
		t.Fatal("the first process did not start")
	}
	time.Sleep(200 * time.Millisecond) // the long call is in flight
	start := time.Now()
	res, err := p.Call(t.Context(), keyB, cfg, nil, "echo", map[string]any{"message": "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if err := <-longDone; err != nil {
		t.Fatalf("long call: %v", err)
	}
	if text(t, res) != "Echo: b" {
		t.Errorf("got %q", text(t, res))
	}
	if waited < 700*time.Millisecond {
		t.Errorf("the second key got a process after %s, while the first was busy", waited)
	}
	if st := p.Stats(); st.Stdio != 1 {
		t.Errorf("Stats = %+v, want one process", st)
	}
}

func TestStdioCeilingTimesOut(t *testing.T) {
	p := newPool(t, mcppool.Options{MaxStdio: 1, ConnectTimeout: 2 * time.Second})
	cfg := everything(t)
	go func() {
		_, _ = p.Call(t.Context(), keyOf("src_a", cfg, nil), cfg, nil, "trigger-long-running-operation", map[string]any{"duration": 6, "steps": 2}, nil)
	}()
	if !eventually(10*time.Second, func() bool { return p.Stats().Stdio == 1 }) {
		t.Fatal("the first process did not start")
	}
	time.Sleep(200 * time.Millisecond)
	_, err := p.Call(t.Context(), keyOf("src_b", cfg, nil), cfg, nil, "echo", map[string]any{"message": "b"}, nil)
	if err == nil || !strings.Contains(err.Error(), "all 1 stdio processes stayed busy") || !strings.Contains(err.Error(), "within 2s") {
		t.Fatalf("err = %v", err)
	}
}

func TestChangedConfigOrCredentialReplacesSession(t *testing.T) {
	p := newPool(t, mcppool.Options{})
	cfg := everything(t)
	auth1 := &sources.Auth{}
	auth1.SetEnv("TOKEN", "one")
	k1 := mcppool.NewKey("src_x", "cred_1", 1, cfg, auth1)
	if _, err := p.Call(t.Context(), k1, cfg, auth1, "echo", map[string]any{"message": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	pid1 := p.Stats().PIDs[0]
	if strings.Contains(fmt.Sprint(k1), "one") {
		t.Errorf("key %v holds the secret", k1)
	}
	auth2 := &sources.Auth{}
	auth2.SetEnv("TOKEN", "two")
	k2 := mcppool.NewKey("src_x", "cred_1", 1, cfg, auth2)
	if k1 == k2 {
		t.Fatal("a rotated credential has the same key")
	}
	if _, err := p.Call(t.Context(), k2, cfg, auth2, "echo", map[string]any{"message": "b"}, nil); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return !running(pid1) }) {
		t.Errorf("the session of the rotated credential still runs")
	}
	k3 := mcppool.NewKey("src_x", "cred_1", 2, cfg, auth2)
	if _, err := p.Call(t.Context(), k3, cfg, auth2, "echo", map[string]any{"message": "c"}, nil); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return p.Stats().Stdio == 1 }) {
		t.Errorf("Stats = %+v, want the new config's session alone", p.Stats())
	}
}

func TestCloseLeavesNoProcessOrGoroutine(t *testing.T) {
	cfg := everything(t)
	// Warm-up: the spawner goroutine lives as long as the binary.
	warm := newPool(t, mcppool.Options{})
	if _, err := warm.Call(t.Context(), keyOf("src_warm", cfg, nil), cfg, nil, "echo", map[string]any{"message": "w"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := warm.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(5*time.Second, func() bool { return len(children()) == 0 })
	before := runtime.NumGoroutine()

	p := mcppool.New(mcppool.Options{})
	for _, id := range []string{"src_1", "src_2", "src_3"} {
		if _, err := p.Call(t.Context(), keyOf(id, cfg, nil), cfg, nil, "echo", map[string]any{"message": id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Stdio != 3 {
		t.Fatalf("Stats = %+v", st)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := children(); len(left) > 0 {
		t.Errorf("child processes left after Close: %v", left)
	}
	if !eventually(5*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
	if _, err := p.Call(t.Context(), keyOf("src_1", cfg, nil), cfg, nil, "echo", nil, nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("call after Close: %v", err)
	}
}
