package mcppool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway/mcppool"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

func everything(t testing.TB) *sources.MCPConfig {
	t.Helper()
	return &sources.MCPConfig{Transport: sources.TransportStdio, Command: testenv.PeerBin(t, "mcp-server-everything"), Args: []string{"stdio"}}
}

func newPool(t testing.TB, opts mcppool.Options) *mcppool.Pool {
	t.Helper()
	if opts.HTTPClient == nil {
		client := netguard.NewClient(netguard.Options{AllowPrivate: true})
		opts.HTTPClient = func() *http.Client { return client }
	}
	p := mcppool.New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return p
}

func keyOf(id string, cfg *sources.MCPConfig, auth *sources.Auth) mcppool.Key {
	return mcppool.NewKey(id, "", 1, cfg, auth)
}

// text returns the text of a result's only text content.
func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// children lists the running child processes of the test binary.
func children() []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			out = append(out, strconv.Itoa(pid)+" "+string(stat[:i+1]))
		}
	}
	return out
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// sameResult compares results as an agent sees them: structured content
// the lean path keeps as sent (json.RawMessage) against what the SDK
// decodes it to.
var sameResult = cmp.Options{
	cmp.AllowUnexported(mcp.CallToolResult{}),
	cmp.FilterPath(func(p cmp.Path) bool {
		f, ok := p.Last().(cmp.StructField)
		return ok && f.Name() == "StructuredContent"
	}, cmp.Transformer("decoded", func(v any) any {
		raw, ok := v.(json.RawMessage)
		if !ok {
			return v
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			return string(raw)
		}
		return out
	})),
}
