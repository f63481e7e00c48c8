package mcp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/mcp"
)

// helper is the test MCP server built from testdata/helper.
var helper struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	if path := os.Getenv(asToolgateVar); path != "" {
		actAsToolgate(path)
		return
	}
	code := m.Run()
	if helper.dir != "" {
		_ = os.RemoveAll(helper.dir)
	}
	os.Exit(code)
}

// asToolgateVar makes the test binary play toolgate: it runs Discover on the
// configuration in the named JSON file and waits, so a test can kill it.
const asToolgateVar = "TOOLGATE_MCP_TEST_AS_TOOLGATE"

func actAsToolgate(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var cfg sources.MCPConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		panic(err)
	}
	_, err = mcp.Discover(context.Background(), &cfg, mcp.Options{InitTimeout: time.Hour, Timeout: time.Hour})
	fmt.Fprintln(os.Stderr, "discover returned:", err)
	os.Exit(1)
}

// helperBin builds the helper server once per test binary.
func helperBin(t *testing.T) string {
	t.Helper()
	helper.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			helper.err = fmt.Errorf("the go command is needed to build the test server: %w", err)
			return
		}
		helper.dir, helper.err = os.MkdirTemp("", "toolgate-mcp-helper-")
		if helper.err != nil {
			return
		}
		helper.bin = filepath.Join(helper.dir, "helper")
		cmd := exec.Command(goBin, "build", "-o", helper.bin, "./testdata/helper")
		if out, err := cmd.CombinedOutput(); err != nil {
			helper.err = fmt.Errorf("go build ./testdata/helper: %v\n%s", err, out)
		}
	})
	if helper.err != nil {
		t.Fatal(helper.err)
	}
	return helper.bin
}

// markerVar is set, with a value unique to the test, in the environment of
// every process a test starts; its descendants inherit it.
const markerVar = "TOOLGATE_TEST_MARKER"

func newMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "mcp-test-" + hex.EncodeToString(b)
}

// leftovers lists the running processes whose environment or command line
// holds marker.
func leftovers(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue // a zombie has ended
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(environ, []byte(marker)) || bytes.Contains(cmdline, []byte(marker)) {
			out = append(out, fmt.Sprintf("pid %d: %s [%s]", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), stat))
		}
	}
	return out
}

// assertNoLeftovers fails when a process started under marker still runs.
func assertNoLeftovers(t *testing.T, marker string) {
	t.Helper()
	if left := leftovers(marker); len(left) > 0 {
		t.Errorf("processes survived Discover:\n%s", strings.Join(left, "\n"))
	}
}

// discover runs Discover and checks that no process it started survived.
func discover(t *testing.T, ctx context.Context, cfg *sources.MCPConfig, opts mcp.Options) (*sources.Discovery, error, time.Duration) {
	t.Helper()
	marker := newMarker(t)
	if cfg.Transport == sources.TransportStdio {
		env := map[string]string{markerVar: marker}
		for k, v := range cfg.Env {
			env[k] = v
		}
		cfg.Env = env
	}
	start := time.Now()
	d, err := mcp.Discover(ctx, cfg, opts)
	elapsed := time.Since(start)
	assertNoLeftovers(t, marker)
	t.Logf("Discover took %s", elapsed.Round(time.Millisecond))
	return d, err, elapsed
}

func toolNames(d *sources.Discovery) []string {
	var names []string
	for _, tool := range d.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func toolByName(t *testing.T, d *sources.Discovery, name string) sources.Tool {
	t.Helper()
	for _, tool := range d.Tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %q among %v", name, toolNames(d))
	return sources.Tool{}
}

func ptr[T any](v T) *T { return &v }
