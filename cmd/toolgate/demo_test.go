package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/credentials"
	"github.com/toolgate/toolgate/internal/search"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/tenancy"
	"github.com/toolgate/toolgate/internal/testenv"
)

// TestDemoSeedsAnAgentsKeyAndToolgatesOwnAPI starts the demo as `make run`
// does (TOOLGATE_DEMO=true and nothing about private networks): it prints an
// API key and the Claude Code command, keeps the key in the data directory,
// and gives the demo workspace toolgate's own REST API as a source whose
// discovery succeeds, with a bearer credential that authenticates as the
// demo owner. A second start creates nothing and prints the same key; with
// the key file lost, a third start makes a new key and revokes nothing.
func TestDemoSeedsAnAgentsKeyAndToolgatesOwnAPI(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	meiliURL, meiliKey := testenv.Meili(t)
	indexName := "tools_demo_" + strings.ToLower(rand.Text()[:12])
	t.Cleanup(func() {
		index := search.NewMeili(meiliURL, meiliKey, indexName)
		_ = index.DropIndex(context.Background())
		index.Close()
	})
	ringEntry := testKeys(t)
	dataDir := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr
	env := map[string]string{"DATABASE_URL": dbURL, "MEILI_URL": meiliURL, "MEILI_MASTER_KEY": meiliKey,
		"TOOLGATE_MEILI_INDEX": indexName, "TOOLGATE_SECRET_KEYS": ringEntry, "TOOLGATE_DATA_DIR": dataDir,
		"TOOLGATE_ADDR": addr, "TOOLGATE_DEMO": "true", "TOOLGATE_LOG_FORMAT": "json"}
	store, err := db.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)

	first := startServe(t, env)
	key := first.apiKey(t)
	if want := "  MCP URL:  " + base + "/mcp\n"; !strings.Contains(first.stdout.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, first.stdout.String())
	}
	if want := `claude mcp add --transport http toolgate ` + base + `/mcp --header "Authorization: Bearer ` + key + `"`; !strings.Contains(first.stdout.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, first.stdout.String())
	}
	keyFile := filepath.Join(dataDir, "demo-api-key")
	if b, err := os.ReadFile(keyFile); err != nil || strings.TrimSpace(string(b)) != key {
		t.Errorf("key file holds %q (%v), want the printed key", b, err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v (mode %v)", err, fi)
	}

	// The key is a live workspace API key of the demo owner in Acme/Default.
	place, err := (&tenancy.Service{Store: store}).DemoPlace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	grant, err := (&auth.Authenticator{Store: store}).APIKey(ctx, key)
	if err != nil || grant.Workspace.ID != place.Workspace.ID || grant.User.Email != tenancy.DemoEmail || grant.Key.Mode != tenancy.ModeSearch {
		t.Fatalf("printed key: %+v, %v", grant, err)
	}

	// The source "toolgate" reads toolgate's own openapi.json and discovers
	// every operation in it as a tool.
	src := demoSource(t, store, place)
	src = waitSource(t, store, place.Org.ID, src.ID, func(s db.Source) bool {
		return s.State == "ready" && s.Generation > 0 && s.IndexedGeneration == s.Generation || s.State == "failed"
	})
	if src.State != "ready" || src.ToolCount != openAPIOperations(t) || src.BaseURL != base {
		t.Fatalf("demo source: state %s (%s), %d tools (want %d), base URL %q (want %q)", src.State, src.Error, src.ToolCount,
			openAPIOperations(t), src.BaseURL, base)
	}
	if src.Warnings != nil && strings.Contains(string(src.Warnings), "servers") {
		t.Errorf("demo source warns about its servers: %s", src.Warnings)
	}

	// Its workspace credential is a bearer token that signs in as the demo
	// owner: the source's tools act as them.
	ring, err := secrets.ParseRing(ringEntry)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := (&credentials.Service{Store: store, Ring: ring}).Resolve(ctx, src, place.Workspace.ID, nil)
	if err != nil || resolved == nil || resolved.Credential.Scope != string(credentials.ScopeWorkspace) {
		t.Fatalf("demo credential: %+v, %v", resolved, err)
	}
	bearer := resolved.Auth.Headers["Authorization"]
	if !strings.HasPrefix(bearer, "Bearer "+auth.PersonalTokenPrefix) {
		t.Fatalf("demo credential sends Authorization %q, want a personal access token", strings.Split(bearer, "_")[0])
	}
	if me := getMe(t, base, bearer); me != tenancy.DemoEmail {
		t.Fatalf("the credential's token signs in as %q", me)
	}
	// An agent with the printed key calls toolgate's own API through /mcp:
	// the gateway reaches loopback and sends the credential.
	if text := demoCall(t, base+"/mcp", key, "toolgate.account.get_me"); !strings.Contains(text, tenancy.DemoEmail) {
		t.Fatalf("call_tool toolgate.account.get_me answered %s", text)
	}
	token := strings.TrimPrefix(bearer, "Bearer ")
	for _, secret := range []string{key, token} {
		if strings.Contains(first.stderr.String(), secret) {
			t.Fatal("a demo secret reached the log")
		}
	}
	before := demoCounts(t, store, place)
	refreshed := *src.LastRefreshedAt
	first.stop(t)

	// Second start: the same key, nothing new, and the source refreshed.
	second := startServe(t, env)
	if again := second.apiKey(t); again != key {
		t.Errorf("second start printed key %s…, want the first one %s…", again[:10], key[:10])
	}
	src = waitSource(t, store, place.Org.ID, src.ID, func(s db.Source) bool {
		return s.LastRefreshedAt != nil && s.LastRefreshedAt.After(refreshed) && s.State == "ready" || s.State == "failed"
	})
	if src.State != "ready" || src.ToolCount != openAPIOperations(t) {
		t.Errorf("after the second start: state %s (%s), %d tools", src.State, src.Error, src.ToolCount)
	}
	if after := demoCounts(t, store, place); after != before {
		t.Errorf("second start created something: %+v, before %+v", after, before)
	}
	second.stop(t)

	// The key file lost: a new key, the old one still works.
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	third := startServe(t, env)
	newKey := third.apiKey(t)
	third.stop(t)
	if newKey == key {
		t.Fatal("third start printed the lost key")
	}
	for _, k := range []string{key, newKey} {
		if _, err := (&auth.Authenticator{Store: store}).APIKey(ctx, k); err != nil {
			t.Errorf("key %s…: %v", k[:10], err)
		}
	}
	want := before
	want.APIKeys++
	if after := demoCounts(t, store, place); after != want {
		t.Errorf("third start: %+v, want %+v", after, want)
	}
}

