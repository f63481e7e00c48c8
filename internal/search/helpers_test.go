package search_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/registry"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/mcp"
	"github.com/toolgate/toolgate/internal/sources/openapi"
	"github.com/toolgate/toolgate/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// openStore opens a fresh database for the test.
func openStore(t *testing.T) *db.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := db.Open(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}

// newMeili returns an index of the test's own on the shared Meilisearch,
// with its settings applied, deleted when the test ends.
func newMeili(t *testing.T) *search.Meili {
	t.Helper()
	url, key := testenv.Meili(t)
	return newMeiliAt(t, url, key)
}

func newMeiliAt(t *testing.T, url, key string) *search.Meili {
	t.Helper()
	m := search.NewMeili(url, key, "tools_"+randomHex(6))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.EnsureSettings(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.DropIndex(ctx); err != nil {
			t.Logf("drop index %s: %v", m.IndexName(), err)
		}
		m.Close()
	})
	return m
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSourceID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return fmt.Sprintf("src_%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// tenant is an organization with workspaces.
type tenant struct {
	org db.Organization
	ws  []db.Workspace
}

func newTenant(t *testing.T, store *db.Store, slug string, workspaces ...string) tenant {
	t.Helper()
	ctx := context.Background()
	var tn tenant
	err := store.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if tn.org, err = db.CreateOrganization(ctx, tx, slug, slug); err != nil {
			return err
		}
		for _, w := range workspaces {
			ws, err := db.CreateWorkspace(ctx, tx, tn.org.ID, w, w)
			if err != nil {
				return err
			}
			tn.ws = append(tn.ws, ws)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// addSource stores a source with the discovered tools (workspace nil for
// organization scope) and returns it with its index documents.
func addSource(t *testing.T, store *db.Store, orgID int64, workspace *db.Workspace, typ, name, slug string, disc *sources.Discovery, enabled bool) (db.Source, []search.Doc) {
	t.Helper()
	ctx := context.Background()
	in := db.NewSource{ID: newSourceID(), OrgID: orgID, Scope: "organization", Name: name, Slug: slug, Type: typ,
		ConfigVersion: sources.ConfigVersion, Config: json.RawMessage(`{}`), Enabled: enabled}
	if workspace != nil {
		in.WorkspaceID, in.Scope = &workspace.ID, "workspace"
	}
	src, err := store.CreateSource(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	copied := *disc
	copied.Tools = append([]sources.Tool(nil), disc.Tools...)
	result, _, err := registry.Stored(slug, &copied)
	if err != nil {
		t.Fatal(err)
	}
	docs := search.DocsFor(src, result.Tools)
	for i := range result.Tools {
		result.Tools[i].DocHash = docs[i].Hash()
	}
	if _, err := store.SaveDiscovery(ctx, orgID, src.ID, result); err != nil {
		t.Fatal(err)
	}
	if src, err = store.Source(ctx, orgID, src.ID); err != nil {
		t.Fatal(err)
	}
	return src, docs
}

// tools is a small discovery of named tools with descriptions.
func tools(nameDesc ...string) *sources.Discovery {
	d := &sources.Discovery{SpecHash: "sha256:test"}
	for i := 0; i+1 < len(nameDesc); i += 2 {
		d.Tools = append(d.Tools, sources.Tool{Name: nameDesc[i], Description: nameDesc[i+1],
			InputSchema:     json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"}}}`),
			DefaultApproval: sources.ApprovalAuto, Ref: json.RawMessage(fmt.Sprintf(`{"operation_id":%q}`, nameDesc[i]))})
	}
	return d
}

// githubDiscovery builds GitHub's REST description into tools (1,223).
func githubDiscovery(t testing.TB) *sources.Discovery {
	t.Helper()
	b, err := os.ReadFile(testenv.GitHubSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	d, err := openapi.Build(b, openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// peerDiscoveries discovers the stdio peers server-filesystem,
// server-memory and server-everything, keyed by namespace.
func peerDiscoveries(t *testing.T) map[string]*sources.Discovery {
	t.Helper()
	dir := t.TempDir()
	cfgs := map[string]*sources.MCPConfig{
		"filesystem": {Transport: sources.TransportStdio, Command: testenv.PeerBin(t, "mcp-server-filesystem"), Args: []string{dir}},
		"memory": {Transport: sources.TransportStdio, Command: testenv.PeerBin(t, "mcp-server-memory"),
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
		"everything": {Transport: sources.TransportStdio, Command: testenv.PeerBin(t, "mcp-server-everything"), Args: []string{"stdio"}},
	}
	out := map[string]*sources.Discovery{}
	for ns, cfg := range cfgs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		d, err := mcp.Discover(ctx, cfg, mcp.Options{})
		cancel()
		if err != nil {
			t.Fatalf("discover %s: %v", ns, err)
		}
		out[ns] = d
	}
	return out
}

func paths(res search.Results) []string {
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Path
	}
	return out
}
