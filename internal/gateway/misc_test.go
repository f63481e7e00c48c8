package gateway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/audit"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/testenv"
)

// Without TOOLGATE_ALLOW_PRIVATE_NETWORKS a call to a loopback upstream is
// refused before it connects, and says how to allow it.
func TestPrivateUpstreamRefused(t *testing.T) {
	e := newEnv(t, func(o *gateway.Options) { o.AllowPrivateNetworks = false })
	api := newItemsAPI(t)
	m := newMCPHTTP(t)
	e.source(e.a, &e.a.ws, "Items", sources.TypeOpenAPI, openAPIConfig(itemsSpec, api.URL))
	e.source(e.a, &e.a.ws, "Remote", sources.TypeMCP, map[string]any{"transport": "streamable-http", "url": m.URL})
	for path, args := range map[string]string{"items.get_item": `{"id": 1}`, "remote.echo": `{"message": "x"}`} {
		res := e.call(e.a.caller(), path, args)
		if !res.IsError || !strings.Contains(text(res), "TOOLGATE_ALLOW_PRIVATE_NETWORKS") {
			t.Errorf("%s: isError %v, %s", path, res.IsError, text(res))
		}
		if row := e.rec.last(t); row.Outcome != audit.OutcomeError {
			t.Errorf("%s: audit row %+v", path, row)
		}
	}
	if len(api.requests()) != 0 || m.calls.Load() != 0 {
		t.Errorf("refused upstreams were reached: %q, %d MCP calls", api.requests(), m.calls.Load())
	}
}

// Toolgate's own failures are errors, not results, and are still audited.
func TestDatabaseDownIsAnError(t *testing.T) {
	e, api, ns := itemsEnv(t)
	e.store.Close()
	_, err := e.gw.Call(t.Context(), e.a.caller(), ns+"getItem", json.RawMessage(`{"id": 1}`), nil)
	var nf *gateway.NotFoundError
	var inv *gateway.InvalidArgumentsError
	if err == nil || errors.As(err, &nf) || errors.As(err, &inv) {
		t.Fatalf("err = %v", err)
	}
	if row := e.rec.last(t); row.Outcome != audit.OutcomeError || row.Error == "" {
		t.Errorf("audit row %+v", row)
	}
	if len(api.requests()) != 0 {
		t.Errorf("the upstream saw %q", api.requests())
	}
	if _, err := e.gw.RegistryVersion(t.Context(), e.a.org.ID, e.a.ws.ID); err == nil {
		t.Error("RegistryVersion without a database")
	}
}

func TestSearchLimits(t *testing.T) {
	e := newEnv(t)
	spec := mustRead(t, testenv.PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json"))
	src := e.source(e.a, &e.a.ws, "Petstore", sources.TypeOpenAPI, openAPIConfig(spec, "http://127.0.0.1:9"))
	c := e.a.caller()
	for _, tc := range []struct{ limit, want int }{{0, 10}, {-3, 10}, {2, 2}, {1000, 20}} {
		hits, err := e.gw.Search(t.Context(), c, "", tc.limit, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != tc.want {
			t.Errorf("limit %d: %d hits, want %d", tc.limit, len(hits), tc.want)
		}
	}
	hits, err := e.gw.Search(t.Context(), c, "order", 5, src.ID)
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Path, "order") {
		t.Errorf("order: %+v, %v", hits, err)
	}
	if hits, _ := e.gw.Search(t.Context(), c, "order", 5, "src_nope"); len(hits) != 0 {
		t.Errorf("another source id found %+v", hits)
	}
}

func TestMCPTimeoutSettings(t *testing.T) {
	cases := []struct {
		cfg  string
		bad  string
		want string
	}{
		{`{"transport": "streamable-http", "url": "https://mcp.example.com/mcp", "connectTimeoutSeconds": 5, "callTimeoutSeconds": 600}`, "", ""},
		{`{"transport": "streamable-http", "url": "https://mcp.example.com/mcp", "callTimeoutSeconds": 601}`, "config.callTimeoutSeconds", "from 1 to 600"},
		{`{"transport": "stdio", "command": "x", "connectTimeoutSeconds": -1}`, "config.connectTimeoutSeconds", "from 1 to 600"},
		{`{"transport": "stdio", "command": "x", "callTimeoutSeconds": "fast"}`, "config.callTimeoutSeconds", "Must be a whole number"},
	}
	for _, tc := range cases {
		cfg, problems := sources.ParseConfig(sources.TypeMCP, json.RawMessage(tc.cfg), sources.Rules{AllowStdio: true})
		if tc.bad == "" {
			if len(problems) > 0 {
				t.Errorf("%s: %v", tc.cfg, problems)
			} else if m := cfg.(*sources.MCPConfig); m.ConnectTimeoutSeconds != 5 || m.CallTimeoutSeconds != 600 {
				t.Errorf("parsed %+v", m)
			}
			continue
		}
		if msg := problems[tc.bad]; !strings.Contains(msg, tc.want) {
			t.Errorf("%s: problems %v, want %s: …%s…", tc.cfg, problems, tc.bad, tc.want)
		}
	}
}

// When rules hide many of the best hits, search_tools still returns its
// limit of visible tools while the ranking has them, reading further
// pages of the index instead of stopping at the first.
func TestSearchFillsTheLimitPastHiddenTools(t *testing.T) {
	e := newEnv(t)
	spec := mustRead(t, testenv.PeerPath(t, "@readme/oas-examples/3.0/json/petstore.json"))
	for _, name := range []string{"Pets A", "Pets B", "Pets C"} {
		e.source(e.a, &e.a.ws, name, sources.TypeOpenAPI, openAPIConfig(spec, "http://127.0.0.1:9"))
	}
	// 40 of the 60 tools are denied, more than a first page's slack.
	for _, ns := range []string{"pets-a", "pets-b"} {
		e.rule(e.a, &e.a.ws, db.PolicyFields{SelectorType: "pattern", Selector: ns + ".**", Effect: "deny", Note: "hidden"})
	}
	c := e.a.caller()
	for _, limit := range []int{5, 20, 50} {
		hits, err := e.gw.Search(t.Context(), c, "pet", limit, "")
		if err != nil {
			t.Fatal(err)
		}
		want := min(limit, 20)
		if len(hits) != want {
			t.Errorf("limit %d: %d hits, want %d", limit, len(hits), want)
		}
		seen := map[string]bool{}
		for _, h := range hits {
			if !strings.HasPrefix(h.Path, "pets-c.") || seen[h.Path] {
				t.Errorf("limit %d: hit %s (hidden, or twice)", limit, h.Path)
			}
			seen[h.Path] = true
		}
	}
}