// served is an in-process `toolgate serve`.
type served struct {
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	done           chan int
}

// startServe runs `toolgate serve` with env and waits for its banner.
func startServe(t *testing.T, env map[string]string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stdout: &syncBuffer{}, stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		s.done <- run(ctx, []string{"serve"}, strings.NewReader(""), s.stdout, s.stderr, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(s.stdout.String(), "is ready at") {
		select {
		case code := <-s.done:
			t.Fatalf("serve exited with %d\n%s\n%s", code, s.stdout.String(), s.stderr.String())
		case <-deadline:
			t.Fatalf("serve printed no banner\n%s\n%s", s.stdout.String(), s.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return s
}

var apiKeyLine = regexp.MustCompile(`(?m)^  API key:  (tgk_\S+)`)

// apiKey is the demo API key the banner printed.
func (s *served) apiKey(t *testing.T) string {
	t.Helper()
	m := apiKeyLine.FindStringSubmatch(s.stdout.String())
	if m == nil {
		t.Fatalf("banner lacks the API key:\n%s\nlog:\n%s", s.stdout.String(), s.stderr.String())
	}
	return m[1]
}

func (s *served) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code
		if code != 0 {
			t.Fatalf("serve exited with %d\n%s", code, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s")
	}
}

// demoSource finds the demo workspace's source "toolgate".
func demoSource(t *testing.T, store *db.Store, place tenancy.DemoPlace) db.Source {
	t.Helper()
	all, err := store.Sources(context.Background(), place.Org.ID, db.SourceFilter{WorkspaceID: &place.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == tenancy.DemoSourceName {
			return s
		}
	}
	t.Fatalf("no source %q among %d in the demo workspace", tenancy.DemoSourceName, len(all))
	return db.Source{}
}

// openAPIOperations counts the operations toolgate's openapi.json describes.
func openAPIOperations(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "handlers", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				n++
			}
		}
	}
	return n
}

// getMe answers the email /api/v1/me gives for an Authorization value.
func getMe(t *testing.T, base, authorization string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/me", nil)
	req.Header.Set("Authorization", authorization)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var me struct {
		Email string `json:"email"`
	}
	_ = json.NewDecoder(res.Body).Decode(&me)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/me: %d", res.StatusCode)
	}
	return me.Email
}

// demoCall calls a tool through /mcp's call_tool with an API key, as an
// agent does, and returns the answer's text.
func demoCall(t *testing.T, mcpURL, key, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearerTransport(key)}}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", mcpURL, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"path": path, "arguments": map[string]any{}}})
	if err != nil {
		t.Fatalf("call_tool %s: %v", path, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("call_tool %s: tool error %s", path, text.String())
	}
	return text.String()
}

// bearerTransport sends an API key with every request.
type bearerTransport string

func (k bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(k))
	return http.DefaultTransport.RoundTrip(r)
}

// counts is what the demo seeds, counted.
type counts struct{ Sources, Credentials, APIKeys, Tokens int }

func demoCounts(t *testing.T, store *db.Store, place tenancy.DemoPlace) counts {
	t.Helper()
	var c counts
	q := func(dst *int, query string, args ...any) {
		if err := store.DB().QueryRowContext(context.Background(), query, args...).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	q(&c.Sources, `SELECT count(*) FROM sources WHERE org_id = $1`, place.Org.ID)
	q(&c.Credentials, `SELECT count(*) FROM credentials WHERE org_id = $1`, place.Org.ID)
	q(&c.APIKeys, `SELECT count(*) FROM api_keys WHERE org_id = $1 AND revoked_at IS NULL`, place.Org.ID)
	q(&c.Tokens, `SELECT count(*) FROM personal_access_tokens WHERE user_id = $1 AND revoked_at IS NULL`, place.User.ID)
	return c
}
